/**
 * A session's work over time: the classification of each look (runtime/screen/work.ts classifyLook) joined
 * with what was recorded before, so `since` says how long the agent has been in its state
 * and turns become events. {@link advanceWork} is pure (previous record + observation +
 * clock → next record + events); {@link recordWork} stores the record in the session's
 * bookkeeping (record metadata {@link WORK_KEY}, written only when it changed) and appends
 * the events. The controller records once per pass; `gc status`, the dashboard and
 * `gc wait` classify the same way without recording.
 *
 * Events: `turn.started` (a turn: from entering `working` — or `error`, a request failing
 * mid-turn — until `idle`), `turn.ended` (`durationMs`), `work.blocked` (the question) and
 * `work.error` (the agent's own message), each once per change.
 */
import { isGcError } from "../base/errors.js";
import {
  type PendingInteraction,
  type Provider,
  type SessionLook,
  sessionCapabilities,
  supportsInteraction,
  supportsLook,
  supportsPendingAll,
} from "../runtime/provider.js";
import { type ObservedWork, WORK_STATES, type WorkState } from "../runtime/screen/work.js";
import type { JsonObject, SessionRecord, SessionStore } from "../session/store.js";

/** Record metadata key holding the session's {@link WorkRecord} (JSON). */
export const WORK_KEY = "gc.work";

/** A session's work as recorded. Times are epoch ms. */
export interface WorkRecord {
  readonly state: WorkState;
  /** When it entered `state`. */
  readonly since: number;
  /** The question (`needs-input`) or the agent's error line (`error`). */
  readonly message?: string | undefined;
  /** When the open turn started; absent between turns. */
  readonly turnSince?: number | undefined;
  /**
   * This incarnation's screen has shown the agent's busy marker: the program draws one while
   * it works, so its absence on a settled screen means not working (reconcile/work-watch.ts
   * `observeLook`), whatever it printed lately.
   */
  readonly marked?: true | undefined;
  /** The incarnation (record generation) it was observed on: a new one starts over. */
  readonly generation: number;
}

/** An event {@link advanceWork} asks to record. */
export interface WorkEvent {
  readonly type: "turn.started" | "turn.ended" | "work.blocked" | "work.error";
  readonly payload: JsonObject;
  readonly at: number;
}

/** The work record stored under {@link WORK_KEY}, or `undefined` when absent or malformed. Pure. */
export function parseWork(raw: string | undefined): WorkRecord | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<WorkRecord>;
    if (!v || typeof v !== "object") return undefined;
    if (!WORK_STATES.includes(v.state as WorkState) || typeof v.since !== "number") return undefined;
    if (typeof v.generation !== "number") return undefined;
    return {
      state: v.state as WorkState,
      since: v.since,
      generation: v.generation,
      ...(typeof v.message === "string" ? { message: v.message } : {}),
      ...(typeof v.turnSince === "number" ? { turnSince: v.turnSince } : {}),
      ...(v.marked === true ? { marked: true as const } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The work record of `rec`'s current incarnation, or `undefined`. Pure. */
export function recordedWork(rec: SessionRecord | undefined): WorkRecord | undefined {
  const w = parseWork(rec?.metadata[WORK_KEY]);
  return w && rec && w.generation === rec.generation ? w : undefined;
}

/**
 * {@link recordedWork} remembered per session: a record whose stored work text is the one it
 * last parsed (every pass of a quiet session) is not parsed again. One entry per session.
 */
export class RecordedWorkMemo {
  private readonly last = new Map<string, { raw: string | undefined; work: WorkRecord | undefined }>();

  /** The work record of `rec`'s current incarnation, or `undefined` (as {@link recordedWork}). */
  of(rec: SessionRecord): WorkRecord | undefined {
    const raw = rec.metadata[WORK_KEY];
    let hit = this.last.get(rec.name);
    if (!hit || hit.raw !== raw) {
      hit = { raw, work: parseWork(raw) };
      this.last.set(rec.name, hit);
    }
    return hit.work && hit.work.generation === rec.generation ? hit.work : undefined;
  }

  /** Forgets every session but `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const name of this.last.keys()) if (!keep.has(name)) this.last.delete(name);
  }
}

/** Same state, and for `needs-input` the same question. */
function sameWork(prev: WorkRecord, obs: ObservedWork): boolean {
  return prev.state === obs.state && (obs.state !== "needs-input" || prev.message === obs.message);
}

/**
 * The next work record after observing `obs` at `now`, and the events the change makes.
 * `since` stays while the state does (an error whose message changes — a retry counter —
 * keeps its `since`; a different question is a new block). Entering `idle` dates from the
 * last output (`lastActivity`) when that is known and later than the previous change, so a
 * turn's end does not wait for the pass that saw it. `unknown` (nothing could be read) keeps
 * an open turn open and records no event. The record is `marked` from the first look whose
 * screen shows a busy marker (`busyMarker`) for the rest of the incarnation. A `prev` of
 * another generation is ignored. An observation that changes nothing returns `prev` itself.
 * Pure.
 */
export function advanceWork(
  prev: WorkRecord | undefined,
  obs: ObservedWork,
  at: {
    readonly now: number;
    readonly generation: number;
    readonly lastActivity?: number | undefined;
    /** The look's screen shows the agent's busy marker. */
    readonly busyMarker?: boolean | undefined;
  },
): { next: WorkRecord; events: WorkEvent[] } {
  const { now, generation } = at;
  const p = prev && prev.generation === generation ? prev : undefined;
  const events: WorkEvent[] = [];
  const message = obs.state === "needs-input" || obs.state === "error" ? obs.message : undefined;
  let turnSince = p?.turnSince;
  const marked = p?.marked === true || at.busyMarker === true ? { marked: true as const } : {};
  if (p && sameWork(p, obs)) {
    // Nothing changed: the very record (a caller tells "nothing to write" by identity).
    if (p.message === message && p.marked === marked.marked) return { next: p, events };
    const next: WorkRecord = {
      state: p.state,
      since: p.since,
      generation,
      ...(message !== undefined ? { message } : {}),
      ...(turnSince !== undefined ? { turnSince } : {}),
      ...marked,
    };
    return { next, events };
  }
  let since = now;
  if (
    obs.state === "idle" &&
    at.lastActivity !== undefined &&
    at.lastActivity <= now &&
    at.lastActivity >= (p?.since ?? Number.NEGATIVE_INFINITY) &&
    at.lastActivity >= (turnSince ?? Number.NEGATIVE_INFINITY)
  ) {
    since = at.lastActivity;
  }
  if ((obs.state === "working" || obs.state === "error") && turnSince === undefined) {
    turnSince = now;
    events.push({ type: "turn.started", payload: {}, at: now });
  }
  if (obs.state === "idle" && turnSince !== undefined) {
    events.push({
      type: "turn.ended",
      payload: { durationMs: Math.max(0, since - turnSince), startedAt: new Date(turnSince).toISOString() },
      at: since,
    });
    turnSince = undefined;
  }
  if (obs.state === "needs-input")
    events.push({ type: "work.blocked", payload: { question: message ?? "" }, at: now });
  if (obs.state === "error")
    events.push({ type: "work.error", payload: { message: message ?? "" }, at: now });
  const next: WorkRecord = {
    state: obs.state,
    since,
    generation,
    ...(message !== undefined ? { message } : {}),
    ...(turnSince !== undefined ? { turnSince } : {}),
    ...marked,
  };
  return { next, events };
}

/** The work of a session as `gc status --json` shows it. Pure. */
export function workJson(w: Pick<WorkRecord, "state" | "since" | "message">) {
  return {
    state: w.state,
    since: new Date(w.since).toISOString(),
    ...(w.message !== undefined ? { message: w.message } : {}),
  };
}

/** The shape of a session's `work` in `gc status --json`. */
export type WorkJson = ReturnType<typeof workJson>;

/**
 * Stores `next` as `rec`'s work (when it differs from what is stored) and appends `events`.
 * A record changed meanwhile (another writer) is read again and written once more; a record
 * that is gone is left alone.
 */
export async function recordWork(
  store: SessionStore,
  rec: SessionRecord,
  next: WorkRecord,
  events: readonly WorkEvent[],
): Promise<void> {
  const raw = JSON.stringify(next);
  let cur: SessionRecord | undefined = rec;
  for (let attempt = 0; cur && cur.metadata[WORK_KEY] !== raw && attempt < 3; attempt++) {
    try {
      await store.update(cur.name, cur.version, { metadata: { [WORK_KEY]: raw } });
      break;
    } catch (e) {
      if (isGcError(e, "GC_SESSION_NOT_FOUND")) return;
      if (!isGcError(e, "GC_STALE_VERSION")) throw e;
      cur = await store.get(rec.name);
      if (cur && cur.generation !== next.generation) return; // a new incarnation: not ours
    }
  }
  for (const e of events)
    await store.appendEvent({ session: rec.name, type: e.type, payload: e.payload, at: e.at });
}

/**
 * One look at each of `names` (running sessions of `provider`): the provider's own
 * {@link LookProvider.look} when it has one; otherwise only the interactions it reports
 * (no screen: such sessions classify as `needs-input` or `unknown`). Missing sessions are
 * absent. @throws when the provider cannot be observed.
 */
export async function lookSessions(
  provider: Provider,
  names: readonly string[],
  signal?: AbortSignal,
): Promise<Map<string, SessionLook>> {
  if (supportsLook(provider)) return provider.look(names, { signal });
  const out = new Map<string, SessionLook>();
  if (!supportsInteraction(provider)) return out;
  let found: Map<string, PendingInteraction>;
  if (supportsPendingAll(provider) && provider.capabilities().interaction)
    found = await provider.pendingAll(names, { signal });
  else {
    found = new Map();
    await Promise.all(
      names.map(async (n) => {
        // Under a router, whether a session reports interactions depends on its backend.
        if (!(await sessionCapabilities(provider, n, { signal }).catch(() => undefined))?.interaction) return;
        const p = await provider.pending(n, { signal }).catch(() => undefined);
        if (p) found.set(n, p);
      }),
    );
  }
  for (const n of names) out.set(n, { interaction: found.get(n) });
  return out;
}

/** True when `look` says something about the session's work (a screen, an interaction or a turn). Pure. */
export function looksAtWork(look: SessionLook | undefined): look is SessionLook {
  return (
    look !== undefined &&
    (look.screen !== undefined || look.interaction !== undefined || look.turn !== undefined)
  );
}
