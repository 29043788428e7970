/**
 * Where gc depends on kube-apiserver behaviour, the loopback server behaves the same, proven
 * with the real kubectl and the official Python client (`python3-kubernetes`): pod-spec
 * immutability, the uid guard, LIST in a missing namespace, the Python client's query flags
 * and text-frame stdin, client resets during an exec upgrade, PodSecurity `restricted`
 * admission, ownerReferences with garbage collection, terminating pods.
 */
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { KUBECTL, kubectl, pidsTagged, python, useApiServer } from "./support.js";

const fx = useApiServer({ namespaces: ["fid", "locked"], bookmarkIntervalMs: 300 });

const PY_HEAD = `
import json, sys
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
config.load_kube_config()
v1 = client.CoreV1Api()
`;

const sleeper = (name: string, extra = "") => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: fid}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "exec sleep 1000"]${extra}
`;

async function readyPod(name: string, manifest = sleeper(name)): Promise<string> {
  expect((await kubectl(fx.server, ["apply", "-f", "-"], manifest)).code).toBe(0);
  const w = await kubectl(fx.server, [
    "wait",
    "-n",
    "fid",
    "--for=condition=Ready",
    `pod/${name}`,
    "--timeout=20s",
  ]);
  expect(w.code).toBe(0);
  return fx.server.store.get("pods", "fid", name)!.metadata.uid!;
}

describe("loopback server fidelity (kubectl and the Python client)", () => {
  it("refuses a change of the pod spec (command) with 422, from kubectl and Python", async () => {
    await readyPod("imm");
    const kc = await kubectl(fx.server, [
      "patch",
      "-n",
      "fid",
      "pod/imm",
      "-p",
      '{"spec":{"containers":[{"name":"main","command":["sh","-c","exec sleep 5"]}]}}',
    ]);
    expect(kc.code).not.toBe(0);
    expect(kc.stderr).toContain('Pod "imm" is invalid: spec: Forbidden: pod updates may not change fields');
    const py = await python(
      fx.server,
      `${PY_HEAD}
try:
    v1.patch_namespaced_pod("imm", "fid", {"spec": {"containers": [{"name": "main", "command": ["true"]}]}})
    print(json.dumps({"status": 200}))
except ApiException as e:
    print(json.dumps({"status": e.status, "reason": json.loads(e.body)["reason"]}))
`,
    );
    expect(py).toEqual({ status: 422, reason: "Invalid" });
    const spec = fx.server.store.get("pods", "fid", "imm")!.spec as { containers: { command: string[] }[] };
    expect(spec.containers[0]!.command).toEqual(["sh", "-c", "exec sleep 1000"]);
    // an allowed change (the image) still goes through
    const img = await kubectl(fx.server, ["set", "image", "-n", "fid", "pod/imm", "main=busybox:1.37"]);
    expect(img.code).toBe(0);
  });

  it("answers a merge patch carrying another metadata.uid with 422 and changes nothing", async () => {
    const uid = await readyPod("uidg");
    const kc = await kubectl(fx.server, [
      "patch",
      "-n",
      "fid",
      "pod/uidg",
      "--type=merge",
      "-p",
      '{"metadata":{"uid":"00000000-0000-0000-0000-000000000000","labels":{"x":"y"}}}',
    ]);
    expect(kc.code).not.toBe(0);
    expect(kc.stderr).toContain(
      'Pod "uidg" is invalid: metadata.uid: Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable',
    );
    const py = await python(
      fx.server,
      `${PY_HEAD}
try:
    v1.patch_namespaced_pod("uidg", "fid", {"metadata": {"uid": "other", "labels": {"x": "y"}}})
    print(json.dumps({"status": 200}))
except ApiException as e:
    print(json.dumps({"status": e.status}))
`,
    );
    expect(py).toEqual({ status: 422 });
    const pod = fx.server.store.get("pods", "fid", "uidg")!;
    expect(pod.metadata.uid).toBe(uid);
    expect(pod.metadata.labels?.x).toBeUndefined();
    // the same uid is a working guard
    const ok = await kubectl(fx.server, [
      "patch",
      "-n",
      "fid",
      "pod/uidg",
      "--type=merge",
      "-p",
      JSON.stringify({ metadata: { uid, labels: { x: "y" } } }),
    ]);
    expect(ok.code).toBe(0);
  });

  it("lists a missing namespace as 200 and empty", async () => {
    const kc = await kubectl(fx.server, ["get", "pods", "-n", "no-such-ns", "-o", "json"]);
    expect(kc.code).toBe(0);
    expect(JSON.parse(kc.stdout).items).toEqual([]);
    const py = await python(
      fx.server,
      `${PY_HEAD}
print(json.dumps(len(v1.list_namespaced_pod("no-such-ns").items)))
`,
    );
    expect(py).toBe(0);
  });

  it("serves the Python client's watch=True and exec with stdout=True and text-frame stdin", async () => {
    await readyPod("pyx");
    const out = (await python(
      fx.server,
      `${PY_HEAD}
w = watch.Watch()
seen = []
for ev in w.stream(v1.list_namespaced_pod, "fid", field_selector="metadata.name=pyx", timeout_seconds=5):
    seen.append([ev["type"], ev["object"].metadata.name])
    w.stop()
s = stream(v1.connect_get_namespaced_pod_exec, "pyx", "fid", command=["head", "-n", "1"],
           stdin=True, stdout=True, stderr=True, tty=False, _preload_content=False)
s.write_stdin("hello from python\\n")
got = ""
while s.is_open():
    s.update(timeout=5)
    if s.peek_stdout():
        got += s.read_stdout()
s.close()
print(json.dumps({"watch": seen, "exec": got, "code": s.returncode}))
`,
    )) as { watch: string[][]; exec: string; code: number };
    expect(out.watch).toEqual([["ADDED", "pyx"]]);
    expect(out.exec).toBe("hello from python\n");
    expect(out.code).toBe(0);
    const watches = fx.server.requestLog.entries.filter(
      (r) => r.verb === "watch" && r.query.includes("watch=True"),
    );
    expect(watches.length).toBeGreaterThan(0);
  });

  it("serves watch as kube-apiserver does to kubectl get -w: the listed pods, then their changes as they come", async () => {
    const child = spawn(KUBECTL, ["get", "pods", "-n", "fid", "-l", "app=kw", "-w", "--no-headers"], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...fx.server.kubectlEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    const exited = new Promise<void>((r) => child.on("close", () => r()));
    const kw = () =>
      fx.server.requestLog.entries.filter(
        (r) => r.verb === "watch" && new URLSearchParams(r.query).get("labelSelector") === "app=kw",
      );
    try {
      await expect.poll(() => kw().length, { timeout: 15_000 }).toBeGreaterThan(0);
      await readyPod(
        "kw1",
        sleeper("kw1").replace("metadata: {name: kw1,", "metadata: {labels: {app: kw}, name: kw1,"),
      );
      await expect.poll(() => out, { timeout: 15_000 }).toMatch(/^kw1\s+1\/1\s+Running/m);
      expect((await kubectl(fx.server, ["delete", "pod", "-n", "fid", "kw1", "--grace-period=1"])).code).toBe(
        0,
      );
      await expect.poll(() => out, { timeout: 15_000 }).toMatch(/^kw1\s+\S+\s+Terminating/m);
      const w = kw()[0]!;
      expect(w.userAgent).toMatch(/^kubectl/);
      const q = new URLSearchParams(w.query);
      expect(Number(q.get("resourceVersion"))).toBeGreaterThan(0);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("serves the Python client's watch.Watch().stream: history from a resourceVersion, bookmarks, 410 Expired as an ApiException", async () => {
    const listed = (await python(
      fx.server,
      `${PY_HEAD}
rv = v1.list_namespaced_pod("fid", label_selector="app=pyw").metadata.resource_version
v1.create_namespaced_pod("fid", {"metadata": {"name": "pyw1", "labels": {"app": "pyw"}},
    "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "1000"]}]}})
seen = []
for ev in watch.Watch().stream(v1.list_namespaced_pod, "fid", label_selector="app=pyw", resource_version=rv,
                               allow_watch_bookmarks=True, timeout_seconds=2):
    o = ev["raw_object"]
    seen.append([ev["type"], o["metadata"].get("name", ""), o["metadata"]["resourceVersion"]])
print(json.dumps({"rv": rv, "seen": seen}))
`,
    )) as { rv: string; seen: [string, string, string][] };
    expect(listed.seen[0]?.slice(0, 2)).toEqual(["ADDED", "pyw1"]);
    expect(listed.seen.some(([t]) => t === "BOOKMARK")).toBe(true);
    for (const [, , rv] of listed.seen) expect(Number(rv)).toBeGreaterThan(Number(listed.rv));
    const bookmarked = fx.server.requestLog.entries.filter(
      (r) => r.verb === "watch" && r.query.includes("allowWatchBookmarks=True"),
    );
    expect(bookmarked.length).toBeGreaterThan(0);
    // The history before now is gone: a watch from the old version gets ERROR 410 Expired.
    fx.server.store.compact();
    const expired = await python(
      fx.server,
      `${PY_HEAD}
try:
    for ev in watch.Watch().stream(v1.list_namespaced_pod, "fid", label_selector="app=pyw",
                                   resource_version=sys.argv[1], timeout_seconds=2):
        pass
    print(json.dumps({"status": 200}))
except ApiException as e:
    print(json.dumps({"status": e.status, "reason": e.reason}))
`,
      [listed.rv],
    );
    expect(expired).toMatchObject({
      status: 410,
      reason: expect.stringMatching(/^Expired: too old resource version/),
    });
  });

  it("survives a client resetting its connection during and after an exec upgrade; no process is orphaned", async () => {
    const uid = await readyPod("rst");
    const upgrade = (pod: string) =>
      [
        `GET /api/v1/namespaces/fid/pods/${pod}/exec?command=sleep&command=1000&stdout=true HTTP/1.1`,
        "Host: 127.0.0.1",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol: v4.channel.k8s.io",
        "",
        "",
      ].join("\r\n");
    const reset = (pod: string, waitFor101: boolean) =>
      new Promise<void>((resolve, reject) => {
        const s = connect(fx.server.port, "127.0.0.1", () => {
          s.write(upgrade(pod));
          if (!waitFor101) {
            s.resetAndDestroy();
            resolve();
          }
        });
        s.on("data", (d: Buffer) => {
          if (waitFor101 && d.toString("latin1").startsWith("HTTP/1.1 101")) {
            s.resetAndDestroy();
            resolve();
          }
        });
        s.on("error", reject);
      });
    // the resets land while the server is still deciding: an upgrade it accepts, one it refuses
    fx.server.faults.latencyMs = 100;
    await reset("rst", false);
    await reset("no-such-pod", false);
    const refused = () =>
      fx.server.requestLog.entries.filter((r) => r.name === "no-such-pod" && r.status === 404);
    await expect.poll(() => refused().length).toBe(1);
    fx.server.faults.latencyMs = 0;
    await reset("rst", true);
    await expect.poll(() => pidsTagged("GC_LOOPBACK_POD", uid).length).toBeGreaterThan(1);
    const alive = await kubectl(fx.server, ["get", "pod", "-n", "fid", "rst", "-o", "name"]);
    expect(alive).toMatchObject({ code: 0, stdout: "pod/rst\n" });
    const del = await kubectl(fx.server, ["delete", "pod", "-n", "fid", "rst", "--grace-period=1"]);
    expect(del.code).toBe(0);
    await expect.poll(() => pidsTagged("GC_LOOPBACK_POD", uid), { timeout: 10_000 }).toEqual([]);
  });

  it("enforces PodSecurity restricted on a labelled namespace: 403 naming the violated fields; compliant pods admitted", async () => {
    const label = await kubectl(fx.server, [
      "label",
      "ns",
      "locked",
      "pod-security.kubernetes.io/enforce=restricted",
    ]);
    expect(label.code).toBe(0);
    const bad = await kubectl(
      fx.server,
      ["apply", "-f", "-"],
      sleeper("loose").replace("namespace: fid", "namespace: locked"),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      'pods "loose" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "main" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "main" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
    const py = (await python(
      fx.server,
      `${PY_HEAD}
pod = {"metadata": {"name": "loose-py"}, "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
       "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}},
       }], "securityContext": {"runAsNonRoot": True, "runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}}}}
try:
    v1.create_namespaced_pod("locked", pod)
    print(json.dumps({"status": 201}))
except ApiException as e:
    b = json.loads(e.body)
    print(json.dumps({"status": e.status, "reason": b["reason"], "message": b["message"]}))
`,
    )) as { status: number; reason: string; message: string };
    expect(py).toMatchObject({ status: 403, reason: "Forbidden" });
    expect(py.message).toBe(
      'pods "loose-py" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container "main" must not include "SYS_ADMIN" in securityContext.capabilities.add), runAsUser=0 (pod must not set runAsUser=0)',
    );
    const good = await kubectl(
      fx.server,
      ["apply", "-f", "-"],
      `apiVersion: v1
kind: Pod
metadata: {name: strict, namespace: locked}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "exec sleep 1000"]
    volumeMounts: [{name: work, mountPath: /workspace}]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, readOnlyRootFilesystem: true}
`,
    );
    expect(good).toMatchObject({ code: 0, stdout: "pod/strict created\n" });
    expect(fx.server.store.get("pods", "locked", "loose")).toBeUndefined();
  });

  it("garbage-collects dependents when their owner goes (and orphans them on request)", async () => {
    const mk = await kubectl(
      fx.server,
      ["create", "-f", "-"],
      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner","namespace":"fid"}}`,
    );
    expect(mk.code).toBe(0);
    const ownerUid = fx.server.store.get("configmaps", "fid", "owner")!.metadata.uid!;
    const ref = `ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: ${ownerUid}}]`;
    const deps = `apiVersion: v1
kind: Secret
metadata: {name: dep-secret, namespace: fid, ${ref}}
stringData: {k: v}
---
${sleeper("dep-pod").replace("namespace: fid}", `namespace: fid, ${ref}}`)}`;
    expect((await kubectl(fx.server, ["apply", "-f", "-"], deps)).code).toBe(0);
    const podUid = fx.server.store.get("pods", "fid", "dep-pod")!.metadata.uid!;
    // a dependent whose owner never existed is collected too
    const dangling = await python(
      fx.server,
      `${PY_HEAD}
v1.create_namespaced_config_map("fid", {"metadata": {"name": "dangling", "ownerReferences": [
    {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "11111111-2222-3333-4444-555555555555"}]}})
print(json.dumps(True))
`,
    );
    expect(dangling).toBe(true);
    await expect.poll(() => fx.server.store.get("configmaps", "fid", "dangling")).toBeUndefined();

    const del = await python(
      fx.server,
      `${PY_HEAD}
v1.delete_namespaced_config_map("owner", "fid")
print(json.dumps(True))
`,
    );
    expect(del).toBe(true);
    await expect.poll(() => fx.server.store.get("secrets", "fid", "dep-secret")).toBeUndefined();
    await expect
      .poll(() => fx.server.store.get("pods", "fid", "dep-pod"), { timeout: 40_000 })
      .toBeUndefined();
    expect(pidsTagged("GC_LOOPBACK_POD", podUid)).toEqual([]);

    // --cascade=orphan keeps the dependents and drops the reference
    await kubectl(
      fx.server,
      ["create", "-f", "-"],
      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner2","namespace":"fid"}}`,
    );
    const uid2 = fx.server.store.get("configmaps", "fid", "owner2")!.metadata.uid!;
    await kubectl(
      fx.server,
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: "kept",
          namespace: "fid",
          ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner2", uid: uid2 }],
        },
      }),
    );
    const orphan = await kubectl(fx.server, ["delete", "cm", "-n", "fid", "owner2", "--cascade=orphan"]);
    expect(orphan.code).toBe(0);
    const kept = await kubectl(fx.server, ["get", "secret", "-n", "fid", "kept", "-o", "json"]);
    expect(kept.code).toBe(0);
    expect(JSON.parse(kept.stdout).metadata.ownerReferences).toBeUndefined();
  }, 60_000);

  it("serves coordination.k8s.io/v1 Leases: discovery, apply/get, optimistic concurrency (409 on a stale resourceVersion)", async () => {
    const applied = await kubectl(
      fx.server,
      ["apply", "-f", "-"],
      `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: city-lock, namespace: fid}
spec: {holderIdentity: one, leaseDurationSeconds: 15}
`,
    );
    expect(applied).toMatchObject({ code: 0, stdout: "lease.coordination.k8s.io/city-lock created\n" });
    const got = await kubectl(fx.server, ["get", "lease", "-n", "fid", "city-lock", "-o", "json"]);
    expect(JSON.parse(got.stdout)).toMatchObject({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      spec: { holderIdentity: "one", leaseDurationSeconds: 15 },
    });
    const py = await python(
      fx.server,
      `${PY_HEAD}
co = client.CoordinationV1Api()
l = co.read_namespaced_lease("city-lock", "fid")
stale = l.metadata.resource_version
l.spec.holder_identity = "two"
co.replace_namespaced_lease("city-lock", "fid", l)
l.metadata.resource_version = stale
l.spec.holder_identity = "three"
try:
    co.replace_namespaced_lease("city-lock", "fid", l)
    code = 200
except ApiException as e:
    code = e.status
try:
    co.read_namespaced_lease("nope", "fid")
except ApiException as e:
    missing = [e.status, json.loads(e.body)["message"]]
print(json.dumps({"holder": co.read_namespaced_lease("city-lock", "fid").spec.holder_identity, "stale": code,
                  "missing": missing, "n": len(co.list_namespaced_lease("fid").items)}))
`,
    );
    expect(py).toEqual({
      holder: "two",
      stale: 409,
      missing: [404, 'leases.coordination.k8s.io "nope" not found'],
      n: 1,
    });
  });

  it("terminates a pod gracefully: deletionTimestamp, SIGTERM, the process runs on until the grace period ends", async () => {
    const uid = await readyPod(
      "term",
      `apiVersion: v1
kind: Pod
metadata: {name: term, namespace: fid}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "trap 'echo got-term' TERM; while :; do sleep 0.2; done"]
`,
    );
    const del = await kubectl(fx.server, ["delete", "pod", "-n", "fid", "term", "--wait=false"]);
    expect(del.code).toBe(0);
    const py = (await python(
      fx.server,
      `${PY_HEAD}
p = v1.read_namespaced_pod("term", "fid")
print(json.dumps({"ts": p.metadata.deletion_timestamp is not None, "grace": p.metadata.deletion_grace_period_seconds}))
`,
    )) as { ts: boolean; grace: number };
    expect(py).toEqual({ ts: true, grace: 10 });
    await expect
      .poll(() => fx.core.readNamespacedPodLog({ name: "term", namespace: "fid" }), { timeout: 10_000 })
      .toContain("got-term");
    // the program ignored SIGTERM: it still runs, and the pod is still there, until the deadline
    expect(pidsTagged("GC_LOOPBACK_POD", uid).length).toBeGreaterThan(0);
    expect(fx.server.store.get("pods", "fid", "term")?.metadata.deletionTimestamp).toBeDefined();
    await expect.poll(() => fx.server.store.get("pods", "fid", "term"), { timeout: 30_000 }).toBeUndefined();
    expect(pidsTagged("GC_LOOPBACK_POD", uid)).toEqual([]);
  });
});
