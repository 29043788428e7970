/**
 * The loopback API server driven by the real @kubernetes/client-node 1.4: CRUD, selectors,
 * patch flavours, Status errors, watch (resume, 410, bookmarks), informers across a restart,
 * exec over WebSocket v5 (streams, exit codes, binary stdin), logs, pod lifecycle and faults.
 */
import { PassThrough, Readable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { POD_MARKER } from "./apiserver/index.js";
import { pidsTagged, shellPod, useApiServer } from "./support.js";

const fx = useApiServer({ bookmarkIntervalMs: 200 });
const NS = "default";

async function podPhase(name: string): Promise<string | undefined> {
  const pod = await fx.core.readNamespacedPod({ name, namespace: NS });
  return pod.status?.phase;
}

async function runningPod(name: string, script = "exec sleep 1000", extra: Record<string, unknown> = {}) {
  await fx.core.createNamespacedPod({ namespace: NS, body: shellPod(name, script, extra) });
  await expect.poll(() => podPhase(name), { timeout: 10_000 }).toBe("Running");
  return fx.core.readNamespacedPod({ name, namespace: NS });
}

function apiCode(p: Promise<unknown>): Promise<number | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (e as { code?: number }).code,
  );
}

/** Runs `argv` through client-node's Exec; resolves with the collected output and exit status. */
async function exec(pod: string, argv: string[], stdin?: Buffer, tty = false) {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  const errChunks: Buffer[] = [];
  out.on("data", (d: Buffer) => chunks.push(d));
  err.on("data", (d: Buffer) => errChunks.push(d));
  const status = await new Promise<k8s.V1Status>((resolve, reject) => {
    new k8s.Exec(fx.kc)
      .exec(NS, pod, "main", argv, out, err, stdin ? Readable.from([stdin]) : null, tty, resolve)
      .catch(reject);
  });
  const code =
    status.status === "Success"
      ? 0
      : Number(status.details?.causes?.find((c) => c.reason === "ExitCode")?.message);
  return { status, code, stdout: Buffer.concat(chunks), stderr: Buffer.concat(errChunks).toString("utf8") };
}

describe("REST through client-node", () => {
  it("creates, reads, lists with selectors, and reports Status errors with the right codes", async () => {
    const pod = await fx.core.createNamespacedPod({
      namespace: NS,
      body: shellPod("crud-a", "exec sleep 1000"),
    });
    expect(pod.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(pod.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(pod.spec?.restartPolicy).toBe("Always");
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        ...shellPod("crud-b", "exec sleep 1000"),
        metadata: { name: "crud-b", labels: { app: "other", tier: "x" } },
      },
    });
    const byLabel = await fx.core.listNamespacedPod({ namespace: NS, labelSelector: "app=loopback-test" });
    expect(byLabel.items.map((p) => p.metadata?.name)).toContain("crud-a");
    expect(byLabel.items.map((p) => p.metadata?.name)).not.toContain("crud-b");
    const setBased = await fx.core.listNamespacedPod({
      namespace: NS,
      labelSelector: "app in (other),tier,!missing",
    });
    expect(setBased.items.map((p) => p.metadata?.name)).toEqual(["crud-b"]);
    const byField = await fx.core.listPodForAllNamespaces({ fieldSelector: "metadata.name=crud-b" });
    expect(byField.items.map((p) => p.metadata?.name)).toEqual(["crud-b"]);
    expect(Number(byField.metadata?.resourceVersion)).toBeGreaterThan(0);

    expect(await apiCode(fx.core.readNamespacedPod({ name: "nope", namespace: NS }))).toBe(404);
    const dup = await fx.core
      .createNamespacedPod({ namespace: NS, body: shellPod("crud-a", "true") })
      .catch((e) => e);
    expect(dup.code).toBe(409);
    expect(JSON.parse(dup.body)).toMatchObject({
      kind: "Status",
      reason: "AlreadyExists",
      details: { name: "crud-a", kind: "pods" },
    });
    const bad = await fx.core
      .createNamespacedPod({
        namespace: NS,
        body: { metadata: { name: "Bad_Name" }, spec: { containers: [{ name: "main", image: "" }] } },
      })
      .catch((e) => e);
    expect(bad.code).toBe(422);
    expect(JSON.parse(bad.body)).toMatchObject({ reason: "Invalid", details: { kind: "Pod" } });
    expect(JSON.parse(bad.body).details.causes.map((c: { field: string }) => c.field)).toEqual(
      expect.arrayContaining(["metadata.name", "spec.containers[0].image"]),
    );
    const badField = await fx.core
      .listNamespacedPod({ namespace: NS, fieldSelector: "spec.image=x" })
      .catch((e) => e);
    expect(badField.code).toBe(400);
    expect(
      await apiCode(fx.core.createNamespacedPod({ namespace: "no-such-ns", body: shellPod("x", "true") })),
    ).toBe(404);
  });

  it("patches with JSON patch (client default), merge and strategic merge; rejects spec changes and stale updates", async () => {
    await fx.core.createNamespacedPod({ namespace: NS, body: shellPod("patch-a", "exec sleep 1000") });
    const jp = await fx.core.patchNamespacedPod({
      name: "patch-a",
      namespace: NS,
      body: [{ op: "add", path: "/metadata/annotations", value: { "gc/meta": "one" } }],
    });
    expect(jp.metadata?.annotations?.["gc/meta"]).toBe("one");
    // client-node sends an object body as JSON Patch too: a real server answers 400
    expect(
      await apiCode(fx.core.patchNamespacedPod({ name: "patch-a", namespace: NS, body: { metadata: {} } })),
    ).toBe(400);
    const merged = await fx.core.patchNamespacedPod(
      {
        name: "patch-a",
        namespace: NS,
        body: { metadata: { annotations: { "gc/meta": null, "gc/two": "2" } } },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    expect(merged.metadata?.annotations).toEqual({ "gc/two": "2" });
    const smp = await fx.core.patchNamespacedPod(
      {
        name: "patch-a",
        namespace: NS,
        body: { spec: { containers: [{ name: "main", image: "busybox:1.37" }] } },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
    );
    expect(smp.spec?.containers.map((c) => [c.name, c.image, c.command?.[0]])).toEqual([
      ["main", "busybox:1.37", "sh"],
    ]);
    const forbidden = await fx.core
      .patchNamespacedPod(
        { name: "patch-a", namespace: NS, body: { spec: { restartPolicy: "Never" } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      )
      .catch((e) => e);
    expect(forbidden.code).toBe(422);
    const stale = { ...smp, metadata: { ...smp.metadata, resourceVersion: "1", labels: { x: "y" } } };
    expect(await apiCode(fx.core.replaceNamespacedPod({ name: "patch-a", namespace: NS, body: stale }))).toBe(
      409,
    );
  });

  it("stores Secrets (stringData folded into data) and resolves secretKeyRef env in the container", async () => {
    await fx.core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: "sec-a" }, stringData: { token: "s3cr3t value" } },
    });
    const s = await fx.core.readNamespacedSecret({ name: "sec-a", namespace: NS });
    expect(s.type).toBe("Opaque");
    expect(Buffer.from(s.data?.token ?? "", "base64").toString()).toBe("s3cr3t value");
    await runningPod("env-a", 'echo "token=$TOKEN plain=$PLAIN"; exec sleep 1000', {
      env: [
        { name: "TOKEN", valueFrom: { secretKeyRef: { name: "sec-a", key: "token" } } },
        { name: "PLAIN", value: "p-$(TOKEN)" },
      ],
      workingDir: "/work/dir",
    });
    await expect
      .poll(() => fx.core.readNamespacedPodLog({ name: "env-a", namespace: NS }), { timeout: 5_000 })
      .toBe("token=s3cr3t value plain=p-s3cr3t value\n");
    const pwd = await exec("env-a", ["pwd"]);
    expect(pwd.stdout.toString().trim()).toMatch(/\/fs\/work\/dir$/);
  });

  it("reports CreateContainerConfigError for a missing Secret", async () => {
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: shellPod("env-missing", "exec sleep 1000", {
        env: [{ name: "T", valueFrom: { secretKeyRef: { name: "absent", key: "k" } } }],
      }),
    });
    await expect
      .poll(
        async () =>
          (await fx.core.readNamespacedPod({ name: "env-missing", namespace: NS })).status
            ?.containerStatuses?.[0]?.state?.waiting?.reason,
        { timeout: 5_000 },
      )
      .toBe("CreateContainerConfigError");
  });
});

describe("pod lifecycle", () => {
  it("moves Pending → Running with Ready conditions, then Succeeded/Failed under restartPolicy Never", async () => {
    const seen: string[] = [];
    const watch = new k8s.Watch(fx.kc);
    const req = await watch.watch(
      `/api/v1/namespaces/${NS}/pods`,
      { fieldSelector: "metadata.name=life-a" },
      (_type, obj: k8s.V1Pod) => {
        const s = obj.status;
        const waiting = s?.containerStatuses?.[0]?.state?.waiting?.reason;
        const label = `${s?.phase}${waiting ? `/${waiting}` : ""}`;
        if (seen[seen.length - 1] !== label) seen.push(label);
      },
      () => {},
    );
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        ...shellPod("life-a", "read x; exit 0"),
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox:1.36", command: ["sh", "-c", "exec sleep 0.3"] }],
        },
      },
    });
    await expect.poll(() => podPhase("life-a"), { timeout: 10_000 }).toBe("Succeeded");
    req.abort();
    expect(seen[0]).toBe("Pending");
    expect(seen).toContain("Pending/ContainerCreating");
    expect(seen).toContain("Running");
    expect(seen[seen.length - 1]).toBe("Succeeded");
    const done = await fx.core.readNamespacedPod({ name: "life-a", namespace: NS });
    expect(done.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: "Completed",
    });
    expect(done.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "PodCompleted",
    });

    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "life-b" },
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox:1.36", command: ["sh", "-c", "exit 7"] }],
        },
      },
    });
    await expect.poll(() => podPhase("life-b"), { timeout: 10_000 }).toBe("Failed");
    const failed = await fx.core.readNamespacedPod({ name: "life-b", namespace: NS });
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 7,
      reason: "Error",
    });
  });

  it("restarts a crashing container with CrashLoopBackOff and keeps the previous log", async () => {
    await fx.core.createNamespacedPod({ namespace: NS, body: shellPod("crash-a", "echo run; exit 1") });
    await expect
      .poll(
        async () =>
          (await fx.core.readNamespacedPod({ name: "crash-a", namespace: NS })).status?.containerStatuses?.[0]
            ?.restartCount ?? 0,
        { timeout: 10_000 },
      )
      .toBeGreaterThanOrEqual(1);
    await expect
      .poll(
        async () =>
          (await fx.core.readNamespacedPod({ name: "crash-a", namespace: NS })).status?.containerStatuses?.[0]
            ?.state?.waiting?.reason,
        { timeout: 10_000 },
      )
      .toBe("CrashLoopBackOff");
    await expect
      .poll(
        () =>
          fx.core.readNamespacedPodLog({ name: "crash-a", namespace: NS, previous: true }).catch(() => ""),
        { timeout: 10_000 },
      )
      .toBe("run\n");
  });

  it("deletes gracefully: deletionTimestamp first, SIGTERM to the tree, then DELETED; kills daemonized children", async () => {
    const pod = await runningPod("del-a", "trap 'exit 0' TERM; (setsid sleep 1000 &); sleep 1000 & wait");
    const uid = pod.metadata!.uid!;
    await expect.poll(() => pidsTagged(POD_MARKER, uid).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(3);
    const deleted = await fx.core.deleteNamespacedPod({
      name: "del-a",
      namespace: NS,
      gracePeriodSeconds: 5,
    });
    expect(deleted.metadata?.deletionTimestamp).toBeInstanceOf(Date);
    await expect
      .poll(() => apiCode(fx.core.readNamespacedPod({ name: "del-a", namespace: NS })), { timeout: 10_000 })
      .toBe(404);
    await expect.poll(() => pidsTagged(POD_MARKER, uid), { timeout: 5_000 }).toEqual([]);
  });
});

describe("watch", () => {
  it("resumes from a resourceVersion, sends bookmarks, and answers an expired one with a 410 ERROR event", async () => {
    const list = await fx.core.listNamespacedPod({ namespace: NS });
    const rv = list.metadata!.resourceVersion!;
    const events: string[] = [];
    const watch = new k8s.Watch(fx.kc);
    const req = await watch.watch(
      `/api/v1/namespaces/${NS}/pods`,
      { resourceVersion: rv, allowWatchBookmarks: true, labelSelector: "app=watch-test" },
      (type, obj: k8s.KubernetesObject) => events.push(`${type}:${obj.metadata?.name ?? ""}`),
      () => {},
    );
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "watch-a", labels: { app: "watch-test" } },
        spec: { containers: [{ name: "main", image: "busybox:1.36" }] },
      },
    });
    await expect.poll(() => events.includes("ADDED:watch-a"), { timeout: 5_000 }).toBe(true);
    await expect.poll(() => events.some((e) => e.startsWith("BOOKMARK")), { timeout: 5_000 }).toBe(true);
    // leaving the selector reads as DELETED to this watcher
    await fx.core.patchNamespacedPod({
      name: "watch-a",
      namespace: NS,
      body: [{ op: "replace", path: "/metadata/labels/app", value: "moved" }],
    });
    await expect.poll(() => events.includes("DELETED:watch-a"), { timeout: 5_000 }).toBe(true);
    req.abort();

    fx.server.store.compact();
    const errors: unknown[] = [];
    let done = false;
    await new k8s.Watch(fx.kc).watch(
      `/api/v1/namespaces/${NS}/pods`,
      { resourceVersion: rv },
      (type, obj: { code?: number; reason?: string }) => errors.push([type, obj.code, obj.reason]),
      () => {
        done = true;
      },
    );
    await expect.poll(() => done, { timeout: 5_000 }).toBe(true);
    expect(errors).toEqual([["ERROR", 410, "Expired"]]);
  });

  it("keeps an informer in sync across an API server restart (re-list after the watch breaks)", async () => {
    const path = `/api/v1/namespaces/${NS}/pods`;
    const informer = k8s.makeInformer(
      fx.kc,
      path,
      () => fx.core.listNamespacedPod({ namespace: NS, labelSelector: "app=inf" }),
      "app=inf",
    );
    informer.on("error", () => {
      setTimeout(() => void informer.start(), 100);
    });
    await informer.start();
    const body = (name: string) => ({
      metadata: { name, labels: { app: "inf" } },
      spec: { containers: [{ name: "main", image: "busybox:1.36" }] },
    });
    await fx.core.createNamespacedPod({ namespace: NS, body: body("inf-a") });
    await expect
      .poll(() => informer.list(NS).map((p) => p.metadata?.name), { timeout: 5_000 })
      .toEqual(["inf-a"]);
    await fx.server.restart({ keepState: true });
    await fx.core.createNamespacedPod({ namespace: NS, body: body("inf-b") });
    await expect
      .poll(
        () =>
          informer
            .list(NS)
            .map((p) => p.metadata?.name)
            .sort(),
        { timeout: 10_000 },
      )
      .toEqual(["inf-a", "inf-b"]);
    await informer.stop();
  });
});

describe("exec over WebSocket (v5)", () => {
  it("streams stdout and stderr apart, reports exit codes, and passes binary stdin through (tar works)", async () => {
    await runningPod("exec-a");
    const ok = await exec("exec-a", ["sh", "-c", "echo out; echo err >&2"]);
    expect(ok).toMatchObject({ code: 0, stderr: "err\n" });
    expect(ok.stdout.toString()).toBe("out\n");
    const fail = await exec("exec-a", ["sh", "-c", "exit 3"]);
    expect(fail.code).toBe(3);
    expect(fail.status.reason).toBe("NonZeroExitCode");
    const binary = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
    const echoed = await exec("exec-a", ["cat"], binary);
    expect(echoed.stdout.equals(binary)).toBe(true);
    const tarred = await exec("exec-a", [
      "sh",
      "-c",
      "mkdir -p stage && cd stage && printf 'a\\nb' > f.txt && tar -cf - f.txt",
    ]);
    const untar = await exec(
      "exec-a",
      ["sh", "-c", "mkdir -p copy && tar -xf - -C copy && cat copy/f.txt"],
      tarred.stdout,
    );
    expect(untar).toMatchObject({ code: 0 });
    expect(untar.stdout.toString()).toBe("a\nb");
    const missing = await exec("exec-a", ["no-such-binary-xyz"]);
    expect(missing.status).toMatchObject({ status: "Failure", reason: "InternalError" });
  });

  it("runs a TTY exec on a PTY (stderr merged into stdout)", async () => {
    await runningPod("exec-tty");
    const r = await exec(
      "exec-tty",
      ["sh", "-c", "tty >/dev/null && echo is-a-tty; echo e >&2"],
      undefined,
      true,
    );
    expect(r.code).toBe(0);
    expect(r.stdout.toString()).toContain("is-a-tty\r\n");
    expect(r.stdout.toString()).toContain("e\r\n");
  });

  it("refuses exec into a pod that is not running", async () => {
    fx.server.faults.stickPending("exec-pending");
    await fx.core.createNamespacedPod({ namespace: NS, body: shellPod("exec-pending", "exec sleep 1000") });
    await expect(exec("exec-pending", ["true"])).rejects.toBeDefined();
    expect(
      fx.server.requestLog.entries
        .filter((r) => r.name === "exec-pending" && r.verb === "connect")
        .map((r) => r.status),
    ).toEqual([400]);
  });

  it("runs tmux inside a pod with a private socket directory", async () => {
    await runningPod("tmux-a");
    const start = await exec("tmux-a", [
      "tmux",
      "new-session",
      "-d",
      "-s",
      "agent",
      "-x",
      "80",
      "-y",
      "24",
      "sh",
    ]);
    expect(start.code).toBe(0);
    const ls = await exec("tmux-a", ["tmux", "list-sessions", "-F", "#{session_name}"]);
    expect(ls.stdout.toString()).toBe("agent\n");
    await exec("tmux-a", ["tmux", "send-keys", "-t", "agent", "echo hi-from-pane", "Enter"]);
    await expect
      .poll(
        async () => (await exec("tmux-a", ["tmux", "capture-pane", "-p", "-t", "agent"])).stdout.toString(),
        { timeout: 5_000 },
      )
      .toContain("hi-from-pane");
  });
});

describe("faults", () => {
  it("answers bursts of 500 and 429 with Status objects (and Retry-After), then recovers", async () => {
    fx.server.faults.failNext(2, { code: 500, method: "GET" });
    expect(await apiCode(fx.core.listNamespacedPod({ namespace: NS }))).toBe(500);
    expect(await apiCode(fx.core.listNamespacedPod({ namespace: NS }))).toBe(500);
    expect(await apiCode(fx.core.listNamespacedPod({ namespace: NS }))).toBeUndefined();
    fx.server.faults.failNext(1, { code: 429, retryAfterSeconds: 2 });
    const res = await fetch(`${fx.server.url}/api/v1/namespaces/${NS}/pods`);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await res.json()).toMatchObject({ kind: "Status", reason: "TooManyRequests", code: 429 });
  });

  it("keeps a pod Unschedulable, and an image that cannot be pulled in ImagePullBackOff", async () => {
    fx.server.faults.stickPending(/^stuck-/);
    fx.server.faults.failImagePull("registry.invalid/nope:1");
    await fx.core.createNamespacedPod({ namespace: NS, body: shellPod("stuck-a", "exec sleep 1000") });
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "pull-a" },
        spec: { containers: [{ name: "main", image: "registry.invalid/nope:1" }] },
      },
    });
    await expect
      .poll(
        async () =>
          (await fx.core.readNamespacedPod({ name: "stuck-a", namespace: NS })).status?.conditions?.[0],
        { timeout: 5_000 },
      )
      .toMatchObject({ type: "PodScheduled", status: "False", reason: "Unschedulable" });
    await expect
      .poll(
        async () =>
          (await fx.core.readNamespacedPod({ name: "pull-a", namespace: NS })).status?.containerStatuses?.[0]
            ?.state?.waiting?.reason,
        { timeout: 5_000 },
      )
      .toBe("ImagePullBackOff");
    expect(await podPhase("pull-a")).toBe("Pending");
  });

  it("counts requests, and a restart that drops state kills the pods' processes", async () => {
    fx.server.requestLog.clear();
    await fx.core.listNamespacedPod({ namespace: NS, labelSelector: "app=x" });
    await fx.core.readNamespacedPod({ name: "exec-a", namespace: NS });
    expect(fx.server.requestLog.count({ verb: "list", resource: "pods" })).toBe(1);
    expect(fx.server.requestLog.count({ verb: "get", resource: "pods", name: "exec-a" })).toBe(1);
    const uid = (await fx.core.readNamespacedPod({ name: "exec-a", namespace: NS })).metadata!.uid!;
    expect(pidsTagged(POD_MARKER, uid).length).toBeGreaterThan(0);
    await fx.server.restart({ keepState: false });
    expect(await apiCode(fx.core.readNamespacedPod({ name: "exec-a", namespace: NS }))).toBe(404);
    expect(pidsTagged(POD_MARKER, uid)).toEqual([]);
    expect((await fx.core.listNamespace()).items.map((n) => n.metadata?.name)).toContain("default");
  });
});
