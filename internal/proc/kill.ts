/**
 * Killing process trees with early-returning escalation: SIGTERM the set, poll until every
 * process is gone, SIGKILL stragglers after the grace period. No fixed sleeps.
 */
import { constants as osConstants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { ended, processTree, readProcessTable, readStat, withGroups } from "./process-table.js";

/** The name of signal number `n` (`SIGTERM`), or `undefined` when this platform has none. Pure. */
export function signalName(n: number): string | undefined {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0];
}

/** Grace between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2_000;
const POLL_MS = 20;

/** True when `pid` exists and is not a zombie. */
export async function pidAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
  const st = readStat(pid);
  return st !== undefined && !ended(st);
}

function signalAll(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/**
 * Sends `signal` (default SIGTERM) to every pid, waits until all are gone, and SIGKILLs the
 * survivors after `graceMs`. Resolves once every pid is dead (zombies count as dead).
 * Idempotent; never throws for missing pids.
 */
export async function killPids(
  pids: readonly number[],
  opts: { graceMs?: number; signal?: NodeJS.Signals } = {},
): Promise<void> {
  if (pids.length === 0) return;
  signalAll(pids, opts.signal ?? "SIGTERM");
  const deadline = Date.now() + (opts.graceMs ?? KILL_GRACE_MS);
  let alive = [...pids];
  let killed = false;
  for (;;) {
    const states = await Promise.all(alive.map(pidAlive));
    alive = alive.filter((_, i) => states[i]);
    if (alive.length === 0) return;
    if (!killed && Date.now() >= deadline) {
      signalAll(alive, "SIGKILL");
      killed = true;
    }
    if (killed && Date.now() >= deadline + 5_000) return; // unkillable (D state): give up
    await sleep(POLL_MS);
  }
}

/**
 * Kills `root` and its whole process tree (one /proc snapshot, plus the process groups the
 * members lead, so a child that double-forked inside the group dies too: {@link withGroups}).
 * The caller's own process is never signalled.
 */
export async function killTree(root: number, opts: { graceMs?: number } = {}): Promise<void> {
  const table = await readProcessTable();
  const family = withGroups(table, processTree(table, root), new Set([process.pid]));
  const pids = new Set(family.map((p) => p.pid));
  if (pids.size === 0 && (await pidAlive(root))) pids.add(root);
  pids.delete(process.pid);
  await killPids([...pids], opts);
}
