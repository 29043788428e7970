/**
 * A reconcile pass outside the controller loop (`gc start --once`, `gc reconcile` with no
 * controller, every `--dry-run`), and following a controller's pass over its socket. A dry
 * run reads the store only if it exists and touches nothing.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ProgressEvent } from "../reconcile/execute.js";
import type { TickReport } from "../reconcile/reconciler.js";
import type { TickSummary } from "../reconcile/summary.js";
import { openMemoryStore } from "../session/memory-store.js";
import { STATE_DB_FILE } from "../session/sqlite-store.js";
import { type City, newReconciler } from "./city.js";
import { type ControlMessage, requestControl } from "./control.js";
import { controllerPaths } from "./controller.js";

/** Most passes one run makes in this process (see {@link runOnePass}). */
const MAX_PASSES_HERE = 100;

/** The waits of `r` due at once: starts the start budget deferred to the next pass. */
function deferredToNow(r: TickReport): boolean {
  return r.plan.actions.some((a) => a.kind === "wait" && a.untilMs !== undefined && a.untilMs <= r.at);
}

/**
 * Runs a pass in this process. With no controller, nothing would run the pass that the start
 * budget defers "to the next pass, at once", so passes follow one another here while starts
 * are deferred and the last pass did something (at most {@link MAX_PASSES_HERE}). Resolves
 * one report for them all: every action taken and outcome, and the last pass's waits.
 */
export async function runOnePass(
  city: City,
  opts: {
    dryRun: boolean;
    signal: AbortSignal;
    onProgress?: (e: ProgressEvent) => void;
    allowMassStop?: boolean;
  },
): Promise<TickReport> {
  const store =
    opts.dryRun && !existsSync(join(city.stateDir, STATE_DB_FILE))
      ? openMemoryStore({ singleTenant: true })
      : await city.store();
  // A pass that applies the file is keyed (made here when missing); a dry run writes nothing.
  if (!opts.dryRun) await city.ensureFingerprintKey();
  const reconciler = newReconciler(city, store);
  const tick = () =>
    reconciler.tick({
      dryRun: opts.dryRun,
      signal: opts.signal,
      onProgress: (e) => opts.onProgress?.(e),
      allowMassStop: opts.allowMassStop === true,
    });
  let report = await tick();
  const before: TickReport[] = [];
  while (
    !opts.dryRun &&
    before.length + 1 < MAX_PASSES_HERE &&
    deferredToNow(report) &&
    report.outcomes.some((o) => o.ok && !o.skipped && o.action.kind !== "wait")
  ) {
    before.push(report);
    report = await tick();
  }
  if (before.length === 0) return report;
  return {
    ...report,
    plan: {
      ...report.plan,
      actions: [
        ...before.flatMap((r) => r.plan.actions.filter((a) => a.kind !== "wait")),
        ...report.plan.actions,
      ],
    },
    outcomes: [
      ...before.flatMap((r) => r.outcomes.filter((o) => o.action.kind !== "wait")),
      ...report.outcomes,
    ],
  };
}

/**
 * Follows the controller's current (or, with `poke`, a fresh) pass: `onProgress` gets its
 * progress events; resolves its summary.
 * @throws Error when the pass failed.
 */
export async function followControllerPass(
  stateDir: string,
  opts: {
    poke: boolean;
    signal: AbortSignal;
    onProgress?: (e: ProgressEvent) => void;
    allowMassStop?: boolean;
  },
): Promise<TickSummary | undefined> {
  let summary: TickSummary | undefined;
  let error: string | undefined;
  await requestControl(
    controllerPaths(stateDir).socket,
    opts.poke ? { op: "poke", allowMassStop: opts.allowMassStop === true } : { op: "watch" },
    {
      signal: opts.signal,
      onMessage: (m: ControlMessage) => {
        if (m.type === "progress") opts.onProgress?.(m.event);
        if (m.type === "done") {
          summary = m.summary;
          error = m.error;
        }
      },
    },
  );
  if (error) throw new Error(`reconcile pass failed: ${error}`);
  return summary;
}
