/**
 * The controller's operator work after each reconcile pass: deliver due queued nudges to
 * idle sessions, record each running session's work (working, idle, needs-input, error),
 * answer pending interactions by the approval policy, expire durable waits
 * past their deadline, and drop `gc exec` shell state of sessions that stopped. Each step is
 * isolated: one failing step is logged and never stops the others or the controller.
 */

import { describeError, isGcError } from "../base/errors.js";
import { type ApprovalPolicy, applyApprovalPolicy, approvalPolicyOf } from "../reconcile/approval.js";
import { type DeliveryTarget, deliverDueNudges } from "../reconcile/nudge-delivery.js";
import type { TickReport } from "../reconcile/reconciler.js";
import { recordTurns } from "../reconcile/turns.js";
import { supportsTurns } from "../runtime/provider.js";
import { BOOKKEEPING_PURPOSE } from "../session/lock.js";
import type { City } from "./city.js";
import { dropShellState, incarnationOf, listShellStates, loadShellState } from "./exec-state.js";
import { WorkWatcher } from "./work-watch.js";

/** Shortest delay before the loop looks at the nudge queue again. */
const MIN_REQUEUE_MS = 1_000;

/** What one operator pass found worth telling the loop. */
export interface OperatorPassResult {
  /** Earliest time a queued nudge becomes due (the loop should look again then). */
  readonly nextDueAt: number | undefined;
}

/** The per-pass hook; keeps what it must remember between passes (announced prompts, policy). */
export type OperatorPass = (report: TickReport, signal: AbortSignal) => Promise<OperatorPassResult>;

/**
 * Builds the hook for one controller. `work` records the sessions' work (the controller's
 * watcher, which also looks between passes; by default one that only records the passes').
 */
export function createOperatorPass(
  city: City,
  log: (line: string) => void,
  work: WorkWatcher = new WorkWatcher(city, log),
): OperatorPass {
  const announced = new Map<string, string>();
  // The policy of the city file last loaded cleanly (`city.current()`, which this pass's
  // reconcile step refreshed): an invalid edit keeps the last valid policy; the controller
  // reports the edit's error, once, not this step.
  let policyFrom = city.current();
  let policy: ApprovalPolicy = approvalPolicyOf(policyFrom.config.session.approval);
  const currentPolicy = (): ApprovalPolicy => {
    const loaded = city.current();
    if (loaded !== policyFrom) {
      policyFrom = loaded;
      policy = approvalPolicyOf(loaded.config.session.approval);
    }
    return policy;
  };

  const step = async <T>(what: string, fn: () => Promise<T>, signal: AbortSignal): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (e) {
      if (signal.aborted) throw e;
      log(`${what} failed: ${describeError(e)}`);
      return undefined;
    }
  };

  return async (report, signal) => {
    const store = await city.store();
    // An in-sync reconcile step hands over the records it read (at the tick's start): one
    // store read per pass.
    const readAt = report.records ? report.at : Date.now();
    const records = report.records ?? (await store.list());
    const targets = new Map<string, DeliveryTarget>();
    for (const r of records) targets.set(r.name, { provider: r.provider });
    for (const d of report.desired) {
      targets.set(d.name, {
        provider: d.provider,
        readyPromptPrefix: d.config.readyPromptPrefix,
        busyMarkers: d.config.busyMarkers,
        readyMarkers: d.config.readyMarkers,
        errorMarkers: d.config.errorMarkers,
        multiline: d.config.multiline,
      });
    }
    const nudges = await step(
      "nudge delivery",
      () =>
        deliverDueNudges({
          store,
          providerFor: (p) => city.providerFor(p),
          targetOf: (s) => targets.get(s),
          signal,
          log,
        }),
      signal,
    );
    // One look per running session (screen + interaction from one capture): its work is
    // recorded (work-watch.ts, which also looks between passes), and the approval policy
    // reads the same interactions.
    const observed = await step(
      "work state",
      () => work.recordPass(records, readAt, targets, signal),
      signal,
    );
    await step(
      "approval policy",
      () =>
        applyApprovalPolicy({
          observed,
          store,
          providerFor: (p) => city.providerFor(p),
          policy: currentPolicy(),
          sessions: records
            .filter((r) => r.state === "running")
            .map((r) => ({ name: r.name, provider: r.provider })),
          announced,
          signal,
          log,
        }),
      signal,
    );
    await step(
      "turn recording",
      async () => {
        for (const r of records) {
          if (r.state !== "running" && r.state !== "draining") continue;
          const provider = await city.providerFor(r.provider);
          if (!supportsTurns(provider)) continue;
          // A `gc run` holding the session records its own turn; never both.
          const lock = await store.tryLock(r.name, { purpose: BOOKKEEPING_PURPOSE }).catch((e: unknown) => {
            if (isGcError(e, "GC_LOCKED")) return undefined;
            throw e;
          });
          if (!lock) continue;
          try {
            for (const t of await recordTurns(provider, store, r.name, signal).catch(() => [])) {
              log(`${r.name}: turn ${t.id} ${t.error ? `failed: ${t.error}` : `ended: ${t.stopReason}`}`);
            }
          } finally {
            await lock.release();
          }
        }
      },
      signal,
    );
    await step(
      "wait expiry",
      async () => {
        for (const w of await store.expireDueWaits()) log(`wait #${w.id} on ${w.session} expired`);
      },
      signal,
    );
    await step(
      "exec state cleanup",
      async () => {
        const live = new Map(
          records
            .filter((r) => r.state === "starting" || r.state === "running" || r.state === "draining")
            .map((r) => [r.name, r]),
        );
        for (const name of await listShellStates(city.stateDir)) {
          const rec = live.get(name);
          if (!rec || !(await loadShellState(city.stateDir, name, incarnationOf(rec)))) {
            await dropShellState(city.stateDir, name);
          }
        }
      },
      signal,
    );
    // Never sooner than a second from now: a session's next nudge waits for it to settle.
    const next = nudges?.nextDueAt;
    return { nextDueAt: next === undefined ? undefined : Math.max(next, Date.now() + MIN_REQUEUE_MS) };
  };
}
