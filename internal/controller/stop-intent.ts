/**
 * "Stop wins": `gc stop` records a stop intent (`<city>/.gc/stop-intent`) before it does
 * anything else, stamped with the time its process was created. A `gc start` created earlier
 * (and the controller it spawns, which inherits that time) honours it: it starts nothing and
 * exits, however far it had come. A `gc start` created later clears it. Ordering by process
 * creation, not by when each command reaches this file, is what makes
 * `gc start & gc stop` end stopped even when the start's Node is slower to boot.
 */
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

/** File name of the stop intent under the state dir. */
export const STOP_INTENT_FILE = "stop-intent";
/** Environment variable carrying the creating `gc start`'s origin to the controller it spawns. */
export const START_ORIGIN_ENV = "GC_START_ORIGIN_MS";

/** Wall-clock time (epoch ms, sub-ms precision) at which this process was created. */
export function processOriginMs(): number {
  return performance.timeOrigin;
}

/**
 * When the `gc start` behind this process was invoked: the spawning command's origin
 * (from {@link START_ORIGIN_ENV}) for a controller, else this process's own origin.
 */
export function startOriginMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env[START_ORIGIN_ENV]);
  return Number.isFinite(v) && v > 0 ? v : processOriginMs();
}

/** Records a stop intent stamped `originMs` (atomically: temp file + rename; 0600). */
export function writeStopIntent(stateDir: string, originMs: number = processOriginMs()): void {
  const path = join(stateDir, STOP_INTENT_FILE);
  const tmp = `${path}.${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify({ originMs, pid: process.pid })}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

/** The recorded stop intent's origin (epoch ms), or `undefined` when there is none. */
export function readStopIntent(stateDir: string): number | undefined {
  try {
    const v = JSON.parse(readFileSync(join(stateDir, STOP_INTENT_FILE), "utf8")) as { originMs?: unknown };
    return typeof v.originMs === "number" ? v.originMs : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when a stop was invoked after the start whose origin is `startOrigin`: that start
 * must not start anything (and its controller must exit). Pure apart from the file read.
 */
export function stopWins(stateDir: string, startOrigin: number): boolean {
  const stop = readStopIntent(stateDir);
  return stop !== undefined && stop >= startOrigin;
}

/**
 * Removes a stop intent older than `startOrigin` (a later start supersedes it). A newer one,
 * even one written while this runs, is left in place.
 */
export function clearStopIntent(stateDir: string, startOrigin: number): void {
  const path = join(stateDir, STOP_INTENT_FILE);
  const taken = `${path}.clear-${process.pid}`;
  try {
    renameSync(path, taken);
  } catch {
    return; // none
  }
  try {
    const v = JSON.parse(readFileSync(taken, "utf8")) as { originMs?: unknown };
    if (typeof v.originMs === "number" && v.originMs >= startOrigin) {
      try {
        linkSync(taken, path); // put it back, unless an even newer one arrived meanwhile
      } catch {
        // a newer intent is in place
      }
    }
  } catch {
    // unreadable: an intent nobody can honour
  } finally {
    rmSync(taken, { force: true });
  }
}
