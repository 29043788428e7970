/**
 * Which processes belong to a subprocess session, from one /proc snapshot: the program's
 * descendants, everything in the pty's session (double-forked children that left the tree),
 * and the process groups of all of them. Used by the holder (stop) and the provider
 * (processAlive, killing what a dead holder left behind). Pure apart from the kill helper.
 */
import { killPids } from "../../proc/kill.js";
import {
  ended,
  type ProcEntry,
  processTree,
  procStartTime,
  readProcessTable,
  withGroups,
} from "../../proc/process-table.js";

/**
 * Every process of the session whose pty leader is `childPid` (the leader's pid is also the
 * pty's session id), excluding `exclude` (the caller and the holder). Pure.
 */
export function sessionProcesses(
  table: readonly ProcEntry[],
  childPid: number,
  exclude: readonly number[] = [],
): ProcEntry[] {
  // No program yet (pid 0) or init: "its tree" would be every process on the machine.
  if (!Number.isInteger(childPid) || childPid <= 1) return [];
  const skip = new Set(exclude);
  const members = new Map<number, ProcEntry>();
  for (const p of processTree(table, childPid)) members.set(p.pid, p);
  for (const p of table) if (p.sid === childPid) members.set(p.pid, p);
  return withGroups(table, [...members.values()], skip).filter((p) => !skip.has(p.pid));
}

/**
 * Hangs up and terminates every process of the session led by `childPid`, then SIGKILLs
 * survivors after `graceMs`. Resolves once all are gone. A missing session resolves at once;
 * so does one whose leader pid now belongs to a process started at another `startTime`.
 */
export async function killSession(
  childPid: number,
  opts: { exclude?: readonly number[]; graceMs?: number; startTime?: number | null } = {},
): Promise<void> {
  // A live process with the leader's pid but another start time is not ours (pid reuse).
  if (opts.startTime != null) {
    const now = procStartTime(childPid);
    if (now !== null && now !== opts.startTime) return;
  }
  const table = await readProcessTable();
  const pids = sessionProcesses(table, childPid, [process.pid, ...(opts.exclude ?? [])])
    .filter((p) => !ended(p))
    .map((p) => p.pid);
  if (pids.length === 0) return;
  // SIGHUP first: interactive shells ignore SIGTERM but exit on hangup, like a closed terminal.
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGHUP");
    } catch {
      // already gone
    }
  }
  await killPids(pids, opts.graceMs === undefined ? {} : { graceMs: opts.graceMs });
}
