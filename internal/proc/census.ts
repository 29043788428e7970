/**
 * Process census: every live process of a backend, found in /proc by what the backend's root
 * processes look like (a tmux server's socket arguments, a holder's session dir) plus all
 * their descendants, whatever tags the sessions carry — and, given the city's owner key,
 * the orphans: session processes that outlived their backend (re-parented to init) but
 * still carry the city's {@link OWNER_ENV} tag. `gc stop` uses it to prove that nothing of a
 * city is left, without talking to a backend that may be exiting; the infrastructure-loss
 * path uses the orphans of one session to kill its previous incarnation.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { killPids } from "./kill.js";
import {
  ended,
  type ProcEntry,
  processTree,
  readArgv,
  readEnviron,
  readProcessTable,
  readStat,
} from "./process-table.js";

/**
 * The environment variable carrying a local session's ownership tag: the city's owner key
 * (`<name>-<id>`). Set by `sessionEnv` (runtime/launch.ts) in every local session.
 */
export const OWNER_ENV = "GC_OWNER";
/** The session name every session process carries (`sessionEnv`). */
export const SESSION_ENV = "GC_SESSION";
/** Set in the controller's own environment: a controller is never a session's process. */
export const CONTROLLER_ENV = "GC_CONTROLLER_CHILD";

/** One live process of a backend. */
export interface CensusEntry {
  readonly pid: number;
  /** Kernel command name (for people; it changes when the process execs). */
  readonly comm: string;
  /** Start time since boot (`ProcEntry.startTime`): tells a reused pid from the process seen before. */
  readonly startTime: string;
  /**
   * Found by its tag, outside every backend tree: an orphan of the city (see
   * {@link selectOrphans}). Nothing owns it any more, so it may be killed.
   */
  readonly orphan?: true;
  /** An orphan's session: the {@link SESSION_ENV} its root carries, when it carries one. */
  readonly session?: string | undefined;
}

/** Which tagged processes a census looks for: the city's owner key, optionally some sessions. */
export interface TagQuery {
  /** The city's owner key ({@link OWNER_ENV} value). */
  readonly owner: string;
  /** Only the orphans of these sessions ({@link SESSION_ENV} value of the orphan's root). */
  readonly sessions?: ReadonlySet<string> | undefined;
}

/** A process {@link selectOrphans} selected, with the session its root carries. */
export type Orphan = ProcEntry & { readonly session: string | undefined };

/**
 * The orphans of a city in one snapshot. An orphan root is a live process carrying
 * `query.owner` in {@link OWNER_ENV} (and, with `query.sessions`, one of them in
 * {@link SESSION_ENV}), whose parent is init (pid 1) or gone — it outlived whatever started
 * it — and which is neither a controller ({@link CONTROLLER_ENV}) nor in `exclude` (the
 * backend trees, gc itself and its ancestors). Orphans are the roots and every descendant
 * not in `exclude`, tagged or not, each with its root's session. A tagged process with a live parent (a hook or command run
 * by a gc process, a pane of a live server) is never selected: its parent owns it. `envOf`
 * holds the environments read (a missing one — unreadable, gone mid-read — selects
 * nothing). Pure.
 *
 * Limitation: an orphan adopted by a subreaper other than pid 1 (`systemd --user`,
 * `PR_SET_CHILD_SUBREAPER`) has a live parent and is not found.
 */
export function selectOrphans(
  table: readonly ProcEntry[],
  envOf: ReadonlyMap<number, ReadonlyMap<string, string>>,
  query: TagQuery,
  exclude: ReadonlySet<number>,
): Orphan[] {
  const out = new Map<number, Orphan>();
  // Candidates have no live parent but init: a tagged process a live parent owns is never one.
  for (const p of orphanCandidates(table, exclude)) {
    const env = envOf.get(p.pid);
    if (!env || env.get(OWNER_ENV) !== query.owner || env.has(CONTROLLER_ENV)) continue;
    const session = env.get(SESSION_ENV);
    if (query.sessions !== undefined && (session === undefined || !query.sessions.has(session))) continue;
    for (const q of processTree(table, p.pid)) {
      if (!exclude.has(q.pid) && !ended(q)) out.set(q.pid, { ...q, session });
    }
  }
  return [...out.values()].sort((a, b) => a.pid - b.pid);
}

/**
 * Processes that may be orphan roots: live, not excluded, not init or a kernel thread, with
 * a parent that is init or not in the table. Only their environments need reading. Pure.
 */
export function orphanCandidates(table: readonly ProcEntry[], exclude: ReadonlySet<number>): ProcEntry[] {
  const pids = new Set(table.map((p) => p.pid));
  return table.filter(
    (p) =>
      p.pid > 2 && p.ppid !== 2 && !ended(p) && !exclude.has(p.pid) && (p.ppid === 1 || !pids.has(p.ppid)),
  );
}

/** `pid` and its ancestors in `table` (gc itself and whatever runs it). Pure. */
export function ancestry(table: readonly ProcEntry[], pid: number): Set<number> {
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const out = new Set<number>();
  for (let p = byPid.get(pid); p && !out.has(p.pid); p = byPid.get(p.ppid)) out.add(p.pid);
  out.add(pid);
  return out;
}

/**
 * Every live (non-zombie) process whose entry passes `candidate` and whose argv passes
 * `isRoot`, plus all descendants of those, from one /proc snapshot; with `tags`, also the
 * city's orphans ({@link selectOrphans}, flagged `orphan`), where the backend trees, gc
 * itself and its ancestors are never orphans. Processes that vanish mid-read are skipped.
 */
export async function processCensus(
  candidate: (p: ProcEntry) => boolean,
  isRoot: (argv: readonly string[]) => boolean,
  tags?: TagQuery,
): Promise<CensusEntry[]> {
  const table = await readProcessTable();
  const out = new Map<number, CensusEntry>();
  const trees = new Set<number>();
  for (const p of table) {
    if (!candidate(p) || trees.has(p.pid)) continue;
    const argv = await readArgv(p.pid);
    if (!argv || !isRoot(argv)) continue;
    for (const q of processTree(table, p.pid)) {
      trees.add(q.pid);
      if (!ended(q)) out.set(q.pid, { pid: q.pid, comm: q.comm, startTime: q.startTime });
    }
  }
  if (tags) {
    const exclude = new Set([...trees, ...ancestry(table, process.pid)]);
    const envOf = new Map<number, ReadonlyMap<string, string>>();
    await Promise.all(
      orphanCandidates(table, exclude).map(async (p) => {
        const env = await readEnviron(p.pid);
        if (env) envOf.set(p.pid, env);
      }),
    );
    for (const q of selectOrphans(table, envOf, tags, exclude)) {
      out.set(q.pid, { pid: q.pid, comm: q.comm, startTime: q.startTime, orphan: true, session: q.session });
    }
  }
  return [...out.values()].sort((a, b) => a.pid - b.pid);
}

/**
 * Kills the orphans `census` finds (TERM, KILL after {@link killPids}' grace) and resolves
 * them, as seen before the kill (empty when there were none). Entries without the `orphan`
 * flag — what a backend still holds — are never touched.
 */
export async function killOrphans(census: () => Promise<CensusEntry[]>): Promise<CensusEntry[]> {
  const found = (await census()).filter((e) => e.orphan);
  await killPids(found.map((e) => e.pid));
  return found;
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
  /** Told which processes were killed as orphans (once, before they are killed). */
  readonly onKill?: ((killed: readonly CensusEntry[]) => void) | undefined;
}

/**
 * Polls `census` (plus the still-alive entries of `before`) until nothing is left: a backend
 * that is still exiting is waited for, not reported. Orphans — processes seen in `before`
 * that outlived their backend (a program ignoring SIGHUP), and entries the census flags
 * `orphan` (found by the city's tag outside every backend tree) — are killed after
 * `killOrphansAfterMs`; what the backend itself still holds is never killed here (it may
 * belong to someone else). Resolves what is still alive at `timeoutMs` (empty when gone).
 */
export async function awaitEmptyCensus(
  census: () => Promise<CensusEntry[]>,
  opts: AwaitCensusOptions,
): Promise<CensusEntry[]> {
  const start = Date.now();
  const killed = new Set<string>();
  for (;;) {
    const held = await census();
    const heldPids = new Set(held.map((e) => e.pid));
    const orphans = [
      ...held.filter((e) => e.orphan),
      ...(await stillAlive(opts.before)).filter((e) => !heldPids.has(e.pid)),
    ];
    const left = [...held, ...orphans.filter((e) => !heldPids.has(e.pid))].sort((a, b) => a.pid - b.pid);
    if (left.length === 0) return [];
    const elapsed = Date.now() - start;
    if (elapsed >= (opts.timeoutMs ?? 20_000)) return left;
    // Each orphan is killed once (one that survives KILL is reported at the timeout).
    const toKill = orphans.filter((e) => !killed.has(`${e.pid}:${e.startTime}`));
    if (toKill.length > 0 && elapsed >= (opts.killOrphansAfterMs ?? 5_000)) {
      for (const e of toKill) killed.add(`${e.pid}:${e.startTime}`);
      opts.onKill?.(toKill);
      await killPids(toKill.map((e) => e.pid));
      continue;
    }
    opts.signal?.throwIfAborted();
    await sleep(100);
  }
}
