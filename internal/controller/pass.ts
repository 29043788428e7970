/**
 * One reconcile pass outside the controller loop (`gc start --once`, `gc reconcile` with no
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

/** Runs one pass in this process. */
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
  const reconciler = newReconciler(city, store);
  return reconciler.tick({
    dryRun: opts.dryRun,
    signal: opts.signal,
    onProgress: (e) => opts.onProgress?.(e),
    allowMassStop: opts.allowMassStop === true,
  });
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
