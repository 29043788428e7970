/**
 * The k8s provider against the loopback API server: API request budget of an observation
 * pass over 200 pods, fault handling (5xx/429 bursts, a server restart, pods deleted behind
 * gc's back, foreign pods), start failures with the pod's reason, and secrets kept out of
 * the pod spec.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as K8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXEC_ALIVE, EXEC_TREE } from "../../../conformance/provider-cases.js";
import { type DesiredSession, META_CORE, META_LIVE } from "../../../internal/reconcile/execute.js";
import { DEFAULT_POLICY } from "../../../internal/reconcile/plan.js";
import { Reconciler } from "../../../internal/reconcile/reconciler.js";
import { fingerprint } from "../../../internal/runtime/fingerprint.js";
import { connect, type KubeApi } from "../../../internal/runtime/k8s/api.js";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { podName, selector } from "../../../internal/runtime/k8s/names.js";
import { buildPod, cityLabels } from "../../../internal/runtime/k8s/spec.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { openMemoryStore } from "../../../internal/session/memory-store.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";

let server: ApiServer;
let root: string;
let api: KubeApi;
let n = 0;

beforeAll(async () => {
  server = await startApiServer({});
  root = await mkdtemp(join(tmpdir(), "gc-k8s-prov-"));
  api = await connect({ kubeconfig: server.kubeconfigPath });
});

afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

function provider(city: string, extra: Record<string, unknown> = {}): K8sProvider {
  return new K8sProvider({
    city,
    cityDir: root,
    stateDir: root,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root, ...extra },
  });
}

async function config(command = "exec sleep 300", extra: Partial<StartConfig> = {}): Promise<StartConfig> {
  const workDir = join(root, `w${++n}`);
  await mkdir(workDir, { recursive: true });
  return { command, workDir, env: {}, ...extra };
}

async function podsOf(city: string): Promise<K8s.V1Pod[]> {
  const list = await api.call((c) =>
    c.listNamespacedPod({ namespace: "default", labelSelector: selector(cityLabels(city)) }),
  );
  return list.items;
}

/** A desired session of agent `name` on k8s with `cfg`, fingerprinted as config resolution does. */
function want(name: string, cfg: StartConfig): DesiredSession {
  return {
    name,
    agent: name,
    provider: "k8s",
    dependsOn: [],
    suspended: false,
    config: cfg,
    ...fingerprint(cfg),
  };
}

/** The reconciler of a controller whose city wants `desired` on `p` (in-memory store). */
function reconcilerOf(p: K8sProvider, desired: readonly DesiredSession[]): Reconciler {
  return new Reconciler({
    store: openMemoryStore({ singleTenant: true }),
    providerFor: async () => p,
    loadDesired: async () => [...desired],
    baseProviders: ["k8s"],
    policy: DEFAULT_POLICY,
    concurrency: 20,
    drainTimeoutMs: 1_000,
  });
}

describe("k8s provider on the loopback API server", { timeout: 120_000 }, () => {
  it("a steady-state pass over 200 pods (the observation, then a real reconciler tick) makes ≤ 3 API requests", async () => {
    // Its own server: stopping it ends the 200 pod processes at once.
    const own = await startApiServer({});
    const ownApi = await connect({ kubeconfig: own.kubeconfigPath });
    const city = `count-${process.pid}`;
    const p = new K8sProvider({
      city,
      cityDir: root,
      stateDir: root,
      settings: { image: "gc-test/agent:1", kubeconfig: own.kubeconfigPath, work_root: root },
    });
    try {
      const names = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
      // 200 pods of this city, each running a plain sleep (cheap stand-ins for sessions).
      const create = async (name: string) => {
        const m = buildPod({
          id: { owner: city, name, pod: podName(city, name) },
          settings: p.settings,
          image: "gc-test/agent:1",
          workDir: root,
          env: {},
          startId: "count",
          bootGraceSeconds: 60,
        });
        m.spec.containers = [{ name: "agent", image: "gc-test/agent:1", command: ["sleep", "3600"] }];
        await ownApi.call((c) =>
          c.createNamespacedPod({ namespace: "default", body: m as unknown as K8s.V1Pod }),
        );
      };
      for (let i = 0; i < names.length; i += 20) await Promise.all(names.slice(i, i + 20).map(create));
      await expect.poll(async () => (await p.listRunning("")).length, { timeout: 60_000 }).toBe(200);
      own.requestLog.clear();
      const running = await p.listRunning("");
      const snapshot = await p.snapshot("agent-1");
      expect(running).toEqual([...names].sort());
      expect(snapshot.map((s) => s.name)).toEqual(names.filter((x) => x.startsWith("agent-1")).sort());
      const requests = own.requestLog.count();
      console.log(`observation pass over 200 pods: ${requests} API requests (listRunning + snapshot)`);
      expect(requests).toBeLessThanOrEqual(3);

      // The reconciler's own pass: 200 desired sessions whose pods run with the fingerprints
      // they were started with. The first pass adopts them (reading each pod's fingerprint
      // annotations); the next one, the steady state, changes nothing and is counted.
      const desired = names.map((name) => want(name, { command: "sleep 300", workDir: root, env: {} }));
      for (let i = 0; i < desired.length; i += 20) {
        await Promise.all(
          desired
            .slice(i, i + 20)
            .flatMap((d) => [p.setMeta(d.name, META_CORE, d.core), p.setMeta(d.name, META_LIVE, d.live)]),
        );
      }
      const reconciler = reconcilerOf(p, desired);
      const first = await reconciler.tick();
      expect(first.observeErrors).toEqual([]);
      expect(first.outcomes.filter((o) => o.action.kind !== "adopt" || !o.ok)).toEqual([]);
      expect(first.outcomes).toHaveLength(200);
      own.requestLog.clear();
      const steady = await reconciler.tick();
      const passRequests = own.requestLog.count();
      console.log(`steady-state reconciler pass over 200 pods: ${passRequests} API requests`);
      expect(steady.observeErrors).toEqual([]);
      expect(steady.plan.actions).toEqual([]);
      expect(passRequests).toBeLessThanOrEqual(3);
    } finally {
      await p.close();
      await own.stop();
    }
  }, 400_000);

  it("500 and 429 bursts are retried with backoff and leave exactly one pod", async () => {
    const city = `burst-${process.pid}`;
    const p = provider(city);
    const cfg = await config();
    server.faults.failNext(3, { method: "POST", path: /\/pods$/ });
    server.faults.failNext(2, { method: "GET", path: /\/pods\/[^/]+$/, code: 429, retryAfterSeconds: 0 });
    try {
      await p.start("burst", cfg);
      expect(await p.isRunning("burst")).toBe(true);
      expect((await podsOf(city)).map((x) => x.metadata?.name)).toEqual([podName(city, "burst")]);
      expect(
        server.requestLog.count((r) => r.method === "POST" && /\/pods$/.test(r.path)),
      ).toBeGreaterThanOrEqual(4);
      // A second start of the same name is refused: still one pod.
      await expect(p.start("burst", cfg)).rejects.toMatchObject({ code: "GC_SESSION_EXISTS" });
      expect(await podsOf(city)).toHaveLength(1);
    } finally {
      await p.shutdown();
    }
  });

  it("an API server restart mid-pass: the controller recovers within 2 passes, stopping nothing", async () => {
    const city = `restart-${process.pid}`;
    const p = provider(city);
    const reconciler = reconcilerOf(p, [want("r1", await config())]);
    try {
      expect((await reconciler.tick()).outcomes.map((o) => [o.action.kind, o.ok])).toEqual([["start", true]]);
      const [uid] = (await podsOf(city)).map((x) => x.metadata?.uid);
      // The restart drops connections while a pass lists: that pass stops and starts nothing
      // (an observation that failed only makes the session wait) …
      const [, during] = await Promise.all([server.restart({ downMs: 300 }), reconciler.tick()]);
      expect(during.outcomes.filter((o) => o.action.kind !== "wait")).toEqual([]);
      // … and the next one sees every session again, in sync.
      const next = await reconciler.tick();
      expect(next.observeErrors).toEqual([]);
      expect(next.plan.actions).toEqual([]);
      expect(await p.listRunning("")).toEqual(["r1"]);
      expect((await podsOf(city)).map((x) => x.metadata?.uid)).toEqual([uid]);
      expect(await p.peek("r1", 5)).toBeTypeOf("string");
    } finally {
      await p.shutdown();
    }
  });

  it("peekStyled: the pod's tmux screen with its SGR colours (capture-pane -e), peek without", async () => {
    const city = `styled-${process.pid}`;
    const p = provider(city);
    await p.start("paint", await config("printf '\\033[32mGREEN\\033[0m plain\\n'; exec sleep 300"));
    try {
      await expect.poll(() => p.peek("paint", 5), { timeout: 30_000 }).toContain("GREEN plain");
      expect(await p.peek("paint", 5)).not.toContain("\x1b");
      expect(await p.peekStyled("paint", 5)).toMatch(/\x1b\[32mGREEN\x1b\[(0|39)?m plain/);
    } finally {
      await p.shutdown();
    }
  });

  it("a pod deleted behind gc's back is not running, and the reconciler starts it again", async () => {
    const city = `behind-${process.pid}`;
    const p = provider(city);
    const cfg = await config();
    const reconciler = reconcilerOf(p, [want("gone", cfg)]);
    try {
      const first = await reconciler.tick();
      expect(first.outcomes.map((o) => [o.action.kind, o.ok])).toEqual([["start", true]]);
      const [before] = await podsOf(city);
      await api.call((c) =>
        c.deleteNamespacedPod({ name: podName(city, "gone"), namespace: "default", gracePeriodSeconds: 0 }),
      );
      await expect.poll(() => p.isRunning("gone")).toBe(false);
      expect(await p.listRunning("")).toEqual([]);
      // The next pass sees it gone (with its infrastructure) and starts a new pod.
      const next = await reconciler.tick();
      expect(next.outcomes.filter((o) => o.action.name === "gone" && o.action.kind === "start")).toHaveLength(
        1,
      );
      expect(next.outcomes.every((o) => o.ok)).toBe(true);
      expect(await p.listRunning("")).toEqual(["gone"]);
      const after = await podsOf(city);
      expect(after).toHaveLength(1);
      expect(after[0]?.metadata?.uid).not.toBe(before?.metadata?.uid);
    } finally {
      await p.shutdown();
    }
  });

  /** The pids an EXEC_TREE command wrote to `file` in the work dir of `name` (a second exec). */
  async function treePids(p: K8sProvider, name: string, file: string): Promise<string[]> {
    const r = await p.execCommand(name, ["cat", file]);
    return r.exitCode === 0 ? r.stdout.trim().split(" ") : [];
  }
  /** True while one of `pids` is a live process in the pod of `name` (a second exec). */
  async function anyAlive(p: K8sProvider, name: string, pids: readonly string[]): Promise<boolean> {
    return (await p.execCommand(name, ["sh", "-c", EXEC_ALIVE, "gc-alive", ...pids])).exitCode === 0;
  }
  /** The pod's temp dir, listed by a plain exec (an execCommand would list its own group file). */
  async function podTmp(p: K8sProvider, pod: string): Promise<string> {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: POSIX sh parameter expansion
    const r = await p.runInPod(pod, ["/bin/sh", "-c", 'ls -a "${TMPDIR:-/tmp}"']);
    return r.stdout.toString("utf8");
  }

  it("execCommand past timeoutMs: GC_TIMEOUT, and the command and its child are killed in the pod", async () => {
    const city = `exec-timeout-${process.pid}`;
    const p = provider(city);
    await p.start("ekt", await config());
    try {
      const cut = p.execCommand("ekt", ["sh", "-c", EXEC_TREE, "gc-tree", "t.pids"], { timeoutMs: 3_000 });
      await expect(cut).rejects.toMatchObject({ code: "GC_TIMEOUT" });
      const pids = await treePids(p, "ekt", "t.pids");
      expect(pids).toHaveLength(2);
      await expect.poll(() => anyAlive(p, "ekt", pids)).toBe(false);
      await expect.poll(() => podTmp(p, podName(city, "ekt"))).not.toContain("gc-exec-");
    } finally {
      await p.shutdown();
    }
  });

  it("execCommand aborted: rejects with the reason, and the command and its child (ignoring SIGTERM) are killed", async () => {
    const city = `exec-abort-${process.pid}`;
    const p = provider(city);
    await p.start("eka", await config());
    const ac = new AbortController();
    try {
      const reason = new Error("test-abort");
      const cut = p.execCommand("eka", ["sh", "-c", EXEC_TREE, "gc-tree", "a.pids", "stubborn"], {
        signal: ac.signal,
        timeoutMs: 600_000,
      });
      cut.catch(() => undefined);
      await expect.poll(() => treePids(p, "eka", "a.pids")).toHaveLength(2);
      const pids = await treePids(p, "eka", "a.pids");
      expect(await anyAlive(p, "eka", pids)).toBe(true);
      ac.abort(reason);
      await expect(cut).rejects.toBe(reason);
      await expect.poll(() => anyAlive(p, "eka", pids)).toBe(false);
      await expect.poll(() => podTmp(p, podName(city, "eka"))).not.toContain("gc-exec-");
    } finally {
      ac.abort();
      await p.shutdown();
    }
  });

  it("another city's pods are never listed, stopped or deleted", async () => {
    const a = provider(`city-a-${process.pid}`);
    const b = provider(`city-b-${process.pid}`);
    await Promise.all([a.start("same", await config()), b.start("same", await config())]);
    try {
      expect(await a.listRunning("")).toEqual(["same"]);
      await a.stop("same");
      expect(await a.listRunning("")).toEqual([]);
      expect(await b.isRunning("same")).toBe(true);
      await a.shutdown();
      expect(await b.listRunning("")).toEqual(["same"]);
    } finally {
      await b.shutdown();
    }
  });

  it("a pod that cannot start fails at the deadline with the pod's reason, and is initializing meanwhile", async () => {
    const city = `stuck-${process.pid}`;
    server.faults.failImagePull(/^gc-test\/missing/);
    const p = provider(city, { image: "gc-test/missing:1", start_timeout: 3_000 });
    const started = p.start("pull", await config());
    const outcome = started.catch((e: unknown) => e);
    await expect
      .poll(
        async () =>
          (await p.peek("pull", 1).catch((e: { code?: string }) => e.code)) === "GC_SESSION_INITIALIZING",
      )
      .toBe(true);
    const err = (await outcome) as { code?: string; message?: string };
    expect(err.code).toBe("GC_TIMEOUT");
    expect(err.message).toMatch(/ImagePullBackOff|ErrImagePull/);
    expect(await podsOf(city)).toEqual([]);

    const q = provider(`${city}-sched`, { start_timeout: 2_000 });
    server.faults.stickPending((pod) =>
      String((pod.metadata as { name?: string })?.name).startsWith("unsched"),
    );
    await expect(q.start("unsched", await config())).rejects.toThrow(/Unschedulable|Pending/);
    expect(await podsOf(`${city}-sched`)).toEqual([]);

    // session.startup_timeout (the lifecycle's deadline for the whole start) shorter than
    // start_timeout: the same GC_TIMEOUT, still saying what the pod waits for.
    const r = provider(`${city}-deadline`, { start_timeout: 600_000 });
    const late = (await r
      .start("unsched-d", await config(undefined, { startupTimeoutMs: 2_000 }))
      .catch((e: unknown) => e)) as { code?: string; message?: string };
    expect(late.code).toBe("GC_TIMEOUT");
    expect(late.message).toMatch(/still Pending \(Unschedulable/);
    expect(await podsOf(`${city}-deadline`)).toEqual([]);
  });

  it("secret env values go into a Secret (secretKeyRef), never into the pod spec or annotations", async () => {
    const city = `secret-${process.pid}`;
    const p = provider(city);
    const value = `tok-${process.pid}-'"$(x)`;
    const cfg = await config('printf "%s" "$API_TOKEN" > tok.out; exec sleep 300', {
      env: { API_TOKEN: value, PLAIN: "p" },
    });
    await p.start("sec", cfg);
    try {
      await expect.poll(() => p.readSessionFile("sec", "tok.out")).toBe(value);
      const [pod] = await podsOf(city);
      expect(JSON.stringify(pod)).not.toContain(value);
      const env = pod?.spec?.containers[0]?.env ?? [];
      expect(env.find((e) => e.name === "API_TOKEN")?.valueFrom?.secretKeyRef?.name).toBe(
        podName(city, "sec"),
      );
      expect(env.find((e) => e.name === "PLAIN")?.value).toBe("p");
      const secret = await api.call((c) =>
        c.readNamespacedSecret({ name: podName(city, "sec"), namespace: "default" }),
      );
      expect(Buffer.from(secret.data?.API_TOKEN ?? "", "base64").toString()).toBe(value);
      await p.stop("sec");
      await expect(
        api.call((c) => c.readNamespacedSecret({ name: podName(city, "sec"), namespace: "default" })),
      ).rejects.toMatchObject({ code: 404 });
    } finally {
      await p.shutdown();
    }
  });
});
