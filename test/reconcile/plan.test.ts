import { describe, expect, it } from "vitest";
import {
  type Action,
  backoffDelayMs,
  crashAction,
  DEFAULT_POLICY,
  type DesiredEntry,
  massStopOf,
  type Observation,
  type PlanInput,
  plan,
  QUARANTINED_CORE_KEY,
  withoutStops,
} from "../../internal/reconcile/plan.js";
import { pathTo } from "../../internal/reconcile/walk.js";
import type { LifecycleState } from "../../internal/session/lifecycle.js";
import type { ExitInfo, SessionRecord } from "../../internal/session/store.js";

const NOW = 1_000_000_000;

function desired(name: string, over: Partial<DesiredEntry> = {}): DesiredEntry {
  return {
    name,
    agent: over.agent ?? name,
    provider: "tmux",
    dependsOn: [],
    suspended: false,
    core: "v1:core",
    live: "v1:live",
    breakdown: { command: { hash: "c1", value: "sleep 1" }, env: { hash: "e1", value: "" } },
    ...over,
  };
}

function record(name: string, state: LifecycleState, over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    name,
    agent: name,
    provider: "tmux",
    state,
    stateReason: "test",
    stateChangedAt: NOW - 1000,
    generation: 1,
    version: 1,
    coreHash: "v1:core",
    liveHash: "v1:live",
    breakdown: { command: { hash: "c1", value: "sleep 1" }, env: { hash: "e1", value: "" } },
    restarts: 0,
    recentFailures: [],
    backoffUntil: null,
    quarantineReason: null,
    lastError: null,
    lastExit: null,
    createdAt: NOW - 100_000,
    updatedAt: NOW - 1000,
    startedAt: NOW - 60_000,
    metadata: {},
    pending: null,
    ...over,
  };
}

function observed(running: string[], over: Partial<Observation> = {}): Observation {
  return {
    running: new Set(running),
    unobservable: new Set(),
    exits: new Map(),
    providerOf: new Map(running.map((n) => [n, "tmux"])),
    ...over,
  };
}

function run(input: Partial<PlanInput>): Action[] {
  return [
    ...plan({
      desired: [],
      observed: observed([]),
      records: [],
      now: NOW,
      policy: DEFAULT_POLICY,
      random: () => 0.5,
      ...input,
    }).actions,
  ];
}

const kinds = (a: Action[]) => a.map((x) => `${x.kind}:${x.name}`);

describe("plan", () => {
  it("plan: missing session with no record → start", () => {
    expect(kinds(run({ desired: [desired("a")] }))).toEqual(["start:a"]);
  });

  it("plan: in sync → nothing", () => {
    expect(
      run({ desired: [desired("a")], observed: observed(["a"]), records: [record("a", "running")] }),
    ).toEqual([]);
  });

  it("plan: running without a record → adopt (controller crashed)", () => {
    expect(kinds(run({ desired: [desired("a")], observed: observed(["a"]) }))).toEqual(["adopt:a"]);
  });

  it("plan: core drift → restart naming the drifted fields", () => {
    const d = desired("a", {
      core: "v1:new",
      breakdown: { command: { hash: "c2", value: "sleep 2" }, env: { hash: "e1", value: "" } },
    });
    const [a] = run({ desired: [d], observed: observed(["a"]), records: [record("a", "running")] });
    expect(a).toMatchObject({ kind: "restart", name: "a", fields: ["command"] });
    expect(a?.reason).toContain("command");
  });

  it("plan: live-only drift → run-live, no restart", () => {
    const d = desired("a", { live: "v1:live2" });
    expect(
      kinds(run({ desired: [d], observed: observed(["a"]), records: [record("a", "running")] })),
    ).toEqual(["run-live:a"]);
  });

  it("plan: core and live drift together → one restart only", () => {
    const d = desired("a", { core: "v1:x", live: "v1:y" });
    expect(
      kinds(run({ desired: [d], observed: observed(["a"]), records: [record("a", "running")] })),
    ).toEqual(["restart:a"]);
  });

  it("plan: ours, running, undesired → stop", () => {
    const a = run({ observed: observed(["old"]), records: [record("old", "running")] });
    expect(a).toEqual([{ kind: "stop", name: "old", reason: "no longer desired", forget: true }]);
  });

  it("plan: orphan without a record → stop", () => {
    expect(run({ observed: observed(["orphan"]) })[0]).toMatchObject({
      kind: "stop",
      reason: "orphan of this city",
    });
  });

  it("plan: partial observation → no stops at all, and no action on the unobservable provider", () => {
    const a = run({
      desired: [desired("a", { provider: "k8s" }), desired("b")],
      observed: observed(["old"], { unobservable: new Set(["k8s"]) }),
      records: [record("a", "running", { provider: "k8s" })],
    });
    expect(a.some((x) => x.kind === "stop")).toBe(false);
    expect(a.find((x) => x.name === "a")?.kind).toBe("wait");
    expect(a.find((x) => x.name === "old")?.kind).toBe("wait");
    expect(a.find((x) => x.name === "b")?.kind).toBe("start");
  });

  it("plan: record for an undesired, stopped session → forget", () => {
    expect(kinds(run({ records: [record("gone", "stopped")] }))).toEqual(["forget:gone"]);
  });

  it("plan: running record but not observed → crashed with backoff", () => {
    const exit: ExitInfo = { code: 3, signal: null, at: NOW - 10 };
    const [a] = run({
      desired: [desired("a")],
      observed: observed([], { exits: new Map([["a", exit]]) }),
      records: [record("a", "running")],
    });
    expect(a).toMatchObject({ kind: "crashed", failure: true, next: { kind: "backoff" } });
    expect(a?.reason).toContain("exit code 3");
  });

  it("plan: a clean exit after a healthy run is not a failure and restarts now", () => {
    const [a] = run({
      desired: [desired("a")],
      observed: observed([], { exits: new Map([["a", { code: 0, signal: null, at: NOW }]]) }),
      records: [record("a", "running", { startedAt: NOW - 3_600_000 })],
    });
    expect(a).toMatchObject({ kind: "crashed", failure: false, next: { kind: "restart-now" } });
  });

  it("plan: exit 0 right after start is still a failure (crash loop)", () => {
    const [a] = run({
      desired: [desired("a")],
      observed: observed([], { exits: new Map([["a", { code: 0, signal: null, at: NOW }]]) }),
      records: [record("a", "running", { startedAt: NOW - 100 })],
    });
    expect(a).toMatchObject({ kind: "crashed", failure: true });
  });

  it("plan: the fifth failure within the window quarantines", () => {
    const failures = [NOW - 40_000, NOW - 30_000, NOW - 20_000, NOW - 10_000];
    const [a] = run({
      desired: [desired("a")],
      records: [record("a", "running", { recentFailures: failures })],
    });
    expect(a).toMatchObject({ kind: "crashed", next: { kind: "quarantine" } });
  });

  it("plan: failures outside the window do not count", () => {
    const failures = [NOW - 900_000, NOW - 800_000, NOW - 700_000, NOW - 600_000];
    const [a] = run({
      desired: [desired("a")],
      records: [record("a", "running", { recentFailures: failures })],
    });
    expect(a).toMatchObject({ kind: "crashed", next: { kind: "backoff" } });
  });

  it("plan: backoff not yet elapsed → wait with requeue time", () => {
    const p = plan({
      desired: [desired("a")],
      observed: observed([]),
      records: [record("a", "backoff", { backoffUntil: NOW + 5000 })],
      now: NOW,
      policy: DEFAULT_POLICY,
      random: () => 0.5,
    });
    expect(p.actions[0]).toMatchObject({ kind: "wait", untilMs: NOW + 5000 });
    expect(p.requeueAt).toBe(NOW + 5000);
  });

  it("plan: backoff elapsed → start", () => {
    expect(
      kinds(run({ desired: [desired("a")], records: [record("a", "backoff", { backoffUntil: NOW - 1 })] })),
    ).toEqual(["start:a"]);
  });

  it("plan: quarantined stays down until reset", () => {
    expect(
      run({ desired: [desired("a")], records: [record("a", "quarantined", { quarantineReason: "x" })] })[0],
    ).toMatchObject({ kind: "wait" });
    // Same start config as at the quarantine: still down.
    const same = { quarantineReason: "x", metadata: { [QUARANTINED_CORE_KEY]: "v1:core" } };
    expect(run({ desired: [desired("a")], records: [record("a", "quarantined", same)] })[0]).toMatchObject({
      kind: "wait",
    });
  });

  it("plan: a running session that vanished with its backend restarts at once, not as a crash", () => {
    const recs = [record("a", "running"), record("b", "running")];
    const obs = observed([], { vanished: new Set(["a"]) });
    const [a, b] = run({ desired: [desired("a"), desired("b")], records: recs, observed: obs });
    expect(a).toMatchObject({ kind: "start", name: "a", infra: true });
    expect(b).toMatchObject({ kind: "crashed", name: "b", failure: true }); // no exit known, but listed dead
  });

  it.each([
    ["tmux", "infrastructure lost (the tmux session vanished with its backend)"],
    ["docker", "infrastructure lost (the docker session vanished with its backend)"],
  ])(
    "plan: a %s fleet one failure short of quarantine, lost with its backend, starts again; a program death among it is quarantined",
    (provider, reason) => {
      const failures = Array.from(
        { length: DEFAULT_POLICY.quarantineThreshold - 1 },
        (_, i) => NOW - 1000 * (i + 1),
      );
      const recs = ["a", "b", "c"].map((n) => record(n, "running", { provider, recentFailures: failures }));
      const obs = observed([], { vanished: new Set(["a", "b"]) });
      const actions = run({
        desired: ["a", "b", "c"].map((n) => desired(n, { provider })),
        records: recs,
        observed: obs,
      });
      expect(actions).toEqual([
        { kind: "start", name: "a", reason, infra: true },
        { kind: "start", name: "b", reason, infra: true },
        expect.objectContaining({ kind: "crashed", name: "c", failure: true, next: { kind: "quarantine" } }),
      ]);
    },
  );

  it("plan: a changed start config lifts quarantine (start, naming the changed fields)", () => {
    const q = record("a", "quarantined", {
      quarantineReason: "x",
      metadata: { [QUARANTINED_CORE_KEY]: "v1:core" },
    });
    const fixed = desired("a", {
      core: "v2:core",
      breakdown: { command: { hash: "c2", value: "sleep 2" }, env: { hash: "e1", value: "" } },
    });
    expect(run({ desired: [fixed], records: [q] })[0]).toMatchObject({
      kind: "start",
      reason: "quarantine lifted: the start config changed (command)",
    });
  });

  it("plan: a quarantine recorded before the city had a fingerprint key is re-recorded and stays (its unkeyed core is the same config)", () => {
    const q = record("a", "quarantined", {
      quarantineReason: "x",
      coreHash: "v1:raw",
      metadata: { [QUARANTINED_CORE_KEY]: "v1:raw" },
    });
    const same = desired("a", { core: "v1:keyed", legacy: { core: "v1:raw", live: "v1:live" } });
    // First re-recorded keyed (record and the quarantine's note), then it waits as before.
    expect(run({ desired: [same], records: [q] })[0]).toMatchObject({ kind: "rekey" });
    const rekeyed = record("a", "quarantined", {
      quarantineReason: "x",
      coreHash: "v1:keyed",
      metadata: { [QUARANTINED_CORE_KEY]: "v1:keyed" },
    });
    expect(run({ desired: [same], records: [rekeyed] })[0]).toMatchObject({
      kind: "wait",
      reason: "quarantined: x",
    });
    const changed = desired("a", { core: "v1:keyed2", legacy: { core: "v1:raw2", live: "v1:live" } });
    expect(run({ desired: [changed], records: [q] })[0]).toMatchObject({ kind: "start" });
  });

  it("plan: a secret only in session_live (keyed and unkeyed core equal): a quarantined record is re-recorded once, not every pass", () => {
    const d = desired("a", { live: "v1:live-keyed", legacy: { core: "v1:core", live: "v1:live" } });
    const q = record("a", "quarantined", {
      quarantineReason: "x",
      metadata: { [QUARANTINED_CORE_KEY]: "v1:core" },
    });
    expect(run({ desired: [d], records: [q] })[0]).toMatchObject({ kind: "rekey" });
    const rekeyed = { ...q, liveHash: "v1:live-keyed" };
    expect(run({ desired: [d], records: [rekeyed] })[0]).toMatchObject({
      kind: "wait",
      reason: "quarantined: x",
    });
  });

  it("plan: a running session recorded unkeyed is re-recorded (rekey), never restarted", () => {
    const d = desired("a", {
      core: "v1:keyed",
      live: "v1:live-keyed",
      legacy: { core: "v1:core", live: "v1:live" },
    });
    const [a] = run({ desired: [d], observed: observed(["a"]), records: [record("a", "running")] });
    expect(a).toMatchObject({ kind: "rekey", name: "a" });
    // A real change is drift as ever (no rekey of a record that is not this config).
    const edited = desired("a", {
      core: "v1:k2",
      live: "v1:live-keyed",
      legacy: { core: "v1:c2", live: "v1:live" },
    });
    expect(
      run({ desired: [edited], observed: observed(["a"]), records: [record("a", "running")] })[0],
    ).toMatchObject({
      kind: "restart",
    });
    // Once re-recorded, nothing more to do.
    const done = record("a", "running", { coreHash: "v1:keyed", liveHash: "v1:live-keyed" });
    expect(run({ desired: [d], observed: observed(["a"]), records: [done] })).toEqual([]);
  });

  it("plan: a failed start's reason is the start error alone (no 'exit status unknown')", () => {
    const rec = record("a", "starting");
    const policy = DEFAULT_POLICY;
    expect(
      crashAction("a", rec, null, { now: NOW, policy, random: () => 0.5 }, "start failed: x", true).reason,
    ).toBe("start failed: x");
    expect(crashAction("a", rec, null, { now: NOW, policy, random: () => 0.5 }, "died").reason).toBe(
      "died (exit status unknown)",
    );
  });

  it("plan: a crash's reason carries the program's last output when the provider kept it", () => {
    const rec = record("a", "running");
    const opts = { now: NOW, policy: DEFAULT_POLICY, random: () => 0.5 };
    const exit = { code: 3, signal: null, at: NOW, lastOutput: "boom ⏎ config missing" };
    expect(crashAction("a", rec, exit, opts, "died").reason).toBe(
      "died (exit code 3; last output: boom ⏎ config missing)",
    );
    expect(crashAction("a", rec, { code: null, signal: "SIGKILL", at: NOW }, opts, "died").reason).toBe(
      "died (killed by SIGKILL)",
    );
  });

  it("plan: suspended in the file → suspend (stopping the runtime when up)", () => {
    expect(
      run({
        desired: [desired("a", { suspended: true })],
        observed: observed(["a"]),
        records: [record("a", "running")],
      })[0],
    ).toMatchObject({ kind: "suspend", stopRuntime: true });
    expect(
      run({ desired: [desired("a", { suspended: true })], records: [record("a", "suspended")] }),
    ).toEqual([]);
  });

  it("plan: interrupted start (record starting, nothing running) → start again", () => {
    expect(kinds(run({ desired: [desired("a")], records: [record("a", "starting")] }))).toEqual(["start:a"]);
  });

  it("plan: interrupted start that finished (starting + running) → adopt", () => {
    expect(
      kinds(run({ desired: [desired("a")], observed: observed(["a"]), records: [record("a", "starting")] })),
    ).toEqual(["adopt:a"]);
  });

  it("plan: interrupted drain → finish with a restart", () => {
    expect(
      kinds(run({ desired: [desired("a")], observed: observed(["a"]), records: [record("a", "draining")] })),
    ).toEqual(["restart:a"]);
  });

  it("plan: starts come in dependency order", () => {
    const a = run({
      desired: [desired("w", { dependsOn: ["m"] }), desired("x", { dependsOn: ["w"] }), desired("m")],
    });
    expect(kinds(a)).toEqual(["start:m", "start:w", "start:x"]);
  });

  it("plan: the start budget defers the rest", () => {
    const names = Array.from({ length: 5 }, (_, i) => `s${i}`);
    const a = run({ desired: names.map((n) => desired(n)), policy: { ...DEFAULT_POLICY, startBudget: 3 } });
    expect(a.filter((x) => x.kind === "start")).toHaveLength(3);
    expect(a.filter((x) => x.kind === "wait")).toHaveLength(2);
  });

  it("plan: starts deferred by the budget ask for the next pass at once, not at the interval", () => {
    const names = Array.from({ length: 5 }, (_, i) => `s${i}`);
    const p = plan({
      desired: names.map((n) => desired(n)),
      observed: observed([]),
      records: [],
      now: NOW,
      policy: { ...DEFAULT_POLICY, startBudget: 2 },
      random: () => 0.5,
    });
    expect(p.requeueAt).toBe(NOW);
    expect(p.actions.filter((x) => x.kind === "wait").map((x) => x.reason)).toEqual([
      "start budget of 2 per pass used up; next pass at once",
      "start budget of 2 per pass used up; next pass at once",
      "start budget of 2 per pass used up; next pass at once",
    ]);
  });

  it("plan: dependency order holds across many agents and pool instances (one depth per agent)", () => {
    const pool = Array.from({ length: 50 }, (_, i) => desired(`w-${i}`, { agent: "w", dependsOn: ["m"] }));
    const a = run({
      desired: [...pool, desired("x", { dependsOn: ["w"] }), desired("m")],
      policy: { ...DEFAULT_POLICY, startBudget: 100 },
    });
    expect(kinds(a)).toEqual(["start:m", ...pool.map((d) => `start:${d.name}`), "start:x"]);
  });

  it("plan: a foreign session is never in the observation, so never stopped", () => {
    // listRunning only reports sessions carrying this city's tag; plan only stops observed ones.
    expect(run({ desired: [], observed: observed([]) })).toEqual([]);
  });
});

describe("backoffDelayMs", () => {
  it("backoffDelayMs: doubles from 1 s and caps at 5 min, jitter within ±25 %", () => {
    const mid = () => 0.5;
    expect(backoffDelayMs(1, DEFAULT_POLICY, mid)).toBe(1000);
    expect(backoffDelayMs(2, DEFAULT_POLICY, mid)).toBe(2000);
    expect(backoffDelayMs(5, DEFAULT_POLICY, mid)).toBe(16000);
    expect(backoffDelayMs(30, DEFAULT_POLICY, mid)).toBe(300_000);
    expect(backoffDelayMs(3, DEFAULT_POLICY, () => 0)).toBe(3000);
    expect(backoffDelayMs(3, DEFAULT_POLICY, () => 0.999)).toBeLessThanOrEqual(5000);
    expect(backoffDelayMs(1, DEFAULT_POLICY, () => 0)).toBe(1000);
  });
});

describe("pathTo", () => {
  it("pathTo: finds the shortest legal path", () => {
    expect(pathTo("pending", "running")).toEqual(["starting", "running"]);
    expect(pathTo("crashed", "starting")).toEqual(["backoff", "starting"]);
    expect(pathTo("running", "stopped")).toEqual(["stopped"]);
    expect(pathTo("crashed", "quarantined")).toEqual(["backoff", "quarantined"]);
    expect(pathTo("running", "running")).toEqual([]);
    expect(pathTo("quarantined", "running")).toEqual(["pending", "starting", "running"]);
  });
});

describe("plan: operator hold", () => {
  it("plan: a session held by `gc stop NAME` is left down", () => {
    const a = run({
      desired: [desired("a")],
      records: [record("a", "suspended", { metadata: { "gc.hold": "stopped by operator" } })],
    });
    expect(a).toEqual([{ kind: "wait", name: "a", reason: "held by the operator: stopped by operator" }]);
  });
});

describe("plan: provider change", () => {
  it("plan: an agent moved to another provider is restarted (drained where it runs)", () => {
    const [a] = run({
      desired: [desired("a", { provider: "subprocess" })],
      observed: observed(["a"]),
      records: [record("a", "running", { provider: "tmux" })],
    });
    expect(a).toMatchObject({ kind: "restart", fields: ["provider"] });
    expect(a?.reason).toContain("tmux → subprocess");
  });
});

describe("mass-stop guard", () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => `s${i + 1}`);
  const planFor = (keep: number, running: number, percent?: number, operatorStops?: ReadonlySet<string>) => {
    const obs = observed(names(running));
    const p = plan({
      desired: names(keep).map((n) => desired(n)),
      observed: obs,
      records: names(running).map((n) => record(n, "running")),
      now: NOW,
      policy: DEFAULT_POLICY,
      random: () => 0.5,
    });
    return massStopOf(p, obs, percent, operatorStops);
  };
  it("massStopOf: trips above the percentage or at all (two or more), never for one stop", () => {
    expect(planFor(4, 10)?.stops).toHaveLength(6); // 60 % > 50 %
    expect(planFor(5, 10)).toBeUndefined(); // exactly half
    expect(planFor(0, 2)?.stops).toEqual(["s1", "s2"]); // all
    expect(planFor(0, 1)).toBeUndefined(); // a single stop never trips
    expect(planFor(7, 10, 20)?.percent).toBe(20); // daemon.mass_stop_percent: 20
    expect(planFor(7, 10, 40)).toBeUndefined();
  });
  it("massStopOf: stops the operator asked for (gc scale) count neither as stops nor as running", () => {
    expect(planFor(1, 3, undefined, new Set(["s2", "s3"]))).toBeUndefined(); // scale 3 → 1
    // Beside them, the rest is judged on its own: 2 of the 3 other running sessions is 67 %.
    expect(planFor(1, 5, undefined, new Set(["s4", "s5"]))?.stops).toEqual(["s2", "s3"]);
    expect(planFor(2, 5, undefined, new Set(["s4", "s5"]))).toBeUndefined(); // 1 stop never trips
    expect(planFor(0, 4, undefined, new Set(["s4"]))).toMatchObject({
      stops: ["s1", "s2", "s3"],
      running: 3,
    });
  });
  it("withoutStops: stops become waits with the reason; other actions stay", () => {
    const p = plan({
      desired: [desired("new")],
      observed: observed(["a", "b"]),
      records: [],
      now: NOW,
      policy: DEFAULT_POLICY,
      random: () => 0.5,
    });
    expect(kinds([...withoutStops(p, "guard").actions])).toEqual(["start:new", "wait:a", "wait:b"]);
  });
});
