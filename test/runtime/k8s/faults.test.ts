/**
 * Failures that are not the session's: an API outage on pod create (5xx for a simulated
 * minute, on an injected clock) and a refusal by admission (403 PodSecurity) are retried
 * but never counted towards quarantine; the refusal is reported with the API's message. A
 * patch guarded by a uid that no longer matches (422 from a real server) means "gone".
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DesiredSession } from "../../../internal/reconcile/execute.js";
import { DEFAULT_POLICY } from "../../../internal/reconcile/plan.js";
import { Reconciler } from "../../../internal/reconcile/reconciler.js";
import { fingerprint } from "../../../internal/runtime/fingerprint.js";
import { connect, type KubeApi } from "../../../internal/runtime/k8s/api.js";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { selector } from "../../../internal/runtime/k8s/names.js";
import { cityLabels } from "../../../internal/runtime/k8s/spec.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { openMemoryStore } from "../../../internal/session/memory-store.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";

const STRICT = "strict";
let server: ApiServer;
let root: string;
let api: KubeApi;

beforeAll(async () => {
  server = await startApiServer({ namespaces: [STRICT] });
  root = await mkdtemp(join(tmpdir(), "gc-k8s-faults-"));
  api = await connect({ kubeconfig: server.kubeconfigPath });
  await api.call((c) =>
    c.patchNamespace(
      {
        name: STRICT,
        body: { metadata: { labels: { "pod-security.kubernetes.io/enforce": "restricted" } } },
      },
      api.mergePatch(),
    ),
  );
});

afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

/** A provider with its own connection whose retries are short (2 attempts). */
async function provider(city: string, extra: Record<string, unknown> = {}): Promise<K8sProvider> {
  const own = await connect({ kubeconfig: server.kubeconfigPath });
  own.retry = { attempts: 2, baseDelayMs: 10, maxDelayMs: 20 };
  return new K8sProvider({
    city,
    cityDir: root,
    stateDir: root,
    api: own,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root, ...extra },
  });
}

async function desired(name: string): Promise<DesiredSession> {
  const workDir = join(root, name);
  await mkdir(workDir, { recursive: true });
  const cfg: StartConfig = { command: "exec sleep 300", workDir, env: {} };
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

describe("k8s failures that are not the session's", { timeout: 120_000 }, () => {
  it("a minute of 500s on pod create quarantines nothing; the session starts once the API is back", async () => {
    const city = `outage-${process.pid}`;
    const p = await provider(city);
    const store = openMemoryStore({ singleTenant: true });
    let t = Date.now();
    const d = await desired("agent");
    const reconciler = new Reconciler({
      store,
      providerFor: async () => p,
      loadDesired: async () => [d],
      baseProviders: ["k8s"],
      policy: DEFAULT_POLICY,
      concurrency: 4,
      drainTimeoutMs: 1_000,
      now: () => t,
    });
    server.faults.failNext(1_000_000, { code: 500, method: "POST", path: /\/pods$/, retryAfterSeconds: 0 });
    try {
      // 60 s of outage on the injected clock, a pass every 5 s: twice the quarantine threshold of tries
      for (let i = 0; i < 12; i++) {
        await reconciler.tick();
        t += 5_000;
      }
      const creates = server.requestLog.count(
        (r) => r.verb === "create" && r.resource === "pods" && r.status === 500,
      );
      expect(creates).toBeGreaterThanOrEqual(DEFAULT_POLICY.quarantineThreshold);
      const rec = (await store.get("agent"))!;
      expect(rec.state).not.toBe("quarantined");
      expect(rec.recentFailures).toEqual([]);
      expect(rec.lastError).toContain("infrastructure problem, not counted towards quarantine");
      expect(rec.lastError).toContain("HTTP 500");
      server.faults.clear();
      t += 60_000;
      await reconciler.tick();
      expect((await store.get("agent"))!.state).toBe("running");
      const pods = await api.call((c) =>
        c.listNamespacedPod({ namespace: "default", labelSelector: selector(cityLabels(p.owner)) }),
      );
      expect(pods.items).toHaveLength(1);
    } finally {
      server.faults.clear();
      await p.shutdown();
    }
  });

  it("a pod refused by admission (403) is a configuration problem with the API's message, never quarantined", async () => {
    const city = `refused-${process.pid}`;
    const p = await provider(city, { namespace: STRICT, run_as_non_root: false });
    const store = openMemoryStore({ singleTenant: true });
    let t = Date.now();
    const d = await desired("agent");
    const reconciler = new Reconciler({
      store,
      providerFor: async () => p,
      loadDesired: async () => [d],
      baseProviders: ["k8s"],
      policy: DEFAULT_POLICY,
      concurrency: 4,
      drainTimeoutMs: 1_000,
      now: () => t,
    });
    try {
      for (let i = 0; i < DEFAULT_POLICY.quarantineThreshold + 2; i++) {
        await reconciler.tick();
        t += 10 * 60_000;
      }
      const rec = (await store.get("agent"))!;
      expect(rec.state).not.toBe("quarantined");
      expect(rec.recentFailures).toEqual([]);
      expect(rec.lastError).toContain("configuration problem, not counted towards quarantine");
      expect(rec.lastError).toContain(
        `HTTP 403: pods "${p.identity("agent").pod}" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)`,
      );
      expect(server.requestLog.count((r) => r.verb === "create" && r.status === 403)).toBeGreaterThanOrEqual(
        DEFAULT_POLICY.quarantineThreshold,
      );
    } finally {
      await p.shutdown();
    }
  });

  it("a metadata write racing a replacement of the pod (uid guard → 422 on a real server) says the session is gone", async () => {
    const city = `uidg-${process.pid}`;
    const own = await connect({ kubeconfig: server.kubeconfigPath });
    const p = new K8sProvider({
      city,
      cityDir: root,
      stateDir: root,
      api: own,
      settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
    });
    const d = await desired("agent");
    try {
      await p.start("agent", d.config);
      const name = p.identity("agent").pod;
      const old = server.store.get("pods", "default", name)!;
      // Between setMeta's read of the pod and its guarded patch, the pod is replaced by one of
      // the same name (another start): the patch still carries the old uid.
      const call = own.call.bind(own);
      let n = 0;
      own.call = (async (fn: Parameters<KubeApi["call"]>[0], signal?: AbortSignal) => {
        if (++n === 2) {
          await api.call((c) => c.deleteNamespacedPod({ name, namespace: "default", gracePeriodSeconds: 0 }));
          await expect.poll(() => server.store.get("pods", "default", name)).toBeUndefined();
          await api.call((c) =>
            c.createNamespacedPod({
              namespace: "default",
              body: {
                metadata: { name, labels: old.metadata.labels!, annotations: old.metadata.annotations! },
                spec: {
                  containers: [{ name: "agent", image: "gc-test/agent:1", command: ["sleep", "300"] }],
                },
              },
            }),
          );
        }
        return call(fn, signal);
      }) as KubeApi["call"];
      const err = await p.setMeta("agent", "k", "v").catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "GC_SESSION_NOT_FOUND" });
      expect((err as Error).cause).toMatchObject({ code: 422 });
      const now = server.store.get("pods", "default", name)!;
      expect(now.metadata.uid).not.toBe(old.metadata.uid);
      expect(now.metadata.annotations?.["meta.gc.dev/k"]).toBeUndefined();
    } finally {
      await p.shutdown();
    }
  });

  it("a container that fails before its program starts reports its last log lines, read before the pod goes", async () => {
    const city = `early-${process.pid}`;
    // the boot script cannot create the work dir (exit 126): mkdir says why, on the pod's log
    const p = await provider(city, { work_root: "/proc/gc-no-such-root" });
    const d = await desired("agent");
    try {
      const err = await p.start("agent", d.config).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "GC_DIED_DURING_STARTUP" });
      const msg = (err as Error).message;
      expect(msg).toContain("ended: Error (exit code 126); its last log lines: ");
      expect(msg).toMatch(/mkdir: .*\/proc\/gc-no-such-root/);
      await expect.poll(() => server.store.get("pods", "default", p.identity("agent").pod)).toBeUndefined();
    } finally {
      await p.shutdown();
    }
  });
});
