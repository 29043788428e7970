import { describe, expect, it } from "vitest";
import { sessionDrift } from "../../internal/controller/drift-report.js";
import { driftView } from "../../internal/controller/sessions.js";
import { driftOf, inSync } from "../../internal/reconcile/drift.js";
import type { DesiredSession } from "../../internal/reconcile/execute.js";
import { DEFAULT_POLICY, plan } from "../../internal/reconcile/plan.js";
import { fingerprint } from "../../internal/runtime/fingerprint.js";
import type { SessionRecord } from "../../internal/session/store.js";

const NOW = 1_000_000_000;
const BREAKDOWN = { command: { hash: "c1", value: "sleep 1" } };
const SEALED_RAW = { hash: "t-raw", value: "[redacted]", secret: true };
const SEALED = { hash: "t-keyed", value: "[redacted]", secret: true };

function want(over: Partial<DesiredSession> = {}): DesiredSession {
  return {
    name: "a",
    agent: "a",
    provider: "tmux",
    dependsOn: [],
    suspended: false,
    core: "v1:core",
    live: "v1:live",
    breakdown: BREAKDOWN,
    config: { command: "sleep 1", workDir: "/tmp", env: {} },
    ...over,
  };
}

function rec(over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    name: "a",
    agent: "a",
    provider: "tmux",
    state: "running",
    stateReason: "test",
    stateChangedAt: NOW - 1000,
    generation: 1,
    version: 1,
    coreHash: "v1:core",
    liveHash: "v1:live",
    breakdown: BREAKDOWN,
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

/** What the planner does with one running session. */
function planned(r: SessionRecord, d: DesiredSession) {
  const observed = {
    running: new Set(["a"]),
    unobservable: new Set<string>(),
    exits: new Map(),
    providerOf: new Map(),
  };
  const { actions } = plan({
    desired: [d],
    observed,
    records: [r],
    now: NOW,
    policy: DEFAULT_POLICY,
    random: () => 0.5,
  });
  return actions[0]?.kind ?? "none";
}

const CASES: [string, SessionRecord, DesiredSession, "none" | "core" | "live", string][] = [
  ["in sync", rec(), want(), "none", "none"],
  ["provider changed", rec(), want({ provider: "subprocess" }), "core", "restart"],
  [
    "command changed",
    rec(),
    want({ core: "v1:other", breakdown: { command: { hash: "c2", value: "sleep 2" } } }),
    "core",
    "restart",
  ],
  ["session_live changed", rec(), want({ live: "v1:live2" }), "live", "run-live"],
  [
    "only the prompt changed (a start-only field)",
    rec({ breakdown: { ...BREAKDOWN, prompt: { hash: "p1", value: "old" } } }),
    want({ breakdown: { ...BREAKDOWN, prompt: { hash: "p2", value: "new" } } }),
    "none",
    "none",
  ],
  // Recorded before the city had a fingerprint key (its secret hashed raw): the same start.
  [
    "recorded unkeyed, same config",
    rec({
      coreHash: "v1:raw-core",
      liveHash: "v1:raw-live",
      breakdown: { ...BREAKDOWN, "env.API_TOKEN": SEALED_RAW },
    }),
    want({
      legacy: { core: "v1:raw-core", live: "v1:raw-live" },
      breakdown: { ...BREAKDOWN, "env.API_TOKEN": SEALED },
    }),
    "none",
    "rekey",
  ],
  [
    "recorded unkeyed, session_live changed",
    rec({ coreHash: "v1:raw-core", liveHash: "v1:raw-live" }),
    want({ live: "v1:live2", legacy: { core: "v1:raw-core", live: "v1:raw-live2" } }),
    "live",
    "run-live",
  ],
  [
    "recorded unkeyed, a secret changed",
    rec({ coreHash: "v1:raw-core-old", liveHash: "v1:raw-live" }),
    want({ legacy: { core: "v1:raw-core", live: "v1:raw-live" } }),
    "core",
    "restart",
  ],
  [
    "recorded keyed, same config",
    rec(),
    want({ legacy: { core: "v1:raw-core", live: "v1:raw-live" } }),
    "none",
    "none",
  ],
];

describe("drift is decided in one place", () => {
  it.each(CASES)("%s: gc status, gc drift and the planner agree", (_what, r, d, kind, action) => {
    expect(driftOf(r, d).kind).toBe(kind);
    expect(inSync(r, d)).toBe(kind === "none"); // the planner's shortcut for the common case
    expect(driftView(r, d).drift).toBe(kind);
    expect(planned(r, d)).toBe(action);
  });

  it("a core drift also reports a session_live change (the restart applies both)", () => {
    const d = want({
      core: "v1:other",
      live: "v1:live2",
      breakdown: {
        ...BREAKDOWN,
        command: { hash: "c2", value: "sleep 2" },
        sessionLive: { hash: "l2", value: "x" },
      },
    });
    const r = rec({ breakdown: { ...BREAKDOWN, sessionLive: { hash: "l1", value: "y" } } });
    const drift = driftOf(r, d);
    expect(drift.kind).toBe("core");
    expect(drift.reason).toBe("config drift: command");
    expect(drift.fields.map((f) => f.field).sort()).toEqual(["command", "sessionLive"]);
    expect(
      sessionDrift("a", r, d)
        .fields.map((f) => [f.field, f.effect])
        .sort(),
    ).toEqual([
      ["command", "restart"],
      ["sessionLive", "restart"],
    ]);
    expect(sessionDrift("a", rec(), want({ live: "v1:live2" })).drift).toBe("live");
  });

  it("a start-only field (work dir, prompt, nudge) waits for the next start: next-start under none and live, part of the restart under core", () => {
    const started = {
      ...BREAKDOWN,
      workDir: { hash: "w1", value: "/a" },
      sessionLive: { hash: "l1", value: "y" },
    };
    const moved = {
      ...BREAKDOWN,
      workDir: { hash: "w2", value: "/b" },
      sessionLive: { hash: "l2", value: "x" },
    };
    const effects = (r: SessionRecord, d: DesiredSession) =>
      sessionDrift("a", r, d).fields.map((f) => [f.field, f.effect]);
    const r = rec({ breakdown: started });
    expect(driftOf(r, want({ breakdown: moved })).nextStart.map((f) => f.field)).toEqual(["workDir"]);
    expect(effects(r, want({ breakdown: moved }))).toEqual([["workDir", "next-start"]]);
    expect(effects(r, want({ live: "v1:live2", breakdown: moved }))).toEqual([
      ["sessionLive", "live"],
      ["workDir", "next-start"],
    ]);
    const core = driftOf(r, want({ core: "v1:other", breakdown: moved }));
    expect([core.kind, core.reason, core.nextStart]).toEqual(["core", "config drift: (fingerprint)", []]);
    expect(effects(r, want({ core: "v1:other", breakdown: moved }))).toEqual([
      ["sessionLive", "restart"],
      ["workDir", "restart"],
    ]);
  });

  it("a record matched by its unkeyed hashes is in sync (the planner re-records it) and shows no field: the secret's per-field hash differs by the key alone", () => {
    const r = rec({
      coreHash: "v1:raw-core",
      liveHash: "v1:raw-live",
      breakdown: { ...BREAKDOWN, "env.API_TOKEN": SEALED_RAW },
    });
    const d = want({
      legacy: { core: "v1:raw-core", live: "v1:raw-live" },
      breakdown: { ...BREAKDOWN, "env.API_TOKEN": SEALED },
    });
    expect(driftOf(r, d)).toEqual({
      kind: "none",
      fields: [],
      nextStart: [],
      reason: "in sync",
    });
    expect(planned(r, d)).toBe("rekey");
    expect(sessionDrift("a", r, d)).toEqual({ session: "a", drift: "none", fields: [] });
    // session_live changed too: only sessionLive is named (not the secret's field).
    const live = driftOf(r, {
      ...d,
      live: "v1:live2",
      legacy: { core: "v1:raw-core", live: "v1:raw-live2" },
    });
    expect([live.kind, live.fields.map((f) => f.field)]).toEqual(["live", []]);
  });

  it("a provider change names the provider as the changed field", () => {
    expect(driftOf(rec(), want({ provider: "subprocess" })).fields[0]).toEqual({
      field: "provider",
      from: "tmux",
      to: "subprocess",
    });
  });

  it("a record made before the key whose config really changed names only what changed (not the secret fields, which differ by the key alone)", () => {
    const cfg = { command: "sleep 1", workDir: "/w", env: { API_TOKEN: "hunter2-token", FOO: "1" } };
    const old = fingerprint(cfg);
    const now = fingerprint({ ...cfg, env: { ...cfg.env, FOO: "2" } }, {}, [], [], {}, Buffer.alloc(32, 3));
    const r = rec({ coreHash: old.core, liveHash: old.live, breakdown: old.breakdown });
    const d = want({ core: now.core, live: now.live, breakdown: now.breakdown, legacy: now.legacy });
    const drift = driftOf(r, d);
    expect([drift.kind, drift.reason]).toEqual(["core", "config drift: env.FOO"]);
    expect(drift.fields).toEqual([{ field: "env.FOO", from: "1", to: "2" }]);
  });
});
