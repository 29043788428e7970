/**
 * Process census: every live process of a backend, found in /proc by what the backend's root
 * processes look like (a tmux server's socket arguments, a holder's session dir) plus all
 * their descendants, whatever tags the sessions carry. `gc stop` uses it to prove that
 * nothing of a city is left, without talking to a backend that may be exiting.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { killPids } from "./kill.js";
import { ended, type ProcEntry, processTree, readArgv, readProcessTable, readStat } from "./process-table.js";

/** One live process of a backend. */
export interface CensusEntry {
  readonly pid: number;
  /** Kernel command name (for people; it changes when the process execs). */
  readonly comm: string;
  /** Start time since boot (`ProcEntry.startTime`): tells a reused pid from the process seen before. */
  readonly startTime: string;
}

/**
 * Every live (non-zombie) process whose entry passes `candidate` and whose argv passes
 * `isRoot`, plus all descendants of those, from one /proc snapshot. Processes that vanish
 * mid-read are skipped.
 */
export async function processCensus(
  candidate: (p: ProcEntry) => boolean,
  isRoot: (argv: readonly string[]) => boolean,
): Promise<CensusEntry[]> {
  const table = await readProcessTable();
  const out = new Map<number, CensusEntry>();
  for (const p of table) {
    if (!candidate(p) || out.has(p.pid)) continue;
    const argv = await readArgv(p.pid);
    if (!argv || !isRoot(argv)) continue;
    for (const q of processTree(table, p.pid)) {
      if (!ended(q)) out.set(q.pid, { pid: q.pid, comm: q.comm, startTime: q.startTime });
    }
  }
  return [...out.values()].sort((a, b) => a.pid - b.pid);
}

/** True when `argv` holds `flag value` or `flagvalue` (getopt spellings of one option). Pure. */
export function hasOption(argv: readonly string[], flag: string, value: string): boolean {
  return argv.some((a, i) => (a === flag && argv[i + 1] === value) || a === `${flag}${value}`);
}

/**
 * Entries of `seen` still alive as the same process: same pid and same start time (a
 * process that exec'd since — `sh -c "…; exec sleep"` — is still the one seen; a reused pid
 * is not). Zombies count as gone.
 */
export async function stillAlive(seen: readonly CensusEntry[]): Promise<CensusEntry[]> {
  const out: CensusEntry[] = [];
  for (const e of seen) {
    const now = readStat(e.pid);
    if (now && !ended(now) && now.startTime === e.startTime) out.push({ ...e, comm: now.comm });
  }
  return out;
}

/** Options of {@link awaitEmptyCensus}. */
export interface AwaitCensusOptions {
  /** Processes seen before the backend was told to stop (they are followed even once orphaned). */
  readonly before: readonly CensusEntry[];
  /** After this long, orphans (processes of `before` the backend no longer holds) are killed. Default 5 000 ms. */
  readonly killOrphansAfterMs?: number;
  /** Give up after this long and report what is left. Default 20 000 ms. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Polls `census` (plus the still-alive entries of `before`) until nothing is left: a backend
 * that is still exiting is waited for, not reported. Orphans — processes seen in `before`
 * that outlived their backend (a program ignoring SIGHUP) — are killed after
 * `killOrphansAfterMs`; what the backend itself still holds is never killed here (it may
 * belong to someone else). Resolves what is still alive at `timeoutMs` (empty when gone).
 */
export async function awaitEmptyCensus(
  census: () => Promise<CensusEntry[]>,
  opts: AwaitCensusOptions,
): Promise<CensusEntry[]> {
  const start = Date.now();
  let killed = false;
  for (;;) {
    const held = await census();
    const heldPids = new Set(held.map((e) => e.pid));
    const orphans = (await stillAlive(opts.before)).filter((e) => !heldPids.has(e.pid));
    const left = [...held, ...orphans].sort((a, b) => a.pid - b.pid);
    if (left.length === 0) return [];
    const elapsed = Date.now() - start;
    if (elapsed >= (opts.timeoutMs ?? 20_000)) return left;
    if (!killed && orphans.length > 0 && elapsed >= (opts.killOrphansAfterMs ?? 5_000)) {
      killed = true;
      await killPids(orphans.map((e) => e.pid));
      continue;
    }
    opts.signal?.throwIfAborted();
    await sleep(100);
  }
}
