/**
 * The session lifecycle state machine: a pure transition table and the helpers that check
 * it. The store refuses any state change this table does not allow, so the reconciler, the
 * CLI and `gc status` all agree on what a state means. No I/O.
 */
import { IllegalTransitionError } from "../base/errors.js";

/**
 * Where a session is in its life.
 * - `pending`: wanted, not started yet (or reset / un-suspended).
 * - `starting`: a start is in flight (intent recorded; the provider's `start` may be running).
 * - `running`: the provider confirmed the session is up.
 * - `draining`: being wound down (interrupt, bounded idle wait, stop).
 * - `stopped`: no runtime; ended cleanly or on request.
 * - `crashed`: the runtime died unexpectedly (during start or while running).
 * - `backoff`: waiting out a restart delay after a crash.
 * - `quarantined`: too many failures; only an explicit reset brings it back.
 * - `suspended`: parked by the operator; the reconciler leaves it alone.
 */
export type LifecycleState =
  | "pending"
  | "starting"
  | "running"
  | "draining"
  | "stopped"
  | "crashed"
  | "backoff"
  | "quarantined"
  | "suspended";

/** Every state, in the order the main line runs through them. */
export const LIFECYCLE_STATES: readonly LifecycleState[] = Object.freeze([
  "pending",
  "starting",
  "running",
  "draining",
  "stopped",
  "crashed",
  "backoff",
  "quarantined",
  "suspended",
]);

/**
 * Terminal states: the session is at rest and nothing in flight belongs to it. Only `stopped`
 * is terminal; the operator cannot suspend a terminal state (suspend is "stop whatever it is
 * doing and keep it down"). A stopped session is restarted with `stopped → pending|starting`.
 */
export const TERMINAL_STATES: readonly LifecycleState[] = Object.freeze(["stopped"]);

/** One edge of the state machine, with the event that drives it. */
export interface TransitionRule {
  readonly from: LifecycleState;
  readonly to: LifecycleState;
  /** Short name of what causes the edge, for docs and `gc session logs`. */
  readonly trigger: string;
}

const NON_TERMINAL_FOR_SUSPEND: readonly LifecycleState[] = [
  "pending",
  "starting",
  "running",
  "draining",
  "crashed",
  "backoff",
  "quarantined",
];

/**
 * The whole table. Anything not listed (including every self-transition) is illegal.
 * Frozen; iterate it to render docs or to generate test matrices.
 */
export const TRANSITION_RULES: readonly TransitionRule[] = Object.freeze([
  { from: "pending", to: "starting", trigger: "start" },
  { from: "pending", to: "stopped", trigger: "no longer desired" },
  { from: "starting", to: "running", trigger: "start confirmed" },
  { from: "starting", to: "crashed", trigger: "died during startup / start failed" },
  { from: "starting", to: "stopped", trigger: "stopped during start" },
  { from: "running", to: "draining", trigger: "drain (drift, scale-down, stop)" },
  { from: "running", to: "crashed", trigger: "died unexpectedly" },
  { from: "running", to: "stopped", trigger: "clean exit" },
  { from: "draining", to: "stopped", trigger: "drain complete" },
  { from: "crashed", to: "backoff", trigger: "schedule restart" },
  { from: "crashed", to: "stopped", trigger: "no longer desired" },
  { from: "backoff", to: "starting", trigger: "backoff elapsed" },
  { from: "backoff", to: "quarantined", trigger: "too many failures" },
  { from: "backoff", to: "stopped", trigger: "no longer desired" },
  { from: "quarantined", to: "pending", trigger: "reset" },
  { from: "stopped", to: "pending", trigger: "restart requested" },
  { from: "stopped", to: "starting", trigger: "restart" },
  ...NON_TERMINAL_FOR_SUSPEND.map((from): TransitionRule => ({ from, to: "suspended", trigger: "suspend" })),
  { from: "suspended", to: "pending", trigger: "resume" },
]);

const ALLOWED: ReadonlyMap<LifecycleState, ReadonlySet<LifecycleState>> = (() => {
  const m = new Map<LifecycleState, Set<LifecycleState>>();
  for (const s of LIFECYCLE_STATES) m.set(s, new Set());
  for (const r of TRANSITION_RULES) m.get(r.from)?.add(r.to);
  return m;
})();

/** True when `s` is one of {@link LIFECYCLE_STATES}. Pure. */
export function isLifecycleState(s: unknown): s is LifecycleState {
  return typeof s === "string" && ALLOWED.has(s as LifecycleState);
}

/** True when `s` is terminal (see {@link TERMINAL_STATES}). Pure. */
export function isTerminalState(s: LifecycleState): boolean {
  return TERMINAL_STATES.includes(s);
}

/**
 * True when a session in state `s` holds, or is acquiring, a runtime (`starting`, `running`,
 * `draining`): the states that count against a pool's cap. Pure.
 */
export function holdsRuntime(s: LifecycleState): boolean {
  return s === "starting" || s === "running" || s === "draining";
}

/** True when the table allows `from → to`. Self-transitions are never allowed. Pure. */
export function canTransition(from: LifecycleState, to: LifecycleState): boolean {
  return ALLOWED.get(from)?.has(to) ?? false;
}

/** The states reachable from `from` in one step, in {@link LIFECYCLE_STATES} order. Pure. */
export function nextStates(from: LifecycleState): LifecycleState[] {
  return LIFECYCLE_STATES.filter((to) => canTransition(from, to));
}

/** A checked state change. */
export interface Transition {
  readonly from: LifecycleState;
  readonly to: LifecycleState;
  /** Why; never empty (shown by `gc status` and recorded in the event log). */
  readonly reason: string;
}

/**
 * Checks `from → to` against the table and returns the transition. Pure.
 * @throws IllegalTransitionError when the table does not allow it (including `from === to`
 *   and unknown state strings read from an old or foreign record).
 * @throws TypeError when `reason` is empty or only whitespace: every transition says why.
 */
export function transition(from: LifecycleState, to: LifecycleState, reason: string): Transition {
  if (!isLifecycleState(from) || !isLifecycleState(to) || !canTransition(from, to)) {
    throw new IllegalTransitionError(String(from), String(to));
  }
  if (typeof reason !== "string" || reason.trim() === "") {
    throw new TypeError(`transition ${from} → ${to} needs a reason`);
  }
  return { from, to, reason };
}
