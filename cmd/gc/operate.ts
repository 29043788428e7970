/**
 * Shared plumbing of the commands that operate one session (`peek`, `nudge`, `attach`,
 * `wait`, `run`, `exec`, `session …`): resolve the name against the city, pick its provider,
 * parse durations, take the per-session control lock with a clear refusal, poke the
 * controller, and the exit codes of reports that are not failures.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parseDuration } from "../../internal/base/duration.js";
import { describeError, SessionNotRunningError, UsageError } from "../../internal/base/errors.js";
import { type ResolvedSession, resolveSession } from "../../internal/controller/sessions.js";
import { HOLD_KEY } from "../../internal/reconcile/plan.js";
import type { Provider, StartConfig } from "../../internal/runtime/provider.js";
import { BOOKKEEPING_PURPOSE, SessionLockedError } from "../../internal/session/lock.js";
import type { SessionLock, SessionStore } from "../../internal/session/store.js";
import type { CommandContext } from "./context.js";
import { type City, openCity } from "./deps.js";

/**
 * Exit codes of reports that are outcomes, not failures (beside 0 ok · 1 failed · 2 usage ·
 * 3 not found): the time limit passed with the session still working (`gc wait`
 * `still_working`, `gc run` `timeout`); the session ended before the condition (`gc wait`
 * `terminated`); the run was cancelled by Ctrl-C (`gc run` `cancelled`, like a shell's 130).
 */
export const REPORT_EXIT = { stillWorking: 4, terminated: 5, cancelled: 130 } as const;

/** A session named on the command line, with everything needed to operate it. */
export interface Target {
  readonly city: City;
  readonly session: ResolvedSession;
  readonly name: string;
  readonly provider: Provider;
  readonly store: SessionStore;
  /** The declared start config, when the city file declares the session. */
  readonly config: StartConfig | undefined;
}

/**
 * Opens the city and resolves `name` (exit 3 with a did-you-mean when unknown), then runs
 * `fn`; the city is closed however `fn` ends.
 */
export async function withTarget<T>(
  ctx: CommandContext,
  name: string,
  fn: (t: Target) => Promise<T>,
): Promise<T> {
  const city = await openCity(ctx);
  try {
    return await fn(await targetIn(city, name, ctx.signal));
  } finally {
    await city.close();
  }
}

/**
 * Resolves `name` in an open city (exit 3 with a did-you-mean when unknown) with its provider
 * and store. @throws SessionNotFoundError when the city does not know it.
 */
export async function targetIn(city: City, name: string, signal?: AbortSignal): Promise<Target> {
  const session = await resolveSession(city, name, signal);
  const [provider, store] = await Promise.all([city.providerFor(session.provider), city.store()]);
  return { city, session, name: session.name, provider, store, config: session.desired?.config };
}

/** @throws SessionNotRunningError unless the session's runtime is up. */
export async function requireRunning(t: Target, signal: AbortSignal): Promise<void> {
  if (!(await t.provider.isRunning(t.name, { signal }))) {
    throw new SessionNotRunningError(t.name, t.session.record?.state, { hint: startHint(t) });
  }
}

/** What brings a session that is not running back, from why it is down. Pure. */
export function startHint(t: Pick<Target, "name" | "session">): string {
  const { desired, record } = t.session;
  const n = t.name;
  if (!desired) return "it is not in the city file";
  if (desired.suspended) return "it is suspended in the city file (`suspended: true`)";
  if (record?.metadata[HOLD_KEY] !== undefined)
    return `it is held down (\`gc stop ${n}\`): \`gc session reset ${n}\` or \`gc session restart ${n}\` starts it`;
  if (record?.state === "quarantined") return `\`gc session reset ${n}\` lifts the quarantine`;
  // Recorded running, found not running: it ended since the last pass looked.
  if (record?.state === "running")
    return `its program ended since the last pass; the next pass (the controller's, or \`gc start\`) restarts it, \`gc session restart ${n}\` does now`;
  return `\`gc start\` or \`gc session restart ${n}\` starts it`;
}

/** Parses a duration flag (`30s`, `2m`, `1500ms`, `0`). @throws UsageError when malformed. */
export function durationFlag(flag: string, value: string | undefined, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  const ms = parseDuration(value);
  if (ms === undefined) {
    throw new UsageError(`--${flag}: ${JSON.stringify(value)} is not a duration (e.g. 30s, 2m, 1500ms)`);
  }
  return ms;
}

/** Parses a positive integer flag. @throws UsageError otherwise. */
export function intFlag(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${flag}: expected a positive integer`);
  return n;
}

/** How long a command waits for the controller's bookkeeping lock before refusing. */
const BOOKKEEPING_WAIT_MS = 10_000;

/**
 * Takes the session's control lock without waiting for another operator (run, restart,
 * kill, reset and nudges never overlap on one session, across processes). Only the
 * controller's momentary bookkeeping ({@link BOOKKEEPING_PURPOSE}) is waited for, so a
 * `gc run` is never refused because a pass happened to be recording turns.
 * @throws SessionLockedError (GC_LOCKED, exit 1) naming the holder when someone has it.
 */
export async function lockSession(t: Target, purpose: string): Promise<SessionLock> {
  const deadline = Date.now() + BOOKKEEPING_WAIT_MS;
  for (;;) {
    try {
      return await t.store.tryLock(t.name, { purpose });
    } catch (e) {
      // The controller's per-pass bookkeeping holds the lock for milliseconds: wait it out.
      const brief = e instanceof SessionLockedError && e.holder.purpose === BOOKKEEPING_PURPOSE;
      if (!brief || Date.now() >= deadline) throw e;
      await sleep(25);
    }
  }
}

/** Prints a value as indented JSON. */
export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.out(JSON.stringify(value, null, 2));
}

/** Reads all of stdin as UTF-8 (for `gc nudge SESSION -`). */
export async function readStdin(ctx: CommandContext): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of ctx.stdin) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The text of a `-` argument (`echo hi | gc nudge S -`): stdin without one trailing newline
 * (`\n` or `\r\n`), which `echo` and heredocs add and which would otherwise press Enter
 * once more. Other newlines are kept.
 */
export async function readTextArg(ctx: CommandContext): Promise<string> {
  return (await readStdin(ctx)).replace(/\r?\n$/, "");
}

/** `err` as one line for reports. */
export const errorText = describeError;

/** A duration for people: `850ms`, `4.2s`, `3m05s`. Pure. */
export function humanDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const s = Math.round(ms / 1_000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}
