/**
 * Turning a tick report into what operators read: a JSON-able summary and one-line texts
 * for progress and results. Pure.
 */
import type { ProgressEvent } from "./execute.js";
import type { MassStop } from "./plan.js";
import type { TickReport } from "./reconciler.js";

/** The JSON-able digest of one tick (sent over the control socket, printed by `gc start`). */
export interface TickSummary {
  readonly at: number;
  readonly desired: number;
  /** Count of actions per kind (waits included; skipped ones not). */
  readonly actions: Readonly<Record<string, number>>;
  /** Actions not taken this pass because an operator's command held the session. */
  readonly skipped: number;
  readonly failed: readonly { readonly name: string; readonly action: string; readonly error: string }[];
  readonly configError: string | undefined;
  readonly observeErrors: readonly { readonly provider: string; readonly error: string }[];
  readonly requeueAt: number | undefined;
  /** Actions in order, as `kind name: reason`. */
  readonly lines: readonly string[];
  /** Set when the mass-stop guard refused the city file (see {@link massStopText}). */
  readonly massStop?: MassStop | undefined;
}

/** What operators read when the mass-stop guard refused the city file. Pure. */
export function massStopText(m: MassStop): string {
  const names = m.stops.slice(0, 8).join(", ") + (m.stops.length > 8 ? ", …" : "");
  return (
    `city file NOT applied: it would stop ${m.stops.length} of ${m.running} running sessions (${names}); ` +
    `the mass-stop guard refuses more than ${m.percent}% or all. The last good config stays applied. ` +
    "Run `gc reconcile --allow-mass-stop` to apply it, or edit the file back."
  );
}

/** Summarises a tick. Pure. */
export function summarizeTick(r: TickReport): TickSummary {
  const actions: Record<string, number> = {};
  for (const a of r.plan.actions) actions[a.kind] = (actions[a.kind] ?? 0) + 1;
  // Skipped actions (an operator's command held the session) were not taken: not counted.
  const skipped = r.outcomes.filter((o) => o.skipped);
  for (const o of skipped) {
    const n = (actions[o.action.kind] ?? 0) - 1;
    if (n > 0) actions[o.action.kind] = n;
    else delete actions[o.action.kind];
  }
  return {
    at: r.at,
    desired: r.desired.length,
    actions,
    skipped: skipped.length,
    failed: r.outcomes
      .filter((o) => !o.ok)
      .map((o) => ({ name: o.action.name, action: o.action.kind, error: o.error ?? "failed" })),
    configError: r.configError,
    observeErrors: r.observeErrors,
    requeueAt: r.plan.requeueAt,
    lines: r.plan.actions.map((a) => `${a.kind} ${a.name}: ${a.reason}`),
    massStop: r.massStop,
  };
}

/** `3 desired: 2 start, 1 stop; 1 failed` — the closing line of a pass. Pure. */
export function summaryLine(s: TickSummary): string {
  const acts = Object.entries(s.actions)
    .filter(([k]) => k !== "wait")
    .map(([k, n]) => `${n} ${k}`);
  const waits = s.actions.wait ? `, ${s.actions.wait} waiting` : "";
  const skipped = s.skipped > 0 ? `, ${s.skipped} skipped (busy)` : "";
  const failed = s.failed.length > 0 ? `; ${s.failed.length} failed` : "";
  const blind = s.observeErrors.length;
  // Nothing to do is "in sync" only when every provider could be looked at and nothing was skipped.
  const body = acts.length > 0 ? acts.join(", ") : blind > 0 || s.skipped > 0 ? "nothing done" : "in sync";
  const unobserved = blind > 0 ? `; ${blind} provider${blind === 1 ? "" : "s"} not observed` : "";
  return `${s.desired} desired: ${body}${waits}${skipped}${failed}${unobserved}`;
}

/** One progress line: `start mayor … ok (new session)`. Pure. */
export function progressLine(e: ProgressEvent): string {
  const mark = { begin: "…", done: "ok", failed: "FAILED", skipped: "skipped this pass" }[e.phase];
  return `${e.action.padEnd(8)} ${e.name} ${mark}${e.detail ? ` (${e.detail})` : ""}`;
}
