/**
 * One snapshot of the host process table, read from /proc, and pure walks over it.
 * Providers take one snapshot per operation instead of forking `ps`/`pgrep` per question.
 */

import { readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { groupBy } from "../base/group.js";

/** One process as seen in a snapshot. */
export interface ProcEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly sid: number;
  /** Kernel command name (`/proc/<pid>/comm`, ≤ 15 chars). */
  readonly comm: string;
  /** Single-letter state; `Z` is a zombie. */
  readonly state: string;
  /**
   * Start time in clock ticks since boot (field 22 of `stat`). Unlike `comm` it survives
   * `exec`, so it tells a reused pid from the process seen before.
   */
  readonly startTime: string;
  /** Foreground process group of the process's controlling terminal (field 8), or 0/-1 without one. */
  readonly tpgid: number;
  /**
   * Basename of argv[0] (full name when comm was truncated); `comm` when the process has no
   * command line (a kernel thread) or is gone. In a {@link readProcessTable} snapshot it is
   * read from /proc on first use, so a scan that only looks at `comm` reads one file per process.
   */
  readonly argv0: string;
}

/** Parses the contents of `/proc/<pid>/stat`. Pure; `undefined` for malformed input. */
export function parseStat(text: string): Omit<ProcEntry, "argv0"> | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const fields = text.slice(close + 2).split(" ");
  const pid = Number(text.slice(0, open).trim());
  const [state, ppid, pgid, sid] = [fields[0], Number(fields[1]), Number(fields[2]), Number(fields[3])];
  const startTime = fields[19];
  const tpgid = Number(fields[5]);
  if (!state || !startTime || !Number.isFinite(pid) || !Number.isFinite(ppid)) return undefined;
  return { pid, ppid, pgid, sid, comm: text.slice(open + 1, close), state, startTime, tpgid };
}

/**
 * True when the process has ended: a zombie (`Z`, not yet reaped by its parent) or dead
 * (`X`). An ended process runs nothing and is nobody's live owner. Pure.
 */
export function ended(p: { readonly state: string }): boolean {
  return p.state === "Z" || p.state === "X";
}

/**
 * `/proc/<pid>/stat` of one process, parsed; `undefined` when it is gone or unreadable.
 * Synchronous: procfs is made by the kernel in memory and never waits for a disk.
 */
export function readStat(pid: number): Omit<ProcEntry, "argv0"> | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Start time of `pid` in clock ticks since boot (field 22 of its stat); `null` when it is
 * gone or a zombie — a zombie has ended and is nobody's live owner (its parent just has not
 * reaped it yet). With the pid it names one process: it survives `exec`, a reused pid gets
 * another.
 */
export function procStartTime(pid: number): number | null {
  return liveStartTime(readStat(pid));
}

/**
 * {@link procStartTime} read off the event loop: right after a fork the child is busy in
 * `exec`, and a synchronous read of its stat then can wait on it.
 */
export async function readStartTime(pid: number): Promise<number | null> {
  try {
    return liveStartTime(parseStat(await readFile(`/proc/${pid}/stat`, "utf8")));
  } catch {
    return null;
  }
}

function liveStartTime(st: Omit<ProcEntry, "argv0"> | undefined): number | null {
  if (!st || ended(st)) return null;
  const v = Number(st.startTime);
  return Number.isFinite(v) ? v : null;
}

/**
 * The command line of `pid` (`/proc/<pid>/cmdline` split at its NULs); `undefined` when it is
 * gone or unreadable. Asynchronous, unlike the stat reads: reading a process's command line
 * takes its memory-map lock, which a process stuck in the kernel can hold.
 */
export async function readArgv(pid: number): Promise<string[] | undefined> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
  } catch {
    return undefined;
  }
}

/** Parses the contents of `/proc/<pid>/environ` (NUL-separated `KEY=value`). Pure. */
export function parseEnviron(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const entry of text.split("\0")) {
    const eq = entry.indexOf("=");
    if (eq > 0 && !env.has(entry.slice(0, eq))) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}

/**
 * The environment `pid` was started with (`/proc/<pid>/environ`); `undefined` when it is
 * gone, a zombie or not readable by us (another user's process without root). Asynchronous
 * for the same reason as {@link readArgv}.
 */
export async function readEnviron(pid: number): Promise<Map<string, string> | undefined> {
  try {
    return parseEnviron(await readFile(`/proc/${pid}/environ`, "utf8"));
  } catch {
    return undefined;
  }
}

let inflight: Promise<ProcEntry[]> | undefined;

/**
 * Reads every process from /proc. Processes that vanish mid-read are skipped. Callers that
 * ask while a read is under way share it: stopping 50 sessions at once costs one scan of
 * /proc, not 50 (each scan reads the stat file of every process on the host).
 */
export function readProcessTable(): Promise<ProcEntry[]> {
  inflight ??= new Promise<ProcEntry[]>((resolve, reject) => {
    // After the current tick, so callers asking in the same tick share this scan.
    setImmediate(() => {
      try {
        resolve(scanProc());
      } catch (e) {
        reject(e);
      }
    });
  }).finally(() => {
    inflight = undefined;
  });
  return inflight;
}

/**
 * The scan itself, with synchronous reads: /proc files are made by the kernel in memory,
 * never wait for a disk, and a few hundred of them read in a loop cost ~30 ms of CPU where
 * the same reads as promises (four thread-pool round trips each) cost ~250 ms (measured
 * under load on 2 cores; every CLI run's tmux connect scans once).
 */
function scanProc(): ProcEntry[] {
  const out: ProcEntry[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    const stat = readStat(Number(e));
    if (!stat) continue; // gone
    let argv0: string | undefined;
    out.push({
      ...stat,
      get argv0() {
        argv0 ??= readArgv0(stat.pid) ?? stat.comm;
        return argv0;
      },
    });
  }
  return out;
}

/** Basename of the first word of `/proc/<pid>/cmdline`; `undefined` when there is none. */
function readArgv0(pid: number): string | undefined {
  try {
    const first = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0];
    return first ? (first.split("/").pop() ?? first) : undefined;
  } catch {
    return undefined; // kernel threads and exiting processes have no cmdline
  }
}

/**
 * `members` plus every process in a process group one of them belongs to — so a child that
 * double-forked inside the group goes with it — but only groups a member leads, or whose
 * leader is gone. A group led by a process outside `members` is never added: a child just
 * forked (before its setsid) is still in its parent's group, e.g. the tmux server's or the
 * holder's, and killing "its group" would take the server down. Groups of `skip` pids are
 * never added either. Pure.
 */
export function withGroups(
  table: readonly ProcEntry[],
  members: readonly ProcEntry[],
  skip: ReadonlySet<number> = new Set(),
): ProcEntry[] {
  const mine = new Set(members.map((p) => p.pid));
  const present = new Set(table.map((p) => p.pid));
  const skipGroups = new Set(table.filter((p) => skip.has(p.pid)).map((p) => p.pgid));
  const groups = new Set(
    members.map((p) => p.pgid).filter((g) => g > 1 && !skipGroups.has(g) && (mine.has(g) || !present.has(g))),
  );
  const out = [...members];
  for (const p of table) if (groups.has(p.pgid) && !mine.has(p.pid)) out.push(p);
  return out;
}

/** `root` and every descendant of it in `table` (root first, then breadth-first). Pure. */
export function processTree(table: readonly ProcEntry[], root: number): ProcEntry[] {
  const byParent = groupBy(table, (p) => p.ppid);
  const self = table.find((p) => p.pid === root);
  const out: ProcEntry[] = self ? [self] : [];
  const queue = [root];
  const seen = new Set<number>(queue);
  while (queue.length > 0) {
    const pid = queue.shift()!;
    for (const child of byParent.get(pid) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out;
}

/** True when a live (non-zombie) process in `procs` has `comm` or `argv0` in `names`. Pure. */
export function anyProcessNamed(procs: readonly ProcEntry[], names: readonly string[]): boolean {
  const wanted = new Set(names);
  return procs.some((p) => !ended(p) && (wanted.has(p.comm) || wanted.has(p.argv0)));
}
