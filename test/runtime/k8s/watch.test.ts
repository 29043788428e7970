/**
 * The k8s provider's one watch on the city's pods (start and deletion waits, observation) and
 * its Lease (one controller per city), against the loopback API server: a 20-pod start costs
 * requests per pod, not per second of waiting; a watch whose resourceVersion expired (410)
 * lists again; two controllers of one city in two directories run one fleet, the second
 * refusing with the holder named until the lease expires.
 */
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import type * as K8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DesiredSession } from "../../../internal/reconcile/execute.js";
import { DEFAULT_POLICY } from "../../../internal/reconcile/plan.js";
import { Reconciler } from "../../../internal/reconcile/reconciler.js";
import { fingerprint } from "../../../internal/runtime/fingerprint.js";
import { ownerKey } from "../../../internal/runtime/identity.js";
import { connect } from "../../../internal/runtime/k8s/api.js";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { leaseName } from "../../../internal/runtime/k8s/lease.js";
import { selector } from "../../../internal/runtime/k8s/names.js";
import { cityLabels } from "../../../internal/runtime/k8s/spec.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { openMemoryStore } from "../../../internal/session/memory-store.js";
import { type ApiServer, type RequestRecord, startApiServer } from "../../k8s/apiserver/index.js";

let root: string;
beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "gc-k8s-watch-")));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function provider(
  server: ApiServer,
  city: string,
  opts: { cityDir?: string; cityId?: string; leaseDurationMs?: number } = {},
): K8sProvider {
  const cityDir = opts.cityDir ?? root;
  return new K8sProvider({
    city,
    cityId: opts.cityId,
    cityDir,
    stateDir: cityDir,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
    leaseDurationMs: opts.leaseDurationMs,
  });
}

async function config(dir: string, name: string): Promise<StartConfig> {
  const workDir = join(dir, name);
  await mkdir(workDir, { recursive: true });
  return { command: "exec sleep 300", workDir, env: {} };
}

/** Reads of pods (GET, LIST, WATCH) among `entries`. */
const podReads = (r: RequestRecord) =>
  r.resource === "pods" && r.subresource === undefined && ["get", "list", "watch"].includes(r.verb);

/**
 * Starts 20 sessions at once on a server whose containers take `startDelayMs` to start;
 * returns the API requests the starts made, all of them and the pod reads.
 */
async function twentyStarts(startDelayMs: number): Promise<{ all: number; reads: number; ms: number }> {
  const server = await startApiServer({ startDelayMs });
  const city = `twenty-${startDelayMs}-${process.pid}`;
  const p = provider(server, city);
  try {
    const names = Array.from({ length: 20 }, (_, i) => `s${i}`);
    const cfgs = await Promise.all(names.map((n) => config(root, `${city}-${n}`)));
    server.requestLog.clear();
    const t0 = Date.now();
    await Promise.all(names.map((n, i) => p.start(n, cfgs[i]!)));
    const ms = Date.now() - t0;
    const all = server.requestLog.count();
    const reads = server.requestLog.count(podReads);
    expect((await p.listRunning("")).length).toBe(20);
    return { all, reads, ms };
  } finally {
    await p.shutdown().catch(() => undefined);
    await p.close();
    await server.stop();
  }
}

describe("k8s provider: one watch on the city's pods", { timeout: 240_000 }, () => {
  it("a 20-pod start issues requests proportional to pods, not to the time the pods take to start", async () => {
    const fast = await twentyStarts(50);
    const slow = await twentyStarts(4_000);
    console.log(
      `20 concurrent starts: containers starting in 50 ms: ${fast.all} requests (${fast.reads} pod reads) in ${fast.ms} ms; ` +
        `in 4 s: ${slow.all} requests (${slow.reads} pod reads) in ${slow.ms} ms`,
    );
    // Polling every 100 ms would read each pod ≥ 40 times while it starts for 4 s (800 reads).
    // With the watch a pod is read a fixed number of times, however long it takes.
    expect(slow.reads).toBeLessThanOrEqual(20 * 3);
    expect(slow.reads).toBeLessThanOrEqual(fast.reads + 2);
    expect(slow.all).toBeLessThanOrEqual(fast.all + 10);
  });

  it("watches with the city's label selector, a resourceVersion and bookmarks; an expired version (410) lists again", async () => {
    const server = await startApiServer({ bookmarkIntervalMs: 200 });
    const api = await connect({ kubeconfig: server.kubeconfigPath });
    const city = `relist-${process.pid}`;
    const p = provider(server, city);
    try {
      await p.start("w1", await config(root, `${city}-w1`));
      await p.start("w2", await config(root, `${city}-w2`));
      const watches = server.requestLog.entries.filter((r) => r.verb === "watch" && r.resource === "pods");
      expect(watches).toHaveLength(1);
      const q = new URLSearchParams(watches[0]!.query);
      expect(q.get("labelSelector")).toBe(selector(cityLabels(city)));
      expect(q.get("allowWatchBookmarks")).toBe("true");
      expect(Number(q.get("resourceVersion"))).toBeGreaterThan(0);
      // A restart: the watch resumes from a version that is gone, gets the ERROR 410 event,
      // lists again and watches from the new list.
      server.requestLog.clear();
      // While it is down the cluster moves on and compacts (etcd), so the version the watch
      // resumes from is gone.
      await server.restart({
        whileDown: () => {
          server.store.put("configmaps", { metadata: { name: "moved-on", namespace: "default" } });
          server.store.compact();
        },
      });
      await api.call((c) =>
        c.deleteNamespacedPod({
          name: server.store
            .list("pods", "default")
            .find((x) => x.metadata.annotations?.["gc.dev/session-name"] === "w2")!.metadata.name!,
          namespace: "default",
          gracePeriodSeconds: 0,
        }),
      );
      const watchesNow = () =>
        server.requestLog.entries.filter((r) => r.verb === "watch" && r.resource === "pods");
      await expect.poll(() => watchesNow().length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
      const [expiredWatch, relisted] = watchesNow().map((r) =>
        Number(new URLSearchParams(r.query).get("resourceVersion")),
      );
      expect(expiredWatch).toBeLessThan(server.store.oldestRv()); // answered with ERROR 410
      expect(relisted).toBeGreaterThanOrEqual(server.store.oldestRv()); // from the new LIST
      expect(server.requestLog.count({ verb: "list", resource: "pods" })).toBeGreaterThanOrEqual(1);
      await expect.poll(() => p.listRunning(""), { timeout: 20_000 }).toEqual(["w1"]);
      // Observation now reads the cache: no request at all.
      server.requestLog.clear();
      expect(await p.listRunning("")).toEqual(["w1"]);
      expect(server.requestLog.count(podReads)).toBe(0);
      // A stop waits for the pod's DELETED event, not by polling.
      await p.stop("w1");
      expect(server.store.list("pods", "default").filter((x) => x.metadata.labels?.["gc.dev/city"])).toEqual(
        [],
      );
      expect(server.requestLog.count({ verb: "get", resource: "pods" })).toBeLessThanOrEqual(2);
    } finally {
      await p.shutdown().catch(() => undefined);
      await p.close();
      await server.stop();
    }
  });
});

describe("k8s provider: one controller per city (Lease)", { timeout: 120_000 }, () => {
  it("two controllers of one city in two directories run one fleet; the second refuses naming the holder and takes over only after expiry", async () => {
    const server = await startApiServer({});
    const api = await connect({ kubeconfig: server.kubeconfigPath });
    const city = `lease-${process.pid}`;
    const cityId = "0123456789";
    const dirA = join(root, "checkout-a");
    const dirB = join(root, "checkout-b");
    await mkdir(dirA, { recursive: true });
    await mkdir(dirB, { recursive: true });
    const a = provider(server, city, { cityDir: dirA, cityId, leaseDurationMs: 3_000 });
    const b = provider(server, city, { cityDir: dirB, cityId, leaseDurationMs: 3_000 });
    const want = async (dir: string, name: string): Promise<DesiredSession> => {
      const cfg = await config(dir, name);
      return {
        name,
        agent: name,
        provider: "k8s",
        dependsOn: [],
        suspended: false,
        config: cfg,
        ...fingerprint(cfg),
      };
    };
    // Both checkouts want the same sessions (the same city file).
    const desired = [await want(dirA, "one"), await want(dirA, "two")];
    const reconciler = (p: K8sProvider) =>
      new Reconciler({
        store: openMemoryStore({ singleTenant: true }),
        providerFor: async () => p,
        loadDesired: async () => desired,
        baseProviders: ["k8s"],
        policy: DEFAULT_POLICY,
        concurrency: 4,
        drainTimeoutMs: 1_000,
      });
    const owner = ownerKey(city, cityId);
    const fleet = async () =>
      (
        await api.call((c) =>
          c.listNamespacedPod({ namespace: "default", labelSelector: selector(cityLabels(owner)) }),
        )
      ).items.map((x: K8s.V1Pod) => x.metadata?.uid);
    try {
      const ra = reconciler(a);
      const rb = reconciler(b);
      const first = await ra.tick();
      expect(first.outcomes.map((o) => [o.action.kind, o.ok])).toEqual([
        ["start", true],
        ["start", true],
      ]);
      const uids = await fleet();
      expect(uids).toHaveLength(2);
      const holderA = `${hostname()}:${dirA}`;
      const lease = await api.callCoordination((c) =>
        c.readNamespacedLease({ name: leaseName(owner), namespace: "default" }),
      );
      expect(lease.spec?.holderIdentity).toBe(holderA);

      // The second controller: its passes act on nothing and say who holds the city.
      const second = await rb.tick();
      expect(second.outcomes.filter((o) => o.action.kind === "start")).toEqual([]);
      expect(second.observeErrors.map((e) => e.error).join("\n")).toContain(`${holderA} holds lease`);
      await expect(b.start("three", await config(dirB, "three"))).rejects.toThrow(`${holderA} holds lease`);
      await expect(b.stop("one")).rejects.toThrow(`${holderA} holds lease`);
      expect(await fleet()).toEqual(uids);

      // While A renews, B stays refused past the lease's first duration …
      const renewedFor = async () => {
        const l = await api.callCoordination((c) =>
          c.readNamespacedLease({ name: leaseName(owner), namespace: "default" }),
        );
        return Date.parse(String(l.spec?.renewTime)) - Date.parse(String(l.spec?.acquireTime));
      };
      await expect.poll(renewedFor, { timeout: 20_000, interval: 250 }).toBeGreaterThan(3_000);
      await expect(b.snapshot("")).rejects.toThrow(`${holderA} holds lease`);
      // … and once A stops renewing (its controller exited), B takes over after the expiry,
      // adopting the running fleet: no second one.
      await a.close();
      await expect
        .poll(async () => (await rb.tick()).observeErrors, { timeout: 20_000, interval: 500 })
        .toEqual([]);
      const after = await api.callCoordination((c) =>
        c.readNamespacedLease({ name: leaseName(owner), namespace: "default" }),
      );
      expect(after.spec?.holderIdentity).toBe(`${hostname()}:${dirB}`);
      expect(after.spec?.leaseTransitions).toBe(1);
      const third = await rb.tick();
      expect(third.outcomes.filter((o) => o.action.kind === "start")).toEqual([]);
      expect((await fleet()).sort()).toEqual([...uids].sort());
    } finally {
      await b.shutdown().catch(() => undefined);
      await a.close();
      await b.close();
      await server.stop();
    }
  });
});
