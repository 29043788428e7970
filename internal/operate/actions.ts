/**
 * The operator actions on one session — nudge, respond, restart, reset, stop (hold down) —
 * as one implementation shared by the CLI (`gc nudge`, `gc session …`, `gc stop NAME`) and
 * the dashboard's HTTP API. Each takes the session's control lock where the CLI did, writes
 * the same audit events, and returns an outcome instead of printing; callers present it.
 */
import { formatDuration } from "../base/duration.js";
import { describeError } from "../base/errors.js";
import type { City } from "../controller/city.js";
import { requestControl } from "../controller/control.js";
import { controllerPaths, findController } from "../controller/controller.js";
import { dropShellState } from "../controller/exec-state.js";
import { dropCursors } from "../controller/observe.js";
import type { ResolvedSession } from "../controller/sessions.js";
import { probeIdle } from "../reconcile/nudge-delivery.js";
import { HOLD_KEY, QUARANTINED_CORE_KEY } from "../reconcile/plan.js";
import { walkTo } from "../reconcile/walk.js";
import { sessionCapabilities, supportsInteraction, supportsNudgeNow } from "../runtime/provider.js";
import type { LifecycleState } from "../session/lifecycle.js";
import { casUpdate, type Nudge, type SessionStore } from "../session/store.js";
import { lockSession, requireRunning, type Target } from "./target.js";

/** States in which the session holds a runtime the record must be moved off when stopped. */
export const LIVE_STATES: readonly LifecycleState[] = ["starting", "running", "draining"];

/** How a nudge is delivered: at once, once idle (bounded wait), or queued for the controller. */
export type NudgeMode = "now" | "wait-idle" | "queue";

/** What {@link nudgeSession} needs besides the target and text. */
export interface NudgeOptions {
  readonly mode: NudgeMode;
  /** Bound on waiting for idle (`wait-idle`). */
  readonly waitMs: number;
  /** TTL and attempts of a queued nudge (`queue`). */
  readonly ttlMs: number;
  readonly attempts: number;
  /** Who queued it (`cli`, `dashboard`), recorded on the nudge. */
  readonly source: string;
  /** Type the text unchanged, terminal control included (`--raw`; not for `queue`). */
  readonly raw?: boolean | undefined;
  readonly signal: AbortSignal;
}

/** The outcome of a nudge. */
export type NudgeOutcome =
  | { readonly mode: "now" | "wait-idle"; readonly delivered: true }
  | { readonly mode: "wait-idle"; readonly delivered: false; readonly reason: string }
  | { readonly mode: "queue"; readonly queued: Nudge; readonly controller: boolean };

/**
 * Delivers (or queues) a nudge the way `gc nudge` does: `now` types at once; `wait-idle`
 * takes the session lock and delivers only once the session is idle within `waitMs`;
 * `queue` records it durably and pokes the controller. Appends `nudge.sent`/`nudge.queued`.
 * @throws SessionNotRunningError (now/wait-idle) when the session has no runtime;
 *   LockedError when another control operation holds the session.
 */
export async function nudgeSession(t: Target, text: string, o: NudgeOptions): Promise<NudgeOutcome> {
  if (o.mode === "queue") {
    const n = await t.store.enqueueNudge({
      session: t.name,
      text,
      ttlMs: o.ttlMs,
      maxAttempts: o.attempts,
      source: o.source,
    });
    await t.store.appendEvent({
      session: t.name,
      type: "nudge.queued",
      payload: { id: n.id, ttlMs: o.ttlMs, maxAttempts: o.attempts },
    });
    return { mode: "queue", queued: n, controller: await pokeController(t.city) };
  }
  await requireRunning(t, o.signal);
  if (o.mode === "now") {
    if (supportsNudgeNow(t.provider))
      await t.provider.nudgeNow(t.name, text, {
        signal: o.signal,
        raw: o.raw,
        multiline: t.config?.multiline,
      });
    else
      await t.provider.nudge(t.name, text, { signal: o.signal, raw: o.raw, multiline: t.config?.multiline });
    await t.store.appendEvent({ session: t.name, type: "nudge.sent", payload: { mode: "now" } });
    return { mode: "now", delivered: true };
  }
  const waitStart = Date.now();
  const lock = await lockSession(t, "gc nudge", { waitMs: o.waitMs, signal: o.signal });
  try {
    const state = await probeIdle(t.provider, t.name, {
      readyPromptPrefix: t.config?.readyPromptPrefix,
      busyMarkers: t.config?.busyMarkers,
      readyMarkers: t.config?.readyMarkers,
      boundMs: Math.max(1, o.waitMs - (Date.now() - waitStart)),
      signal: o.signal,
    });
    if (state !== "idle") {
      return {
        mode: "wait-idle",
        delivered: false,
        reason: await notIdleReason(t, state, o.waitMs, o.signal),
      };
    }
    await t.provider.nudge(t.name, text, { signal: o.signal, raw: o.raw, multiline: t.config?.multiline });
    await t.store.appendEvent({ session: t.name, type: "nudge.sent", payload: { mode: "wait-idle" } });
    return { mode: "wait-idle", delivered: true };
  } finally {
    await lock.release();
  }
}

/** A nudge as shown by `gc nudge list` (and the dashboard): the state aged to now (a lapsed TTL reads as dead). */
export function nudgeView(n: Nudge, now: number) {
  const expired = (n.state === "queued" || n.state === "claimed") && now >= n.expiresAt;
  return {
    id: n.id,
    session: n.session,
    state: expired ? "dead" : n.state,
    attempts: n.attempts,
    maxAttempts: n.maxAttempts,
    createdAt: new Date(n.createdAt).toISOString(),
    expiresAt: new Date(n.expiresAt).toISOString(),
    nextAttemptAt: n.state === "queued" && !expired ? new Date(n.notBefore).toISOString() : null,
    lastError: n.lastError,
    deadReason: expired ? "expired (ttl)" : n.deadReason,
    deliveredAt: n.deliveredAt === null ? null : new Date(n.deliveredAt).toISOString(),
    source: n.source,
    text: n.text,
  };
}

async function notIdleReason(t: Target, state: string, waitMs: number, signal: AbortSignal): Promise<string> {
  switch (state) {
    case "gone":
      return `session ${t.name} is not running`;
    case "waiting-for-input": {
      const p = supportsInteraction(t.provider)
        ? await t.provider.pending(t.name, { signal }).catch(() => undefined)
        : undefined;
      // A field a person types into (an API key) takes no option: only attaching answers it.
      const how = p?.metadata?.input
        ? `enter it with \`gc attach ${t.name}\``
        : `answer it with \`gc session respond ${t.name} ACTION\``;
      return `session ${t.name} is waiting for input${p?.prompt ? `: ${p.prompt}` : ""} (${how})`;
    }
    default:
      return (
        `session ${t.name} did not become idle within ${formatDuration(waitMs)}; ` +
        "--now delivers anyway, --queue delivers at its next idle moment"
      );
  }
}

/** The outcome of answering an interaction. */
export type RespondOutcome =
  | { readonly answered: true; readonly requestId: string; readonly kind: string }
  | { readonly answered: false; readonly error: string };

/**
 * Answers the interaction the session waits on (`gc session respond`), optionally only when
 * it is request `requestId`; appends `interaction.responded` (by operator).
 */
export async function respondSession(
  t: Target,
  r: { action: string; text?: string | undefined; requestId?: string | undefined },
  signal: AbortSignal,
): Promise<RespondOutcome> {
  if (!supportsInteraction(t.provider) || !(await sessionCapabilities(t.provider, t.name)).interaction) {
    return { answered: false, error: `provider ${t.provider.name} does not report interactions` };
  }
  const pending = await t.provider.pending(t.name, { signal });
  if (!pending) return { answered: false, error: `${t.name} is not waiting for input` };
  if (r.requestId !== undefined && r.requestId !== pending.requestId) {
    return { answered: false, error: `${t.name} waits on request ${pending.requestId}, not ${r.requestId}` };
  }
  try {
    await t.provider.respond(
      t.name,
      { requestId: pending.requestId, action: r.action, ...(r.text !== undefined ? { text: r.text } : {}) },
      { signal },
    );
  } catch (e) {
    return { answered: false, error: `could not answer ${t.name}: ${describeError(e)}` };
  }
  await t.store.appendEvent({
    session: t.name,
    type: "interaction.responded",
    payload: {
      requestId: pending.requestId,
      kind: pending.kind,
      prompt: pending.prompt ?? "",
      action: r.action,
      by: "operator",
    },
  });
  return { answered: true, requestId: pending.requestId, kind: pending.kind };
}

/** Forgets what belonged to the session's previous run: exec shell state and observer cursors. */
export async function forgetIncarnation(t: Target): Promise<void> {
  await Promise.all([dropShellState(t.city.stateDir, t.name), dropCursors(t.city.stateDir, t.name)]);
}

/** Clears the operator hold and failure bookkeeping; moves a parked record back to `pending`. */
async function clearHold(t: Target, reason: string, resetFailures: boolean): Promise<void> {
  if (!(await t.store.get(t.name))) return;
  await casUpdate(t.store, t.name, () => ({
    metadata: { [HOLD_KEY]: null, ...(resetFailures ? { [QUARANTINED_CORE_KEY]: null } : {}) },
    ...(resetFailures
      ? { recentFailures: [], backoffUntil: null, quarantineReason: null, lastError: null }
      : {}),
  }));
  const rec = await t.store.get(t.name);
  if (rec && !LIVE_STATES.includes(rec.state) && rec.state !== "pending") {
    await walkTo(t.store, t.name, "pending", reason, { pending: null });
  }
}

/** The outcome of a restart or reset: the session afterwards. */
export interface AfterOutcome {
  readonly running: boolean;
  readonly state: string | null;
  readonly generation: number | null;
  readonly why: string | null;
}

async function after(t: Target, signal: AbortSignal): Promise<AfterOutcome> {
  const running = await t.provider.isRunning(t.name, { signal });
  const rec = await t.store.get(t.name);
  return {
    running,
    state: rec?.state ?? null,
    generation: rec?.generation ?? null,
    why: rec?.lastError ?? rec?.stateReason ?? null,
  };
}

/**
 * Asks the city's controller, when one runs, for a pass now (the poke registers at once; the
 * pass is not waited for). Resolves whether a controller runs.
 */
export async function pokeController(city: City): Promise<boolean> {
  const ctl = await findController(city.stateDir);
  if (ctl.running) {
    await requestControl(controllerPaths(city.stateDir).socket, { op: "poke" }, { timeoutMs: 500 }).catch(
      () => undefined,
    );
  }
  return ctl.running;
}

/**
 * `gc session restart`: under the session lock, stops the runtime, clears an operator hold,
 * forgets the old incarnation and appends `session.restart-requested`; then, with the lock
 * released, runs a pass now (`pass`: through the controller when one runs). Resolves
 * `undefined` when the session is not declared (it could not be started again).
 */
export async function restartSession(
  t: Target,
  pass: () => Promise<unknown>,
  signal: AbortSignal,
): Promise<AfterOutcome | undefined> {
  if (!t.session.desired) return undefined;
  const lock = await lockSession(t, "gc session restart");
  try {
    await t.provider.stop(t.name, { signal });
    const rec = await t.store.get(t.name);
    if (rec && LIVE_STATES.includes(rec.state)) {
      await walkTo(t.store, t.name, "stopped", "restart requested by operator", { pending: null });
    }
    await clearHold(t, "restart requested by operator", false);
    await forgetIncarnation(t);
    await t.store.appendEvent({ session: t.name, type: "session.restart-requested", payload: {} });
  } finally {
    await lock.release();
  }
  // Released first: no pass acts on a session an operator's command holds (execute.ts).
  await pass();
  return await after(t, signal);
}

/**
 * `gc session reset`: under the session lock, forgets crash history, quarantine and the
 * operator hold and appends `session.reset`; then, with the lock released, (for a declared
 * session) runs a pass now.
 */
export async function resetSession(
  t: Target,
  pass: () => Promise<unknown>,
  signal: AbortSignal,
): Promise<AfterOutcome> {
  const lock = await lockSession(t, "gc session reset");
  try {
    const before = await t.store.get(t.name);
    await clearHold(t, "reset by operator (gc session reset)", true);
    await t.store.appendEvent({
      session: t.name,
      type: "session.reset",
      payload: { from: before?.state ?? null },
    });
  } finally {
    await lock.release();
  }
  // Released first: no pass acts on a session an operator's command holds (execute.ts).
  if (t.session.desired) await pass();
  return await after(t, signal);
}

/**
 * `gc stop NAME`: under the session lock, marks the session held down (creating a record for
 * an untracked one so the hold outlives the call), stops its runtime and parks the record
 * as `suspended`. The controller leaves it alone until reset or restart.
 */
export async function holdDown(
  city: City,
  store: SessionStore,
  s: ResolvedSession,
  signal: AbortSignal,
): Promise<void> {
  // Control operations on one session never overlap (gc run, restart, kill hold this too).
  const lock = await store.tryLock(s.name, { purpose: "gc stop" });
  try {
    const provider = await city.providerFor(s.provider);
    const hold = { [HOLD_KEY]: `stopped by operator at ${new Date().toISOString()}` };
    const rec = s.record ?? (await store.get(s.name));
    if (rec) await casUpdate(store, s.name, () => ({ metadata: hold }));
    else {
      await store.create({
        name: s.name,
        agent: s.desired?.agent ?? s.name,
        provider: s.provider,
        state: "suspended",
        stateReason: "stopped by operator (gc stop)",
        metadata: hold,
      });
    }
    await provider.stop(s.name, { signal });
    if (rec) await walkTo(store, s.name, "suspended", "stopped by operator (gc stop)", { pending: null });
  } finally {
    await lock.release();
  }
}
