/**
 * A session the operator acts on: resolved against the city with its provider and store,
 * checked running (with what would bring it back), and locked for one action at a time.
 * Shared by the CLI's session commands and the dashboard.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { SessionNotRunningError } from "../base/errors.js";
import type { City } from "../controller/city.js";
import { type ResolvedSession, resolveSession } from "../controller/sessions.js";
import { HOLD_KEY } from "../reconcile/plan.js";
import type { Provider, StartConfig } from "../runtime/provider.js";
import { BOOKKEEPING_PURPOSE, SessionLockedError } from "../session/lock.js";
import type { SessionLock, SessionStore } from "../session/store.js";

/** A session named by the operator, with everything needed to operate it. */
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

/** How long a command waits for the controller's bookkeeping lock before refusing. */
const BOOKKEEPING_WAIT_MS = 10_000;

/**
 * Takes the session's control lock without waiting for another operator (run, restart,
 * kill, reset and nudges never overlap on one session, across processes). Only the
 * controller's momentary bookkeeping ({@link BOOKKEEPING_PURPOSE}) is waited for, so a
 * `gc run` is never refused because a pass happened to be recording turns. With `waitMs`,
 * any holder is waited for up to that long (a when-idle nudge: another operation on the
 * session, such as the controller delivering a queued nudge, means "not idle yet").
 * @throws SessionLockedError (GC_LOCKED, exit 1) naming the holder when someone has it.
 */
export async function lockSession(
  t: Target,
  purpose: string,
  opts: { waitMs?: number; signal?: AbortSignal | undefined } = {},
): Promise<SessionLock> {
  const start = Date.now();
  for (;;) {
    try {
      return await t.store.tryLock(t.name, { purpose });
    } catch (e) {
      if (!(e instanceof SessionLockedError)) throw e;
      // The controller's per-pass bookkeeping holds the lock for milliseconds: wait it out.
      const brief = e.holder.purpose === BOOKKEEPING_PURPOSE;
      const waitMs = Math.max(opts.waitMs ?? 0, brief ? BOOKKEEPING_WAIT_MS : 0);
      if (Date.now() - start >= waitMs) throw e;
      await sleep(brief ? 25 : 100, undefined, { signal: opts.signal });
    }
  }
}
