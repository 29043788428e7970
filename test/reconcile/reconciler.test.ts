import { describe, expect, it } from "vitest";
import type { CensusEntry } from "../../internal/proc/census.js";
import { type DesiredSession, META_CORE, type ProgressEvent } from "../../internal/reconcile/execute.js";
import { DEFAULT_POLICY, type PlanPolicy, REKEYED_KEY } from "../../internal/reconcile/plan.js";
import { observe, Reconciler } from "../../internal/reconcile/reconciler.js";
import { progressLine, summarizeTick, summaryLine } from "../../internal/reconcile/summary.js";
import { walkTo } from "../../internal/reconcile/walk.js";
import { FakeProvider } from "../../internal/runtime/fake.js";
import { fingerprint } from "../../internal/runtime/fingerprint.js";
import type {
  ExitStatus,
  Provider,
  ProviderCapabilities,
  SessionEnd,
  SessionSnapshot,
  StartConfig,
} from "../../internal/runtime/provider.js";
import { MemoryStore, openMemoryStore } from "../../internal/session/memory-store.js";
import type { SessionStore } from "../../internal/session/store.js";

function want(
  name: string,
  cfg: Partial<StartConfig> = {},
  extra: Partial<DesiredSession> = {},
): DesiredSession {
  const config: StartConfig = { command: "sleep 300", workDir: "/w", env: {}, ...cfg };
  const fp = fingerprint(config);
  return {
    name,
    agent: name,
    provider: "fake",
    dependsOn: [],
    suspended: false,
    core: fp.core,
    live: fp.live,
    breakdown: fp.breakdown,
    config,
    ...extra,
  };
}

/**
 * A fake that tells how its ended sessions ended (SessionEndProvider), like docker: `ends`
 * holds the answer (or the rejection) for each session that is no longer running.
 */
class EndingFake extends FakeProvider {
  readonly ends = new Map<string, SessionEnd | Error>();
  async sessionEnd(name: string): Promise<SessionEnd | undefined> {
    if (this.session(name)) return undefined;
    const e = this.ends.get(name);
    if (e instanceof Error) throw e;
    return e;
  }
}

/**
 * A fake that keeps ended sessions with their exit status and lists them, like tmux,
 * subprocess and k8s: `dead` are listed (with `exits` where known), the rest vanished.
 */
class KeepingFake extends FakeProvider {
  readonly dead = new Set<string>();
  readonly exits = new Map<string, ExitStatus>();
  override capabilities(): ProviderCapabilities {
    return { ...super.capabilities(), exitStatus: true };
  }
  async lastExit(name: string): Promise<ExitStatus | undefined> {
    return this.exits.get(name);
  }
  override async snapshot(prefix: string): Promise<SessionSnapshot[]> {
    return [...(await super.snapshot(prefix)), ...[...this.dead].map((name) => ({ name, running: false }))];
  }
}

/** A reconciler of `desired` over `store` and `provider`, its clock at 1 000 000. */
function reconcilerOver(store: SessionStore, provider: Provider, desired: DesiredSession[]): Reconciler {
  return new Reconciler({
    store,
    providerFor: async () => provider,
    loadDesired: async () => desired,
    baseProviders: ["fake"],
    policy: DEFAULT_POLICY,
    concurrency: 4,
    drainTimeoutMs: 100,
    now: () => 1_000_000,
  });
}

/** A new controller (fresh store, clock at 1 000 000) over the sessions `provider` runs. */
function restartedController(provider: Provider, desired: DesiredSession[]) {
  const fresh = openMemoryStore({ singleTenant: true, now: () => 1_000_000 });
  return { fresh, r2: reconcilerOver(fresh, provider, desired) };
}

function setup(
  initial: DesiredSession[],
  provider: FakeProvider = new FakeProvider({ city: "t" }),
  policy: PlanPolicy = DEFAULT_POLICY,
) {
  let desired = initial;
  let now = 1_000_000;
  const backend = provider.backend;
  const store = openMemoryStore({ singleTenant: true, now: () => now });
  const progress: ProgressEvent[] = [];
  const reconciler = new Reconciler({
    store,
    providerFor: async () => provider,
    loadDesired: async () => desired,
    baseProviders: ["fake"],
    policy,
    concurrency: 4,
    drainTimeoutMs: 100,
    now: () => now,
    random: () => 0.5,
  });
  return {
    provider,
    backend,
    store,
    reconciler,
    progress,
    set: (d: DesiredSession[]) => {
      desired = d;
    },
    advance: (ms: number) => {
      now += ms;
    },
    starts: () => provider.calls.filter((c) => c.method === "start").map((c) => c.name),
  };
}

describe("Reconciler", () => {
  it("tick: starts what is missing and records it running with fingerprints", async () => {
    const t = setup([want("a"), want("b")]);
    const r = await t.reconciler.tick();
    expect(r.outcomes.every((o) => o.ok)).toBe(true);
    expect(t.starts().sort()).toEqual(["a", "b"]);
    const rec = await t.store.get("a");
    expect(rec).toMatchObject({ state: "running", coreHash: want("a").core, generation: 1 });
    expect(await t.provider.getMeta("a", "gc.core")).toBe(want("a").core);
    const again = await t.reconciler.tick();
    expect(again.plan.actions).toEqual([]);
  });

  it("tick: an in-sync tick hands over the records it read, read once; a tick that acted hands over none", async () => {
    class CountingStore extends MemoryStore {
      lists = 0;
      override async list(...a: Parameters<MemoryStore["list"]>) {
        this.lists++;
        return super.list(...a);
      }
    }
    const store = new CountingStore({ singleTenant: true, now: () => 1_000_000 });
    const provider = new FakeProvider({ city: "t" });
    const r = reconcilerOver(store, provider, [want("a"), want("b")]);
    const first = await r.tick(); // starts both: the records changed after the tick read them
    expect(first.records).toBeUndefined();
    store.lists = 0;
    const steady = await r.tick();
    expect(steady.plan.actions).toEqual([]);
    expect(store.lists).toBe(1);
    expect(steady.records).toEqual(await store.list());
    expect(steady.records?.map((x) => [x.name, x.state])).toEqual([
      ["a", "running"],
      ["b", "running"],
    ]);
  });

  it("tick: a new session's record is created already starting (one write), then running; its events are those of each step", async () => {
    class WritesStore extends MemoryStore {
      writes: string[] = [];
      override async create(...a: Parameters<MemoryStore["create"]>) {
        this.writes.push(`create ${a[0].name}${a[1]?.transition ? ` → ${a[1].transition.to}` : ""}`);
        return super.create(...a);
      }
      override async update(...a: Parameters<MemoryStore["update"]>) {
        this.writes.push(`update ${a[0]}${a[2].transition ? ` → ${a[2].transition.to}` : ""}`);
        return super.update(...a);
      }
    }
    const store = new WritesStore({ singleTenant: true, now: () => 1_000_000 });
    const provider = new FakeProvider({ city: "t" });
    const r = reconcilerOver(store, provider, [want("a")]);
    await r.tick();
    expect(store.writes).toEqual(["create a → starting", "update a → running"]);
    const events = await store.queryEvents({ session: "a" });
    expect(events.map((e) => [e.type, e.payload])).toEqual([
      ["session.created", { state: "pending", agent: "a" }],
      ["session.state", { from: "pending", to: "starting", reason: "new session", generation: 1 }],
      ["session.state", { from: "starting", to: "running", reason: "new session", generation: 1 }],
    ]);
    expect(await store.get("a")).toMatchObject({ state: "running", version: 3, restarts: 0, pending: null });
  });

  it("tick: sessions recorded before the city had a fingerprint key are re-recorded keyed — record and metadata — and nothing restarts", async () => {
    const secretCfg: Partial<StartConfig> = { env: { API_TOKEN: "hunter2-token" }, sessionLive: ["echo l"] };
    const keyed = (name: string) => {
      const cfg: StartConfig = { command: "sleep 300", workDir: "/w", env: {}, ...secretCfg };
      const fp = fingerprint(cfg, {}, [], [], {}, Buffer.alloc(32, 7));
      return want(name, secretCfg, {
        core: fp.core,
        live: fp.live,
        breakdown: fp.breakdown,
        legacy: fp.legacy,
      });
    };
    const t = setup([want("a", secretCfg), want("b")]);
    await t.reconciler.tick();
    const unkeyed = want("a", secretCfg);
    expect(keyed("a").legacy).toMatchObject({ core: unkeyed.core, live: unkeyed.live });
    t.set([keyed("a"), want("b")]);
    // The session's metadata is written first: when that fails, the record stays unkeyed and
    // the next pass tries again (never a keyed record over unkeyed metadata).
    t.provider.failNext("setMeta", new Error("api down"), "a");
    const failed = await t.reconciler.tick();
    expect(failed.outcomes.map((o) => [o.action.kind, o.ok])).toEqual([["rekey", false]]);
    expect((await t.store.get("a"))?.coreHash).toBe(unkeyed.core);
    const r = await t.reconciler.tick();
    expect(r.plan.actions.map((a) => `${a.kind}:${a.name}`)).toEqual(["rekey:a"]);
    expect(t.starts().sort()).toEqual(["a", "b"]);
    expect(t.provider.session("a")?.liveRuns).toBe(0);
    expect(await t.store.get("a")).toMatchObject({
      state: "running",
      generation: 1,
      coreHash: keyed("a").core,
      liveHash: keyed("a").live,
    });
    expect((await t.store.get("a"))?.breakdown["env.API_TOKEN"]?.hash).toBe(
      keyed("a").breakdown["env.API_TOKEN"]?.hash,
    );
    expect(await t.provider.getMeta("a", META_CORE)).toBe(keyed("a").core);
    expect((await t.reconciler.tick()).plan.actions).toEqual([]);
    // A controller restarted over a session still carrying unkeyed metadata adopts it in sync
    // and re-records it at once (the adoption requeues), without a restart.
    await t.provider.setMeta("a", META_CORE, unkeyed.core);
    await t.provider.setMeta("a", "gc.live", unkeyed.live);
    const { fresh, r2 } = restartedController(t.provider, [keyed("a"), want("b")]);
    const adopted = await r2.tick();
    expect(adopted.plan.actions.map((a) => `${a.kind}:${a.name}`).sort()).toEqual(["adopt:a", "adopt:b"]);
    // Adopted as in sync: its breakdown is kept (a drifted adoption records none).
    expect(Object.keys((await fresh.get("a"))?.breakdown ?? {})).toContain("command");
    expect((await r2.tick()).plan.actions.map((a) => `${a.kind}:${a.name}`)).toEqual(["rekey:a"]);
    expect(await fresh.get("a")).toMatchObject({ coreHash: keyed("a").core, generation: 1 });
    expect(t.starts().sort()).toEqual(["a", "b"]);
  });

  it("tick: after a rekey the store is compacted once, then the mark is cleared; a failed compaction is tried again next pass", async () => {
    class CompactingStore extends MemoryStore {
      compactions = 0;
      failNext = 0;
      override async compact(): Promise<void> {
        this.compactions++;
        if (this.failNext > 0) {
          this.failNext--;
          throw new Error("busy");
        }
      }
    }
    const store = new CompactingStore({ singleTenant: true, now: () => 1_000_000 });
    const secretCfg: Partial<StartConfig> = { env: { API_TOKEN: "hunter2-token" } };
    const cfg: StartConfig = { command: "sleep 300", workDir: "/w", env: {}, ...secretCfg };
    const fp = fingerprint(cfg, {}, [], [], {}, Buffer.alloc(32, 7));
    let desired = [want("a", secretCfg), want("b")];
    const provider = new FakeProvider({ city: "t" });
    const r = new Reconciler({
      store,
      providerFor: async () => provider,
      loadDesired: async () => desired,
      baseProviders: ["fake"],
      policy: DEFAULT_POLICY,
      concurrency: 4,
      drainTimeoutMs: 100,
      now: () => 1_000_000,
    });
    await r.tick();
    expect(store.compactions).toBe(0); // nothing re-recorded, nothing to compact
    desired = [
      want("a", secretCfg, { core: fp.core, live: fp.live, breakdown: fp.breakdown, legacy: fp.legacy }),
      want("b"),
    ];
    store.failNext = 1;
    expect((await r.tick()).plan.actions.map((a) => a.kind)).toEqual(["rekey"]);
    expect(store.compactions).toBe(1);
    expect((await store.get("a"))?.metadata[REKEYED_KEY]).toBe("1"); // failed: still due
    const clearing = await r.tick();
    expect(clearing.plan.actions).toEqual([]);
    expect(clearing.records).toBeUndefined(); // it cleared the marks: the records it read are stale
    expect(store.compactions).toBe(2);
    expect((await store.get("a"))?.metadata[REKEYED_KEY]).toBeUndefined();
    await r.tick();
    expect(store.compactions).toBe(2);
  });

  it("tick: a core change restarts exactly that session; a live change re-applies without restart", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    t.set([want("a", { command: "sleep 301" }), want("b", { sessionLive: ["echo live"] })]);
    const r = await t.reconciler.tick();
    expect(r.plan.actions.map((a) => `${a.kind}:${a.name}`).sort()).toEqual(["restart:a", "run-live:b"]);
    expect(t.starts()).toEqual(["a", "b", "a"]);
    expect(t.provider.session("b")?.liveRuns).toBe(1);
    // A drift restart is not a crash restart (RESTARTS counts those); it has its own event.
    expect(await t.store.get("a")).toMatchObject({ state: "running", restarts: 0, generation: 2 });
    expect((await t.store.queryEvents({ session: "a", types: ["reconcile.restart"] })).length).toBe(1);
    expect((await t.reconciler.tick()).plan.actions).toEqual([]);
  });

  it("tick: a session that keeps failing to start backs off, counts its retries as restarts and is quarantined after 5 failures", async () => {
    const t = setup([want("crashy"), want("ok")]);
    t.provider.failAlways("start", new Error("boom"), "crashy");
    for (let i = 0; i < 12; i++) {
      await t.reconciler.tick();
      t.advance((5 * 60_000) / 10);
      if ((await t.store.get("crashy"))?.state === "quarantined") break;
    }
    const rec = await t.store.get("crashy");
    expect(rec?.state).toBe("quarantined");
    expect(rec?.quarantineReason).toContain("5 failures");
    // Every retry of the failing start counts as a restart (the first start is none).
    expect(rec?.restarts).toBe(4);
    expect((await t.store.get("ok"))?.state).toBe("running");
    const before = t.starts().length;
    await t.reconciler.tick();
    expect(t.starts().length).toBe(before);
  });

  it("tick: with a threshold of 1 the quarantine reason says '1 failure' (singular)", async () => {
    const provider = new FakeProvider({ city: "t" });
    provider.failAlways("start", new Error("boom"), "crashy");
    const store = openMemoryStore({ singleTenant: true, now: () => 1_000_000 });
    const r = new Reconciler({
      store,
      providerFor: async () => provider,
      loadDesired: async () => [want("crashy")],
      baseProviders: ["fake"],
      policy: { ...DEFAULT_POLICY, quarantineThreshold: 1 },
      concurrency: 1,
      drainTimeoutMs: 100,
      now: () => 1_000_000,
    });
    await r.tick();
    expect(await store.get("crashy")).toMatchObject({
      state: "quarantined",
      quarantineReason: expect.stringMatching(
        /^1 failure within the quarantine window; last: start failed: boom/,
      ),
    });
  });

  it("tick: a crash while running is detected and restarted after backoff", async () => {
    const t = setup([want("a")]);
    await t.reconciler.tick();
    t.provider.crash("a");
    const r = await t.reconciler.tick({ onProgress: (e) => t.progress.push(e) });
    expect(r.plan.actions[0]).toMatchObject({ kind: "crashed" });
    expect((await t.store.get("a"))?.state).toBe("backoff");
    // The log line says why it crashed, not only until when it backs off.
    const done = t.progress.find((e) => e.action === "crashed" && e.phase === "done");
    expect(done?.detail).toMatch(/^died \(.*\); backing off until /);
    t.advance(10_000);
    await t.reconciler.tick();
    expect(await t.store.get("a")).toMatchObject({ state: "running", generation: 2 });
  });

  it("tick: touches no session an operator's command holds (no crash record, no start); the next tick acts", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    const lock = await t.store.tryLock("a", { purpose: "gc session kill" });
    t.provider.crash("a");
    const progress: ProgressEvent[] = [];
    const r = await t.reconciler.tick({ onProgress: (e) => progress.push(e) });
    expect(r.plan.actions).toMatchObject([{ kind: "crashed", name: "a" }]);
    expect(r.outcomes.every((o) => o.ok)).toBe(true);
    // Reported as skipped, not as done, and not counted as taken.
    expect(r.outcomes.map((o) => o.skipped)).toEqual([true]);
    expect(progress.map(progressLine)).toEqual([
      `crashed  a skipped this pass (session busy (gc session kill, pid ${process.pid}))`,
    ]);
    expect(summaryLine(summarizeTick(r))).toBe("2 desired: nothing done, 1 skipped (busy)");
    expect(await t.store.get("a")).toMatchObject({ state: "running", generation: 1, restarts: 0 });
    await lock.release();
    await t.reconciler.tick();
    expect((await t.store.get("a"))?.state).toBe("backoff");
    // A start waits for the lock too.
    const again = await t.store.tryLock("a", { purpose: "gc session restart" });
    t.advance(10_000);
    await t.reconciler.tick();
    expect((await t.store.get("a"))?.state).toBe("backoff");
    expect(t.starts()).toEqual(["a", "b"]);
    await again.release();
    await t.reconciler.tick();
    expect(await t.store.get("a")).toMatchObject({ state: "running", generation: 2 });
    expect(t.starts()).toEqual(["a", "b", "a"]);
  });

  it("tick: an action whose record changed after the plan read it is not taken (a command that finished meanwhile)", async () => {
    const t = setup([want("a")]);
    await t.reconciler.tick();
    t.provider.crash("a");
    // An operator's kill runs and finishes while the pass observes: the plan saw a crash.
    const listRunning = t.provider.listRunning.bind(t.provider);
    t.provider.listRunning = async (prefix, opts) => {
      const out = await listRunning(prefix, opts);
      t.provider.listRunning = listRunning;
      await walkTo(t.store, "a", "stopped", "killed by operator (gc session kill)");
      return out;
    };
    const r = await t.reconciler.tick();
    expect(r.plan.actions).toMatchObject([{ kind: "crashed", name: "a" }]);
    expect(await t.store.get("a")).toMatchObject({ state: "stopped", restarts: 0 });
    await t.reconciler.tick();
    expect(await t.store.get("a")).toMatchObject({ state: "running", generation: 2, restarts: 0 });
  });

  it("tick: stops an undesired session of ours, never a foreign one", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    const foreign = new FakeProvider({ city: "other", backend: t.backend });
    await foreign.start("theirs", { command: "x", workDir: "/", env: {} });
    t.set([want("a")]);
    await t.reconciler.tick();
    expect(await t.provider.isRunning("b")).toBe(false);
    expect(await t.store.get("b")).toBeUndefined();
    expect(await foreign.isRunning("theirs")).toBe(true);
  });

  it("tick: a start that meets SessionExists adopts only a session of ours that runs", async () => {
    const t = setup([want("a")]);
    // Another city's session holds the name: the start fails (backoff), nothing is "running".
    const foreign = new FakeProvider({ city: "other", backend: t.backend });
    await foreign.start("a", { command: "x", workDir: "/", env: {} });
    const r = await t.reconciler.tick();
    expect(r.outcomes[0]).toMatchObject({ ok: false });
    const rec = await t.store.get("a");
    expect(rec?.state).toBe("backoff");
    expect(rec?.lastError).toMatch(/name is taken, but no session of ours runs under it/);
    expect(r.requeueAt).toBeDefined();
    // Once the name is free, the retry after the backoff starts it.
    await foreign.stop("a");
    t.advance(60_000);
    await t.reconciler.tick();
    expect(await t.store.get("a")).toMatchObject({ state: "running" });
    expect(await t.provider.isRunning("a")).toBe(true);
  });

  it("tick: adopts sessions that survived a lost store without duplicates", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    const { fresh, r2 } = restartedController(t.provider, [want("a"), want("b")]);
    const r = await r2.tick();
    expect(r.plan.actions.map((a) => a.kind)).toEqual(["adopt", "adopt"]);
    expect(t.starts().length).toBe(2);
    expect(await fresh.get("a")).toMatchObject({ state: "running", coreHash: want("a").core });
    expect((await r2.tick()).plan.actions).toEqual([]);
  });

  it("tick: a session adopted without its fingerprint (controller killed mid-start) is restarted at the next pass, due at once", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    // "b" was started, but the controller died before recording its fingerprint.
    await t.provider.setMeta("b", META_CORE, "");
    const { r2 } = restartedController(t.provider, [want("a"), want("b")]);
    const r = await r2.tick();
    expect(r.plan.actions.map((a) => a.kind)).toEqual(["adopt", "adopt"]);
    expect(r.requeueAt).toBe(1_000_000);
    expect((await r2.tick()).plan.actions.map((a) => [a.kind, a.name])).toEqual([["restart", "b"]]);
    // In sync: no pass is due early.
    expect((await r2.tick()).requeueAt).toBeUndefined();
  });

  it("tick: an invalid config keeps the last good one and touches nothing", async () => {
    const t = setup([want("a")]);
    await t.reconciler.tick();
    const bad = new Reconciler({
      store: t.store,
      providerFor: async () => t.provider,
      loadDesired: async () => {
        throw new Error("city.yaml:3:1: broken");
      },
      baseProviders: ["fake"],
      policy: DEFAULT_POLICY,
      concurrency: 4,
      drainTimeoutMs: 100,
    });
    const r = await bad.tick();
    expect(r.configError).toContain("broken");
    expect(r.plan.actions).toEqual([]);
    expect(await t.provider.isRunning("a")).toBe(true);
  });

  it("tick: a failed observation stops nothing", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    t.set([]);
    t.provider.failNext("listRunning", new Error("backend unreachable"));
    const r = await t.reconciler.tick();
    expect(r.observeErrors).toHaveLength(1);
    expect(r.plan.actions.some((a) => a.kind === "stop")).toBe(false);
    expect(await t.provider.isRunning("a")).toBe(true);
  });

  it("tick: dependencies start first", async () => {
    const t = setup([want("w", {}, { dependsOn: ["m"] }), want("m")]);
    await t.reconciler.tick();
    expect(t.starts()).toEqual(["m", "w"]);
  });

  it("tick: a failing stop backs off (policy backoff, doubling) instead of retrying every pass", async () => {
    const t = setup([want("a"), want("b")]);
    await t.reconciler.tick();
    t.provider.failAlways("stop", new Error("boom"), "b");
    t.set([want("a")]);
    const stops = () => t.provider.calls.filter((c) => c.method === "stop" && c.name === "b").length;
    const first = await t.reconciler.tick();
    expect(first.outcomes.find((o) => o.action.name === "b")).toMatchObject({ ok: false });
    expect(stops()).toBe(1);
    expect(first.requeueAt).toBe(1_000_000 + 1_000); // backoff.min (1 s, no jitter at 0.5)
    // Passes inside the backoff do not retry; the plan says why and when.
    const waiting = await t.reconciler.tick();
    expect(waiting.plan.actions.find((a) => a.name === "b")).toMatchObject({
      kind: "wait",
      untilMs: 1_001_000,
    });
    expect(stops()).toBe(1);
    t.advance(1_000);
    await t.reconciler.tick();
    expect(stops()).toBe(2);
    t.advance(1_000); // the second failure doubled the delay: not yet
    await t.reconciler.tick();
    expect(stops()).toBe(2);
    t.advance(1_000);
    t.provider.clearFailures();
    await t.reconciler.tick();
    expect(stops()).toBe(3);
  });

  it("tick: a failing run-live backs off too", async () => {
    const t = setup([want("a")]);
    await t.reconciler.tick();
    t.provider.failAlways("runLive", new Error("boom"), "a");
    t.set([want("a", { sessionLive: ["echo live"] })]);
    const runs = () => t.provider.calls.filter((c) => c.method === "runLive").length;
    await t.reconciler.tick();
    await t.reconciler.tick();
    expect(runs()).toBe(1);
    t.advance(1_000);
    await t.reconciler.tick();
    expect(runs()).toBe(2);
  });
});

describe("observe: sessions lost with their infrastructure (Observation.vanished)", () => {
  const expectRunning = (names: string[]) => new Map(names.map((n) => [n, "p"]));
  async function vanishedOf(p: Provider, names: string[]) {
    const { observation, errors } = await observe(["p"], async () => p, expectRunning(names));
    expect(errors).toEqual([]);
    return [...(observation.vanished ?? [])].sort();
  }

  it.each<[string, SessionEnd | Error | undefined, boolean]>([
    ["ended from outside (engine restart, kill, removal): infrastructure lost", "infrastructure", true],
    ["its own program ended (any code, a signal, OOM): a crash", "program", false],
    ["the provider cannot tell: a crash", undefined, false],
    ["the provider's answer failed: a crash", new Error("engine hiccup"), false],
  ])("a provider that tells how sessions ended (docker): %s", async (_, end, lost) => {
    const p = new EndingFake({ city: "t" });
    await p.start("a", { command: "x", workDir: "/w", env: {} });
    await p.start("up", { command: "x", workDir: "/w", env: {} });
    p.crash("a");
    if (end !== undefined) p.ends.set("a", end);
    p.ends.set("up", "infrastructure"); // still running: never asked about, never vanished
    expect(await vanishedOf(p, ["a", "up"])).toEqual(lost ? ["a"] : []);
  });

  it("a provider that keeps ended sessions with their status (tmux, subprocess, k8s): unchanged", async () => {
    const p = new KeepingFake({ city: "t" });
    p.dead.add("listed-dead"); // its program died: the provider still lists it
    p.exits.set("exited", { code: 3, signal: null, at: new Date(5_000) });
    const r = await observe(["p"], async () => p, expectRunning(["gone", "listed-dead", "exited"]));
    expect([...(r.observation.vanished ?? [])]).toEqual(["gone"]);
    expect(r.observation.exits.get("exited")).toEqual({ code: 3, signal: null, at: 5_000 });
  });

  it("a provider with neither (exec, fake): every session that is gone is a crash", async () => {
    const p = new FakeProvider({ city: "t" });
    expect(await vanishedOf(p, ["a", "b"])).toEqual([]);
  });

  it("tick: the orphans of a fleet lost with its engine are looked for once, though the start budget spreads its restarts over passes", async () => {
    /** Kills orphans like tmux and subprocess: one census per call, each orphan with its session. */
    class OrphanFake extends EndingFake {
      readonly censuses: string[][] = [];
      async killOrphans(names: readonly string[]): Promise<CensusEntry[]> {
        this.censuses.push([...names].sort());
        return names.map((session, i) => ({
          pid: 100 + i,
          comm: "sleep",
          startTime: "1",
          orphan: true,
          session,
        }));
      }
    }
    const p = new OrphanFake({ city: "t" });
    const t = setup([want("a"), want("b"), want("c")], p, { ...DEFAULT_POLICY, startBudget: 1 });
    for (let i = 0; i < 3; i++) await t.reconciler.tick();
    expect(t.starts().sort()).toEqual(["a", "b", "c"]);
    for (const n of ["a", "b", "c"]) {
      p.crash(n);
      p.ends.set(n, "infrastructure");
    }
    const first = await t.reconciler.tick();
    expect(
      first.plan.actions.map((a) => `${a.kind}:${a.name}${a.kind === "wait" && a.lost ? ":lost" : ""}`),
    ).toEqual(["start:a", "wait:b:lost", "wait:c:lost"]);
    for (let i = 0; i < 2; i++) await t.reconciler.tick();
    expect(t.starts().sort()).toEqual(["a", "a", "b", "b", "c", "c"]);
    expect(p.censuses).toEqual([["a", "b", "c"]]);
    const pids = new Map<string, unknown>();
    for (const n of ["a", "b", "c"]) {
      const [e] = await t.store.queryEvents({ session: n, types: ["session.infrastructure-lost"] });
      pids.set(n, e?.payload.orphanPids);
    }
    expect(Object.fromEntries(pids)).toEqual({ a: [100], b: [101], c: [102] });
  });

  it("tick: a fleet killed with its engine is started again at once, RESTARTS and crash history untouched; a program's exit still counts", async () => {
    const p = new EndingFake({ city: "t" });
    const t = setup([want("a"), want("b"), want("c")], p);
    await t.reconciler.tick();
    for (const n of ["a", "b", "c"]) p.crash(n);
    p.ends.set("a", "infrastructure");
    p.ends.set("b", "infrastructure");
    p.ends.set("c", "program");
    const r = await t.reconciler.tick();
    expect(r.plan.actions.map((a) => `${a.kind}:${a.name}`).sort()).toEqual([
      "crashed:c",
      "start:a",
      "start:b",
    ]);
    for (const n of ["a", "b"]) {
      expect(await t.store.get(n)).toMatchObject({ state: "running", restarts: 0, recentFailures: [] });
      expect((await t.store.get(n))?.metadata["gc.infra-losses"]).toBe("1");
      expect(await t.store.queryEvents({ session: n, types: ["session.infrastructure-lost"] })).toHaveLength(
        1,
      );
    }
    expect(await t.store.get("c")).toMatchObject({ state: "backoff" });
    expect((await t.store.get("c"))?.recentFailures).toHaveLength(1);
    expect(t.starts().sort()).toEqual(["a", "a", "b", "b", "c"]);
  });
});
