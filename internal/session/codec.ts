/**
 * The pure core both session stores share: input validation, redaction before persistence,
 * record patching with lifecycle checks, history canonicalisation, and the wait and nudge
 * state rules. The stores only add atomic persistence around these functions, so the memory
 * and SQLite stores cannot drift apart in behaviour.
 */
import { InvalidNameError, StaleVersionError, StoreError } from "../base/errors.js";
import { nameProblem, validateMetaKey, validateSessionName } from "../base/names.js";
import { isLifecycleState, type Transition, transition } from "./lifecycle.js";
import { isSecretKey, REDACTED, redactDeep, redactStringMap, redactText } from "./redact.js";
import {
  DEFAULT_NUDGE_MAX_ATTEMPTS,
  DEFAULT_NUDGE_TTL_MS,
  type ExitInfo,
  type FieldFingerprint,
  type HistoryEntry,
  type Intent,
  type JsonObject,
  type JsonValue,
  type NewEvent,
  type NewNudge,
  type NewSession,
  type NewWait,
  type Nudge,
  type SessionPatch,
  type SessionRecord,
  type StoredHistoryEntry,
  type StoreOpenOptions,
  type Wait,
  type WaitState,
} from "./store.js";

const ACTOR_RE = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/;
const MAX_ACTOR_LENGTH = 128;
const MAX_EVENT_TYPE_LENGTH = 128;

/** The actor key rows are stored under: the actor, or "" for a single-tenant store. */
export interface Tenancy {
  readonly key: string;
  readonly mode: "single" | "multi";
  readonly actor: string | undefined;
}

/**
 * Resolves the tenancy of a store being opened. Pure.
 * @throws InvalidNameError for a malformed actor.
 * @throws TypeError when no actor is given without `singleTenant`, or both are given.
 */
export function resolveTenancy(opts: StoreOpenOptions): Tenancy {
  if (opts.singleTenant) {
    if (opts.actor !== undefined) throw new TypeError("a single-tenant store takes no actor");
    return { key: "", mode: "single", actor: undefined };
  }
  const actor = opts.actor;
  if (actor === undefined) {
    throw new TypeError(
      "session store: an actor is required (or pass singleTenant: true for a single-tenant store)",
    );
  }
  if (actor.length === 0 || actor.length > MAX_ACTOR_LENGTH || !ACTOR_RE.test(actor)) {
    throw new InvalidNameError("actor", actor, `must match ${ACTOR_RE.source} (≤ ${MAX_ACTOR_LENGTH})`);
  }
  return { key: actor, mode: "multi", actor };
}

/** @throws StoreError when a database created as `stored` tenancy is opened as `wanted`. */
export function checkTenancy(location: string, stored: string | undefined, wanted: Tenancy): void {
  if (stored === undefined || stored === wanted.mode) return;
  throw new StoreError(
    `${location}: this state database is ${stored === "single" ? "single-tenant" : "multi-tenant (per actor)"}; ` +
      `it cannot be opened ${wanted.mode === "single" ? "as single-tenant" : `for actor ${JSON.stringify(wanted.actor)}`}`,
  );
}

/** Stable JSON: object keys sorted, so equal values always serialise to equal strings. Pure. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/** Redacts and normalises an arbitrary value to JSON (via a round trip). Pure. */
export function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(redactDeep(value))) as JsonValue;
}

function checkTime(what: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new TypeError(`${what} must be a finite number (epoch ms)`);
  return v;
}

function checkOptionalTime(what: string, v: number | null | undefined): number | null {
  return v === null || v === undefined ? null : checkTime(what, v);
}

function checkCount(what: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new TypeError(`${what} must be a non-negative integer`);
  }
  return v;
}

function checkText(what: string, v: unknown): string {
  if (typeof v !== "string") throw new TypeError(`${what} must be a string`);
  return v;
}

function checkOptionalText(what: string, v: string | null | undefined): string | null {
  return v === null || v === undefined ? null : redactText(checkText(what, v));
}

function checkAgent(agent: string): string {
  const why = typeof agent === "string" ? nameProblem(agent) : "must be a string";
  if (why) throw new InvalidNameError("agent name", String(agent), why);
  return agent;
}

function checkProvider(provider: string): string {
  if (typeof provider !== "string" || provider.trim() === "") {
    throw new TypeError("provider must be a non-empty string");
  }
  return provider;
}

function cleanMetadata(m: Readonly<Record<string, string>>): Record<string, string> {
  for (const [k, v] of Object.entries(m)) {
    validateMetaKey(k);
    checkText(`metadata ${k}`, v);
  }
  return redactStringMap(m);
}

function cleanBreakdown(b: Readonly<Record<string, FieldFingerprint>>): Record<string, FieldFingerprint> {
  const out: Record<string, FieldFingerprint> = {};
  for (const [field, fp] of Object.entries(b)) {
    const hash = checkText(`breakdown ${field}.hash`, fp?.hash);
    const value = checkText(`breakdown ${field}.value`, fp?.value);
    // A secret env var's printable value must not be stored; its hash still shows drift.
    out[field] = { hash, value: isSecretKey(field) ? REDACTED : redactText(value) };
  }
  return out;
}

function cleanIntent(i: Intent | null | undefined): Intent | null {
  if (i === null || i === undefined) return null;
  const action = checkText("pending.action", i.action);
  if (action === "") throw new TypeError("pending.action must not be empty");
  const out: Intent = {
    action,
    at: checkTime("pending.at", i.at),
    generation: checkCount("pending.generation", i.generation),
    ...(i.detail ? { detail: redactStringMap(i.detail) } : {}),
  };
  return out;
}

function cleanExit(e: ExitInfo | null | undefined): ExitInfo | null {
  if (e === null || e === undefined) return null;
  if (e.code !== null && !Number.isInteger(e.code))
    throw new TypeError("lastExit.code must be an integer or null");
  if (e.signal !== null && typeof e.signal !== "string")
    throw new TypeError("lastExit.signal must be a string or null");
  return { code: e.code, signal: e.signal, at: checkTime("lastExit.at", e.at) };
}

function cleanFailures(ts: readonly number[]): number[] {
  if (!Array.isArray(ts)) throw new TypeError("recentFailures must be an array of epoch ms");
  return ts.map((t) => checkTime("recentFailures[]", t));
}

/**
 * A new record (version 1) from `init`, validated and redacted. Pure.
 * @throws InvalidNameError / TypeError for bad input.
 */
export function newRecord(init: NewSession, now: number): SessionRecord {
  validateSessionName(init.name);
  const state = init.state ?? "pending";
  if (!isLifecycleState(state)) throw new TypeError(`unknown lifecycle state ${JSON.stringify(state)}`);
  const reason = init.stateReason ?? "created";
  if (typeof reason !== "string" || reason.trim() === "")
    throw new TypeError("stateReason must not be empty");
  return {
    name: init.name,
    agent: checkAgent(init.agent),
    provider: checkProvider(init.provider),
    state,
    stateReason: redactText(reason),
    stateChangedAt: now,
    generation: 0,
    version: 1,
    coreHash: checkOptionalText("coreHash", init.coreHash),
    liveHash: checkOptionalText("liveHash", init.liveHash),
    breakdown: cleanBreakdown(init.breakdown ?? {}),
    restarts: 0,
    recentFailures: [],
    backoffUntil: null,
    quarantineReason: null,
    lastError: null,
    lastExit: null,
    createdAt: now,
    updatedAt: now,
    startedAt: checkOptionalTime("startedAt", init.startedAt),
    metadata: cleanMetadata(init.metadata ?? {}),
    pending: cleanIntent(init.pending),
  };
}

/** The outcome of applying a patch. */
export interface Patched {
  readonly record: SessionRecord;
  readonly transition: (Transition & { readonly generation: number }) | undefined;
}

/**
 * Applies `patch` to `rec` (version + 1, `updatedAt` = now). Pure.
 * @throws IllegalTransitionError for a transition the lifecycle table forbids.
 * @throws InvalidNameError / TypeError for bad input.
 */
export function applyPatch(rec: SessionRecord, patch: SessionPatch, now: number): Patched {
  const next: { -readonly [K in keyof SessionRecord]: SessionRecord[K] } = { ...rec };
  let t: Patched["transition"];
  if (patch.transition !== undefined) {
    const tr = transition(rec.state, patch.transition.to, patch.transition.reason);
    next.state = tr.to;
    next.stateReason = redactText(tr.reason);
    next.stateChangedAt = now;
    if (tr.to === "starting") {
      next.generation = rec.generation + 1;
      next.startedAt = now;
    }
    t = { ...tr, reason: next.stateReason, generation: next.generation };
  }
  if (patch.agent !== undefined) next.agent = checkAgent(patch.agent);
  if (patch.provider !== undefined) next.provider = checkProvider(patch.provider);
  if (patch.coreHash !== undefined) next.coreHash = checkOptionalText("coreHash", patch.coreHash);
  if (patch.liveHash !== undefined) next.liveHash = checkOptionalText("liveHash", patch.liveHash);
  if (patch.breakdown !== undefined) next.breakdown = cleanBreakdown(patch.breakdown);
  if (patch.restarts !== undefined) next.restarts = checkCount("restarts", patch.restarts);
  if (patch.recentFailures !== undefined) next.recentFailures = cleanFailures(patch.recentFailures);
  if (patch.backoffUntil !== undefined)
    next.backoffUntil = checkOptionalTime("backoffUntil", patch.backoffUntil);
  if (patch.quarantineReason !== undefined) {
    next.quarantineReason = checkOptionalText("quarantineReason", patch.quarantineReason);
  }
  if (patch.lastError !== undefined) next.lastError = checkOptionalText("lastError", patch.lastError);
  if (patch.lastExit !== undefined) next.lastExit = cleanExit(patch.lastExit);
  if (patch.startedAt !== undefined) next.startedAt = checkOptionalTime("startedAt", patch.startedAt);
  if (patch.pending !== undefined) next.pending = cleanIntent(patch.pending);
  if (patch.metadata !== undefined) {
    const merged: Record<string, string> = { ...rec.metadata };
    const set: Record<string, string> = {};
    for (const [k, v] of Object.entries(patch.metadata)) {
      validateMetaKey(k);
      if (v === null) delete merged[k];
      else set[k] = checkText(`metadata ${k}`, v);
    }
    next.metadata = { ...merged, ...redactStringMap(set) };
  }
  next.version = rec.version + 1;
  next.updatedAt = now;
  return { record: next, transition: t };
}

/** Serialises a record for storage. Pure. */
export function encodeRecord(rec: SessionRecord): string {
  return JSON.stringify(rec);
}

/**
 * Parses a stored record. Pure.
 * @throws StoreError when the stored text is not a record this version understands.
 */
export function decodeRecord(location: string, text: string): SessionRecord {
  let rec: SessionRecord;
  try {
    rec = JSON.parse(text) as SessionRecord;
  } catch (cause) {
    throw new StoreError(`${location}: unreadable session record`, { cause });
  }
  if (
    typeof rec !== "object" ||
    rec === null ||
    typeof rec.name !== "string" ||
    !isLifecycleState(rec.state)
  ) {
    throw new StoreError(`${location}: malformed session record ${JSON.stringify(text.slice(0, 80))}`);
  }
  return rec;
}

/** @throws StaleVersionError with the store's message shape for session `name`. */
export function staleRecord(name: string, expected: number, actual: number | undefined): StaleVersionError {
  return new StaleVersionError(`session ${JSON.stringify(name)}`, expected, actual);
}

/** @throws StaleVersionError with the store's message shape for a history count mismatch. */
export function staleHistory(name: string, expected: number, actual: number): StaleVersionError {
  return new StaleVersionError(`history of session ${JSON.stringify(name)}`, expected, actual);
}

/**
 * The persisted form of history entries: transient ones dropped, the rest redacted and
 * serialised canonically (so prefix comparison is exact). Pure.
 */
export function persistEntries(entries: readonly HistoryEntry[]): string[] {
  if (!Array.isArray(entries)) throw new TypeError("history entries must be an array");
  const out: string[] = [];
  for (const e of entries) {
    if (e === null || typeof e !== "object") throw new TypeError("history entry must be an object");
    if (e.transient === true) continue;
    const kind = checkText("history entry kind", e.kind);
    if (kind === "") throw new TypeError("history entry kind must not be empty");
    const stored: { kind: string; data: JsonValue; at?: number } = { kind, data: toJson(e.data ?? null) };
    if (e.at !== undefined) stored.at = checkTime("history entry at", e.at);
    out.push(canonicalJson(stored));
  }
  return out;
}

/** Parses one persisted history entry. Pure. */
export function decodeEntry(index: number, text: string): StoredHistoryEntry {
  const e = JSON.parse(text) as { kind: string; data: JsonValue; at?: number };
  return { index, kind: e.kind, data: e.data, at: e.at ?? null };
}

/** How a checkpoint changes stored history. Pure. */
export function planCheckpoint(
  stored: readonly string[],
  wanted: readonly string[],
): { mode: "noop" | "append" | "replace"; tail: readonly string[] } {
  const isPrefix = stored.length <= wanted.length && stored.every((s, i) => s === wanted[i]);
  if (!isPrefix) return { mode: "replace", tail: wanted };
  if (stored.length === wanted.length) return { mode: "noop", tail: [] };
  return { mode: "append", tail: wanted.slice(stored.length) };
}

/** An event row ready to persist: validated, payload redacted. Pure. */
export interface EventRow {
  readonly session: string | null;
  readonly type: string;
  readonly at: number;
  readonly payload: string;
}

/** Validates and redacts an event. Pure. @throws InvalidNameError / TypeError. */
export function eventRow(ev: NewEvent, now: number): EventRow {
  const session = ev.session ?? null;
  if (session !== null) validateSessionName(session);
  const type = checkText("event type", ev.type);
  if (type === "" || type.length > MAX_EVENT_TYPE_LENGTH)
    throw new TypeError("event type must be 1–128 characters");
  const payload = toJson(ev.payload ?? {});
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    throw new TypeError("event payload must be a JSON object");
  }
  return {
    session,
    type,
    at: ev.at === undefined ? now : checkTime("event at", ev.at),
    payload: JSON.stringify(payload),
  };
}

/** Parses a stored event payload. Pure. */
export function decodePayload(text: string): JsonObject {
  return JSON.parse(text) as JsonObject;
}

/** A new pending wait (without its id). Pure. @throws InvalidNameError / TypeError. */
export function newWait(w: NewWait, now: number): Omit<Wait, "id"> {
  validateSessionName(w.session);
  const kind = checkText("wait kind", w.kind);
  if (kind === "") throw new TypeError("wait kind must not be empty");
  return {
    session: w.session,
    kind,
    condition: toJson(w.condition ?? null),
    note: redactText(checkText("wait note", w.note ?? "")),
    state: "pending",
    createdAt: now,
    expiresAt: checkOptionalTime("wait expiresAt", w.expiresAt),
    settledAt: null,
    result: null,
    reason: null,
  };
}

/** Settles a pending wait; an already settled one is returned unchanged. Pure. */
export function settleWait(
  w: Wait,
  to: Exclude<WaitState, "pending">,
  now: number,
  detail: { result?: JsonValue; reason?: string | undefined },
): { wait: Wait; changed: boolean } {
  if (w.state !== "pending") return { wait: w, changed: false };
  return {
    wait: {
      ...w,
      state: to,
      settledAt: now,
      result: toJson(detail.result ?? null),
      reason: detail.reason === undefined ? null : redactText(detail.reason),
    },
    changed: true,
  };
}

/** True when a pending wait's deadline has passed. Pure. */
export function waitDue(w: Wait, now: number): boolean {
  return w.state === "pending" && w.expiresAt !== null && w.expiresAt <= now;
}

/** A new queued nudge (without its id). Pure. @throws InvalidNameError / TypeError / RangeError. */
export function newNudge(n: NewNudge, now: number): Omit<Nudge, "id"> {
  validateSessionName(n.session);
  const text = checkText("nudge text", n.text);
  const ttlMs = n.ttlMs ?? DEFAULT_NUDGE_TTL_MS;
  const maxAttempts = n.maxAttempts ?? DEFAULT_NUDGE_MAX_ATTEMPTS;
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError("nudge ttlMs must be positive");
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1)
    throw new RangeError("nudge maxAttempts must be ≥ 1");
  return {
    session: n.session,
    text,
    state: "queued",
    attempts: 0,
    maxAttempts,
    createdAt: now,
    expiresAt: now + ttlMs,
    notBefore: n.notBefore === undefined ? now : checkTime("nudge notBefore", n.notBefore),
    claimedUntil: null,
    lastError: null,
    deadReason: null,
    deliveredAt: null,
    source: n.source === undefined ? null : checkText("nudge source", n.source),
  };
}

function attemptsNote(n: Nudge): string {
  return `${n.attempts}/${n.maxAttempts} attempt(s)${n.lastError ? `; last error: ${n.lastError}` : ""}`;
}

function dead(n: Nudge, why: string): Nudge {
  return { ...n, state: "dead", claimedUntil: null, deadReason: `${why} after ${attemptsNote(n)}` };
}

/**
 * Ages one undelivered nudge at `now`: past its TTL → dead ("expired"); a claim whose lease
 * lapsed → dead (its attempt may have typed the text: delivery is at most once). `undefined`
 * when nothing changes. Pure.
 */
export function ageNudge(n: Nudge, now: number): Nudge | undefined {
  if (n.state !== "queued" && n.state !== "claimed") return undefined;
  if (now >= n.expiresAt) return dead(n, "expired (ttl)");
  if (n.state === "claimed" && n.claimedUntil !== null && n.claimedUntil <= now) {
    // The attempt may have typed the text before its deliverer stopped: at most once, so it
    // is never sent again.
    const lapsed = { ...n, lastError: "claim lease lapsed before the attempt was reported" };
    return dead(
      lapsed,
      "an attempt was interrupted before its outcome was known; not sent again (at most once)",
    );
  }
  return undefined;
}

/**
 * Chooses the nudge to claim among a session's undelivered nudges (already aged with
 * {@link ageNudge}): the first queued one due at `now` by (`notBefore`, id). Pure.
 */
export function pickDue(nudges: readonly Nudge[], now: number): Nudge | undefined {
  let best: Nudge | undefined;
  for (const n of nudges) {
    if (n.state !== "queued" || n.notBefore > now) continue;
    if (!best || n.notBefore < best.notBefore || (n.notBefore === best.notBefore && n.id < best.id)) best = n;
  }
  return best;
}

/** @throws RangeError unless `leaseMs` is a positive number. */
export function checkLeaseMs(leaseMs: number): void {
  if (!Number.isFinite(leaseMs) || leaseMs <= 0) throw new RangeError("nudge leaseMs must be positive");
}

/** The claimed form of `n`: one more attempt, leased until now + leaseMs. Pure. */
export function claimed(n: Nudge, now: number, leaseMs: number): Nudge {
  return { ...n, state: "claimed", attempts: n.attempts + 1, claimedUntil: now + leaseMs };
}

function checkClaim(n: Nudge | undefined, id: number, attempt: number): Nudge {
  if (n?.state !== "claimed" || n.attempts !== attempt) {
    throw new StaleVersionError(
      `nudge ${id} claim`,
      attempt,
      n?.state === "claimed" ? n.attempts : undefined,
    );
  }
  return n;
}

/**
 * The outcome of a failed attempt; `final`: never retried (the text may have reached the
 * session, so another attempt could deliver it twice). Pure.
 * @throws StaleVersionError when the claim is not current.
 */
export function failedNudge(
  n: Nudge | undefined,
  id: number,
  attempt: number,
  reason: string,
  retryAfterMs: number,
  now: number,
  final = false,
): Nudge {
  const c = checkClaim(n, id, attempt);
  if (!Number.isFinite(retryAfterMs) || retryAfterMs < 0) throw new RangeError("retryAfterMs must be ≥ 0");
  const f: Nudge = { ...c, lastError: redactText(checkText("failure reason", reason)), claimedUntil: null };
  if (final) return dead(f, "sent but not confirmed; not sent again (at most once)");
  if (now >= f.expiresAt) return dead(f, "expired (ttl)");
  if (f.attempts >= f.maxAttempts) return dead(f, "attempts exhausted");
  return { ...f, state: "queued", notBefore: now + retryAfterMs };
}

/** The delivered form of a claimed nudge. Pure. @throws StaleVersionError when the claim is not current. */
export function deliveredNudge(n: Nudge | undefined, id: number, attempt: number, now: number): Nudge {
  const c = checkClaim(n, id, attempt);
  return { ...c, state: "delivered", claimedUntil: null, deliveredAt: now };
}
