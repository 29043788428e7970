/**
 * The reconciler's brain: a pure function from (desired sessions, one observation, store
 * records, clock) to the actions of one tick. Level-triggered: it never looks at events,
 * only at what is wanted and what is seen now. Table-tested in test/reconcile/plan.test.ts.
 */

import type { FieldFingerprint, LegacyFingerprints } from "../runtime/fingerprint.js";
import type { ExitInfo, SessionRecord } from "../session/store.js";
import { driftOf, inSync, sameCore, sameLive } from "./drift.js";

/** One session the city file wants, with its fingerprints. */
export interface DesiredEntry {
  readonly name: string;
  readonly agent: string;
  readonly provider: string;
  /**
   * Under a router (`auto`, `hybrid`): the backend the session is routed to. When that
   * backend could not be observed the session is neither started nor stopped.
   */
  readonly backend?: string | undefined;
  /** Agent names this session's agent depends on. */
  readonly dependsOn: readonly string[];
  readonly suspended: boolean;
  readonly core: string;
  readonly live: string;
  readonly breakdown: Readonly<Record<string, FieldFingerprint>>;
  /** Unkeyed hashes of a config holding secrets (fingerprint.ts `Fingerprints.legacy`); never stored. */
  readonly legacy?: LegacyFingerprints | undefined;
}

/** One observation of the runtime, taken once per tick. */
export interface Observation {
  /** Names of this city's sessions seen running, on the providers that answered. */
  readonly running: ReadonlySet<string>;
  /**
   * Providers whose listing failed this tick, and the backends of routers that failed
   * (a router's partial observation): their sessions are neither started nor stopped.
   */
  readonly unobservable: ReadonlySet<string>;
  /** How sessions that are not running ended, where the provider remembers. */
  readonly exits: ReadonlyMap<string, ExitInfo>;
  /** Provider of each running session, where known (for sessions with no record). */
  readonly providerOf: ReadonlyMap<string, string>;
  /**
   * Recorded-running sessions that went away with their infrastructure, not by their
   * program's end: their provider (one that keeps ended sessions with their exit status) no
   * longer knows them at all — the tmux server, the holder or the backend went away — or the
   * provider said so (a docker container killed from outside: engine restart, kill, removal).
   * An infrastructure event: restarted at once, not counted as a crash, never quarantined.
   */
  readonly vanished?: ReadonlySet<string> | undefined;
}

/**
 * Record metadata key set by `gc stop NAME`: while present the reconciler leaves the session
 * alone (down), whatever the city file says. `gc session reset|restart` clears it.
 */
export const HOLD_KEY = "gc.hold";

/**
 * Record metadata key counting infrastructure losses of the session (its tmux server, holder
 * or backend went away): restarts that are not crashes.
 */
export const INFRA_LOSSES_KEY = "gc.infra-losses";

/**
 * Record metadata key holding the core fingerprint the city file had when the session was
 * quarantined. A later core change (the operator fixed the command) lifts the quarantine.
 */
export const QUARANTINED_CORE_KEY = "gc.quarantined-core";

/**
 * Record metadata key set by a `rekey` and cleared once the store was compacted after it:
 * until then the replaced unkeyed hashes may linger in the store's files, and every pass
 * compacts (a controller killed in between leaves the mark for the next one).
 */
export const REKEYED_KEY = "gc.rekeyed";

/** Knobs of the crash-loop and start policies (city file `daemon:`). */
export interface PlanPolicy {
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
  /** Failures within `quarantineWindowMs` that quarantine a session. */
  readonly quarantineThreshold: number;
  readonly quarantineWindowMs: number;
  /** An exit after at least this much uptime with code 0 is a clean exit, not a failure. */
  readonly minHealthyUptimeMs: number;
  /**
   * At most this many starts (including restarts) per tick; the rest wait for the next
   * tick, which the plan asks for at once (`requeueAt` = now): the budget paces starts, it
   * never leaves work for the next interval.
   */
  readonly startBudget: number;
  /**
   * Set while bookkeeping is known to be lost (a damaged state.db was replaced): sessions
   * with no record are adopted when running but never started, because a hold set by
   * `gc stop NAME` may have been lost with the old file. Default false.
   */
  readonly holdUnrecorded?: boolean | undefined;
  /**
   * Mass-stop guard: a config change whose plan stops more than this percentage of the
   * running sessions (or all of them, at least two) is refused. Default
   * {@link DEFAULT_MASS_STOP_PERCENT}.
   */
  readonly massStopPercent?: number | undefined;
}

/** Default of {@link PlanPolicy.massStopPercent}: more than half. */
export const DEFAULT_MASS_STOP_PERCENT = 50;

/** Why the mass-stop guard refused a config. */
export interface MassStop {
  /** Sessions the refused config would stop. */
  readonly stops: readonly string[];
  /** Sessions running when it was refused. */
  readonly running: number;
  readonly percent: number;
}

/**
 * The mass-stop guard: trips when `p` stops (as no longer desired, or suspended) at least
 * two sessions and either more than `percent` % of the running ones or all of them. Restarts
 * do not count (they come back), nor do stops of `operatorStops` (pool instances `gc scale`
 * asked to stop): they leave both the stops and the running sessions counted. Pure.
 */
export function massStopOf(
  p: Plan,
  observed: Observation,
  percent = DEFAULT_MASS_STOP_PERCENT,
  operatorStops: ReadonlySet<string> = new Set(),
): MassStop | undefined {
  const stopped = p.actions
    .filter((a) => a.kind === "stop" || (a.kind === "suspend" && a.stopRuntime))
    .map((a) => a.name);
  const stops = stopped.filter((n) => !operatorStops.has(n));
  const running = observed.running.size - (stopped.length - stops.length);
  if (stops.length < 2) return undefined;
  if (stops.length * 100 > percent * running || stops.length >= running) return { stops, running, percent };
  return undefined;
}

/** `p` with every stop replaced by a wait (the guard tripped and there is no earlier config). Pure. */
export function withoutStops(p: Plan, why: string): Plan {
  return {
    ...p,
    actions: p.actions.map((a) =>
      a.kind === "stop" || (a.kind === "suspend" && a.stopRuntime)
        ? ({ kind: "wait", name: a.name, reason: why } as const)
        : a,
    ),
  };
}

/** Defaults matching architecture §6. */
export const DEFAULT_POLICY: PlanPolicy = {
  backoffMinMs: 1_000,
  backoffMaxMs: 5 * 60_000,
  quarantineThreshold: 5,
  quarantineWindowMs: 5 * 60_000,
  minHealthyUptimeMs: 10_000,
  startBudget: 20,
};

/**
 * Whether `rec` records the very start `d` wants (core and live each its keyed or unkeyed
 * hash) with an unkeyed hash among them, or a quarantine noted under the unkeyed core: a
 * record from before the city had a fingerprint key, to re-record keyed (`rekey`). Pure.
 */
export function recordedUnkeyed(rec: SessionRecord, d: DesiredEntry): boolean {
  const legacy = d.legacy;
  if (legacy === undefined) return false;
  const core = sameCore(rec.coreHash, d);
  const live = sameLive(rec.liveHash, d);
  const unkeyed =
    (rec.coreHash === legacy.core && legacy.core !== d.core) ||
    (rec.liveHash === legacy.live && legacy.live !== d.live) ||
    (rec.metadata[QUARANTINED_CORE_KEY] === legacy.core && legacy.core !== d.core);
  return core && live && unkeyed;
}

/** What the reconciler will do to one session this tick. */
export type Action =
  | {
      readonly kind: "start";
      readonly name: string;
      readonly reason: string;
      /** The session was lost with its infrastructure (see {@link Observation.vanished}). */
      readonly infra?: true;
    }
  | {
      readonly kind: "restart";
      readonly name: string;
      readonly reason: string;
      readonly fields: readonly string[];
    }
  | { readonly kind: "run-live"; readonly name: string; readonly reason: string }
  /** Re-record a session's unchanged start with the keyed fingerprints, any state ({@link recordedUnkeyed}). */
  | { readonly kind: "rekey"; readonly name: string; readonly reason: string }
  | { readonly kind: "adopt"; readonly name: string; readonly reason: string }
  | { readonly kind: "stop"; readonly name: string; readonly reason: string; readonly forget: boolean }
  | { readonly kind: "forget"; readonly name: string; readonly reason: string }
  | {
      readonly kind: "crashed";
      readonly name: string;
      readonly reason: string;
      readonly exit: ExitInfo | null;
      /** Counts toward the crash loop (false for a clean exit after a healthy run). */
      readonly failure: boolean;
      /** Then: back off until this time, or quarantine. */
      readonly next:
        | { readonly kind: "backoff"; readonly until: number }
        | { readonly kind: "quarantine" }
        | {
            readonly kind: "restart-now";
          };
      readonly failures: readonly number[];
    }
  | {
      readonly kind: "suspend";
      readonly name: string;
      readonly reason: string;
      readonly stopRuntime: boolean;
    }
  | {
      readonly kind: "wait";
      readonly name: string;
      readonly reason: string;
      readonly untilMs?: number;
      /**
       * The start this wait defers (start budget) restarts a session lost with its
       * infrastructure: its orphans are killed with those of this pass's losses (one census).
       */
      readonly lost?: true;
    };

/** Everything {@link plan} needs. */
export interface PlanInput {
  readonly desired: readonly DesiredEntry[];
  readonly observed: Observation;
  readonly records: readonly SessionRecord[];
  readonly now: number;
  readonly policy: PlanPolicy;
  /** Uniform random in [0, 1) for jitter (injected so plans are reproducible in tests). */
  readonly random: () => number;
  /**
   * Sessions whose last stop or run-live failed, with when it may be tried again: until then
   * that action waits (backoff, so a failing operation is not retried and logged every pass).
   */
  readonly retryAfter?: ReadonlyMap<string, number> | undefined;
}

/** The actions of one tick plus when the loop should look again. */
export interface Plan {
  readonly actions: readonly Action[];
  /** Earliest time something deferred becomes due (backoff end), if any. */
  readonly requeueAt: number | undefined;
}

/**
 * Backoff before restart number `failures` (1-based): `min · 2^(failures-1)` capped at `max`,
 * with ±25 % jitter (never below `min`). Pure.
 */
export function backoffDelayMs(failures: number, policy: PlanPolicy, random: () => number): number {
  const base = Math.min(policy.backoffMaxMs, policy.backoffMinMs * 2 ** Math.max(0, failures - 1));
  const jittered = base * (0.75 + random() * 0.5);
  return Math.round(Math.min(policy.backoffMaxMs, Math.max(policy.backoffMinMs, jittered)));
}

/**
 * What to do about a session that died: a clean exit after a healthy run restarts at once;
 * anything else is a failure that backs off (jittered exponential) or, at the threshold of
 * failures within the window, quarantines. Pure.
 */
export function crashAction(
  name: string,
  rec: SessionRecord,
  exit: ExitInfo | null,
  input: Pick<PlanInput, "now" | "policy" | "random">,
  why: string,
  /** `why` already tells how it ended (a failed start's error): no "(exit status unknown)". */
  whySaysHow = false,
): Extract<Action, { kind: "crashed" }> {
  const { now, policy } = input;
  const uptime = rec.startedAt === null ? 0 : (exit?.at ?? now) - rec.startedAt;
  const clean = exit !== null && exit.code === 0 && uptime >= policy.minHealthyUptimeMs;
  const failures = clean
    ? rec.recentFailures.filter((t) => t > now - policy.quarantineWindowMs)
    : [...rec.recentFailures.filter((t) => t > now - policy.quarantineWindowMs), now];
  const how =
    (exit === null
      ? "exit status unknown"
      : exit.code !== null
        ? `exit code ${exit.code}`
        : `killed by ${exit.signal ?? "a signal"}`) +
    (exit?.lastOutput ? `; last output: ${exit.lastOutput}` : "");
  if (clean) {
    return {
      kind: "crashed",
      name,
      reason: `exited cleanly (${how})`,
      exit,
      failure: false,
      next: { kind: "restart-now" },
      failures,
    };
  }
  const next =
    failures.length >= policy.quarantineThreshold
      ? ({ kind: "quarantine" } as const)
      : ({ kind: "backoff", until: now + backoffDelayMs(failures.length, policy, input.random) } as const);
  // Without an exit status (a failed start) `why` alone says what happened.
  const reason = exit === null && whySaysHow ? why : `${why} (${how})`;
  return { kind: "crashed", name, reason, exit, failure: true, next, failures };
}

/**
 * A failed start that is not the session's fault (an infrastructure or configuration
 * problem, {@link faultOf}): retried after a backoff, but not counted as a failure, so no
 * outage or refusal of the backend can quarantine a session. Pure.
 */
export function uncountedFailureAction(
  name: string,
  rec: SessionRecord,
  input: Pick<PlanInput, "now" | "policy" | "random">,
  why: string,
): Extract<Action, { kind: "crashed" }> {
  const { now, policy } = input;
  const failures = rec.recentFailures.filter((t) => t > now - policy.quarantineWindowMs);
  const until = now + backoffDelayMs(Math.max(1, failures.length), policy, input.random);
  return {
    kind: "crashed",
    name,
    reason: why,
    exit: null,
    failure: true,
    next: { kind: "backoff", until },
    failures,
  };
}

/** Plans one desired session. */
function planDesired(d: DesiredEntry, rec: SessionRecord | undefined, input: PlanInput): Action | undefined {
  const up = input.observed.running.has(d.name);
  const { now } = input;
  if (d.suspended) {
    if (rec?.state === "suspended" && !up) return undefined;
    return { kind: "suspend", name: d.name, reason: "suspended in the city file", stopRuntime: up };
  }
  if (!rec) {
    if (up) return { kind: "adopt", name: d.name, reason: "running without a record (controller restarted)" };
    if (input.policy.holdUnrecorded) {
      return {
        kind: "wait",
        name: d.name,
        reason: "state.db was recovered: not started until `gc session reset --all`",
      };
    }
    return { kind: "start", name: d.name, reason: "new session" };
  }
  const hold = rec.metadata[HOLD_KEY];
  if (hold) return { kind: "wait", name: d.name, reason: `held by the operator: ${hold}` };
  switch (rec.state) {
    case "quarantined": {
      // A fix of the start config (core drift since the quarantine) is a new try.
      const at = rec.metadata[QUARANTINED_CORE_KEY];
      if (at !== undefined && !sameCore(at, d)) {
        const drift = rec.coreHash === null ? undefined : driftOf(rec, d);
        const fields = drift?.kind === "core" ? drift.fields.map((f) => f.field) : [];
        return {
          kind: "start",
          name: d.name,
          reason: `quarantine lifted: the start config changed${fields.length ? ` (${fields.join(", ")})` : ""}`,
        };
      }
      return {
        kind: "wait",
        name: d.name,
        reason: `quarantined: ${rec.quarantineReason ?? "too many failures"}`,
      };
    }
    case "suspended":
      return up
        ? { kind: "adopt", name: d.name, reason: "resumed in the city file (already running)" }
        : { kind: "start", name: d.name, reason: "resumed in the city file" };
    case "running":
      if (!up && input.observed.vanished?.has(d.name)) {
        return {
          kind: "start",
          name: d.name,
          reason: `infrastructure lost (the ${d.provider} session vanished with its backend)`,
          infra: true,
        };
      }
      if (!up) return crashAction(d.name, rec, input.observed.exits.get(d.name) ?? null, input, "died");
      if (inSync(rec, d)) return undefined; // the common case, every session every pass: nothing else to read
      {
        const drift = driftOf(rec, d);
        if (drift.kind === "core") {
          const fields = drift.fields.map((f) => f.field);
          return {
            kind: "restart",
            name: d.name,
            reason: drift.reason,
            fields: fields.length > 0 ? fields : ["(fingerprint)"],
          };
        }
        if (drift.kind === "live") return { kind: "run-live", name: d.name, reason: drift.reason };
        return undefined;
      }
    case "starting":
      // Only a controller that died mid-start leaves `starting` behind (this tick's starts finish first).
      return up
        ? { kind: "adopt", name: d.name, reason: "start finished after the controller stopped" }
        : { kind: "start", name: d.name, reason: "start was interrupted; starting again" };
    case "draining":
      return up
        ? { kind: "restart", name: d.name, reason: "drain was interrupted; finishing it", fields: [] }
        : { kind: "start", name: d.name, reason: "drain was interrupted; starting again" };
    case "crashed":
      if (up) return { kind: "adopt", name: d.name, reason: "running again" };
      return crashAction(
        d.name,
        { ...rec, recentFailures: rec.recentFailures.slice(0, -1) },
        rec.lastExit,
        input,
        "crashed",
      );
    case "backoff":
      if (up) return { kind: "adopt", name: d.name, reason: "running again" };
      if (rec.backoffUntil !== null && rec.backoffUntil > now) {
        return { kind: "wait", name: d.name, reason: "backing off", untilMs: rec.backoffUntil };
      }
      return {
        kind: "start",
        name: d.name,
        reason: `backoff elapsed (failure ${rec.recentFailures.length})`,
      };
    case "pending":
    case "stopped":
      return up
        ? { kind: "adopt", name: d.name, reason: "already running" }
        : { kind: "start", name: d.name, reason: rec.state === "stopped" ? "desired again" : "pending" };
  }
}

/**
 * Orders start-like actions so dependencies come first (stable sort by dependency depth;
 * cycles keep file order). Linear in sessions: each distinct agent's depth is computed once.
 */
function dependencyOrder(actions: Action[], desired: readonly DesiredEntry[]): Action[] {
  if (actions.length < 2) return actions;
  const depsOf = new Map<string, readonly string[]>();
  for (const d of desired) if (!depsOf.has(d.agent)) depsOf.set(d.agent, d.dependsOn);
  const agentDepth = (agent: string, seen: Set<string>): number => {
    if (seen.has(agent)) return 0;
    seen.add(agent);
    const deps = depsOf.get(agent) ?? [];
    return deps.length === 0 ? 0 : 1 + Math.max(...deps.map((a) => agentDepth(a, seen)));
  };
  const depthOfAgent = new Map<string, number>();
  const depth = new Map<string, number>();
  const acting = new Set(actions.map((a) => a.name));
  for (const d of desired) {
    if (!acting.has(d.name)) continue;
    let n = depthOfAgent.get(d.agent);
    if (n === undefined) {
      n = agentDepth(d.agent, new Set());
      depthOfAgent.set(d.agent, n);
    }
    depth.set(d.name, n);
  }
  return actions
    .map((a, i) => ({ a, i, depth: depth.get(a.name) ?? 0 }))
    .sort((x, y) => x.depth - y.depth || x.i - y.i)
    .map((x) => x.a);
}

const STARTS: ReadonlySet<Action["kind"]> = new Set(["start", "restart"]);

/**
 * Plans one tick. Rules (architecture §6): missing → start; core drift → restart (drain
 * first); live drift → run-live; running without a record → adopt; running, ours and not
 * desired → stop; died → crashed with backoff (1 s … 5 min, jittered) or quarantine after
 * `quarantineThreshold` failures within the window; a clean exit after a healthy run restarts
 * at once. Sessions on an unobservable provider are left alone, and nothing is stopped at all
 * when any provider could not be observed. Starts beyond the budget wait for the next tick,
 * which is due at once (`requeueAt` = `now`).
 * Pure.
 */
export function plan(input: PlanInput): Plan {
  const { desired, observed, records, policy } = input;
  const recordOf = new Map(records.map((r) => [r.name, r]));
  const desiredNames = new Set(desired.map((d) => d.name));
  const partial = observed.unobservable.size > 0;
  const actions: Action[] = [];

  for (const d of desired) {
    const down = !partial
      ? undefined
      : observed.unobservable.has(d.provider)
        ? d.provider
        : d.backend !== undefined && observed.unobservable.has(d.backend)
          ? d.backend
          : undefined;
    if (down !== undefined) {
      actions.push({ kind: "wait", name: d.name, reason: `provider ${down} could not be observed` });
      continue;
    }
    const rec = recordOf.get(d.name);
    const a = planDesired(d, rec, input);
    // Nothing to do but wait, and the record holds unkeyed hashes of this very config (any
    // state: a quarantined or suspended record is a check value as much as a running one).
    if ((a === undefined || a.kind === "wait") && rec && recordedUnkeyed(rec, d)) {
      actions.push({
        kind: "rekey",
        name: d.name,
        reason: "recorded before the city had a fingerprint key: re-recorded keyed (nothing restarts)",
      });
    } else if (a) actions.push(a);
  }

  const undesiredRunning = [...observed.running].filter((n) => !desiredNames.has(n)).sort();
  for (const name of undesiredRunning) {
    if (partial) {
      actions.push({
        kind: "wait",
        name,
        reason: "not desired, but observation was partial: no stops this tick",
      });
      continue;
    }
    actions.push({
      kind: "stop",
      name,
      reason: recordOf.has(name) ? "no longer desired" : "orphan of this city",
      forget: true,
    });
  }
  for (const r of records) {
    if (desiredNames.has(r.name) || observed.running.has(r.name)) continue;
    // Under a partial observation a record's session may be on the part that went unseen.
    if (partial) continue;
    actions.push({ kind: "forget", name: r.name, reason: "no longer desired and not running" });
  }

  const ordered = dependencyOrder(actions, desired);
  let budget = policy.startBudget;
  const out: Action[] = [];
  for (const a of ordered) {
    const retryAt = input.retryAfter?.get(a.name);
    if ((a.kind === "stop" || a.kind === "run-live") && retryAt !== undefined && retryAt > input.now) {
      out.push({ kind: "wait", name: a.name, reason: `${a.kind} failed: retrying later`, untilMs: retryAt });
      continue;
    }
    if (STARTS.has(a.kind)) {
      if (budget <= 0) {
        out.push({
          kind: "wait",
          name: a.name,
          reason: `start budget of ${policy.startBudget} per pass used up; next pass at once`,
          untilMs: input.now,
          ...(a.kind === "start" && a.infra ? { lost: true as const } : {}),
        });
        continue;
      }
      budget--;
    }
    out.push(a);
  }
  const dues = out.flatMap((a) =>
    a.kind === "wait" && a.untilMs !== undefined
      ? [a.untilMs]
      : a.kind === "crashed" && a.next.kind === "backoff"
        ? [a.next.until]
        : [],
  );
  return { actions: out, requeueAt: dues.length > 0 ? Math.min(...dues) : undefined };
}
