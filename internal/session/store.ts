/**
 * The `SessionStore` contract: durable bookkeeping for one city and one actor (tenant) —
 * session records with compare-and-set, per-session history, an append-only event log,
 * durable waits, a nudge queue with dead letters, and cross-process per-session locks.
 * Implemented by sqlite-store.ts (production) and memory-store.ts (tests); both must pass
 * conformance/store.ts. Used by the reconciler and the CLI; never calls a provider.
 */
import { SessionNotFoundError, StaleVersionError } from "../base/errors.js";
import type { FieldFingerprint } from "../runtime/fingerprint.js";
import type { LifecycleState } from "./lifecycle.js";

/** Any value that survives a JSON round trip. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** One field of a fingerprint breakdown (defined with the fingerprints themselves). */
export type { FieldFingerprint } from "../runtime/fingerprint.js";

/** How a session's program last ended. */
export interface ExitInfo {
  /** Exit code, or `null` when it was killed by a signal or is unknown. */
  readonly code: number | null;
  /** Signal name (`SIGKILL`), or `null`. */
  readonly signal: string | null;
  /** When it ended, epoch ms. */
  readonly at: number;
  /** Its last lines of output (`outputTail`), when the provider kept its screen. */
  readonly lastOutput?: string | undefined;
}

/**
 * What the reconciler is about to do to a session, written *before* it acts so a crash
 * mid-action is visible and converges on the next tick (e.g. `{action: "start", at, generation}`).
 */
export interface Intent {
  /** `start`, `stop`, `drain`, `restart`, `run-live`, `adopt`, … (free text, kebab-case). */
  readonly action: string;
  /** When the intent was recorded, epoch ms. */
  readonly at: number;
  /** The generation the action is for (fences stale decisions). */
  readonly generation: number;
  /** Extra detail (why, by whom). Redacted like metadata. */
  readonly detail?: Readonly<Record<string, string>>;
}

/**
 * One session's bookkeeping. Timestamps are epoch milliseconds; `null` means "not set".
 * Records returned by a store are fresh copies: mutating one changes nothing stored.
 */
export interface SessionRecord {
  /** Session name (unique per actor). */
  readonly name: string;
  /** Agent (config entry) this session belongs to. */
  readonly agent: string;
  /** Provider name the session lives on (`tmux`, `k8s`, `exec:/path`, …). */
  readonly provider: string;
  readonly state: LifecycleState;
  /** Why the session entered `state`; never empty. */
  readonly stateReason: string;
  /** When the session entered `state`. */
  readonly stateChangedAt: number;
  /** Incremented by the store each time the session enters `starting`; 0 before the first start. */
  readonly generation: number;
  /** Compare-and-set version: 1 on create, +1 per update. */
  readonly version: number;
  /** Fingerprint of the restart-relevant inputs the running generation was started with. */
  readonly coreHash: string | null;
  /** Fingerprint of the live (re-applyable) inputs last applied. */
  readonly liveHash: string | null;
  /** Per-field fingerprint breakdown, so drift can say which field changed and from what. */
  readonly breakdown: Readonly<Record<string, FieldFingerprint>>;
  /** Restarts so far (maintained by the reconciler). */
  readonly restarts: number;
  /** Recent failure times, oldest first (the reconciler trims the window; see {@link pruneFailures}). */
  readonly recentFailures: readonly number[];
  /** No restart before this time. */
  readonly backoffUntil: number | null;
  /** Why the session was quarantined (set with the `quarantined` state). */
  readonly quarantineReason: string | null;
  readonly lastError: string | null;
  readonly lastExit: ExitInfo | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When the current generation entered `starting` (set by the store; may be patched). */
  readonly startedAt: number | null;
  /** Free string map. Values of secret-looking keys are stored as `[redacted]`. */
  readonly metadata: Readonly<Record<string, string>>;
  /** Intent recorded before acting; cleared (`null`) once the action's outcome is recorded. */
  readonly pending: Intent | null;
}

/** Input of {@link SessionStore.create}. */
export interface NewSession {
  readonly name: string;
  readonly agent: string;
  readonly provider: string;
  /**
   * Initial state (default `pending`). Creation is not a transition, so any state is
   * accepted, e.g. `running` when adopting a session that survived a controller crash.
   */
  readonly state?: LifecycleState;
  /** Default `"created"`. */
  readonly stateReason?: string;
  readonly coreHash?: string | null;
  readonly liveHash?: string | null;
  readonly breakdown?: Readonly<Record<string, FieldFingerprint>>;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly pending?: Intent | null;
  readonly startedAt?: number | null;
}

/**
 * Input of {@link SessionStore.update}. Absent fields are left alone; `null` clears a field.
 * The state can only change through `transition`, which must be legal (lifecycle.ts) and
 * carry a reason. Entering `starting` increments `generation` and sets `startedAt` to now
 * (unless the patch sets `startedAt` itself).
 */
export interface SessionPatch {
  readonly transition?: { readonly to: LifecycleState; readonly reason: string };
  readonly agent?: string;
  readonly provider?: string;
  readonly coreHash?: string | null;
  readonly liveHash?: string | null;
  /** Replaces the whole breakdown. */
  readonly breakdown?: Readonly<Record<string, FieldFingerprint>>;
  readonly restarts?: number;
  readonly recentFailures?: readonly number[];
  readonly backoffUntil?: number | null;
  readonly quarantineReason?: string | null;
  readonly lastError?: string | null;
  readonly lastExit?: ExitInfo | null;
  readonly startedAt?: number | null;
  /** Merged into the stored map; a `null` value deletes that key. */
  readonly metadata?: Readonly<Record<string, string | null>>;
  readonly pending?: Intent | null;
}

/** Filter for {@link SessionStore.list}. */
export interface SessionFilter {
  readonly agent?: string;
  readonly states?: readonly LifecycleState[];
}

/** One history entry as given to {@link SessionStore.appendHistory} / {@link SessionStore.checkpoint}. */
export interface HistoryEntry {
  /** Entry kind (`prompt`, `output`, `note`, `meta`…). */
  readonly kind: string;
  readonly data?: JsonValue;
  /** Optional timestamp, epoch ms; stored only when given (so checkpoints compare exactly). */
  readonly at?: number;
  /** Transient entries (secrets, system notes) are dropped and never persisted or counted. */
  readonly transient?: boolean;
}

/** A persisted history entry. */
export interface StoredHistoryEntry {
  /** 0-based position in the session's history. */
  readonly index: number;
  readonly kind: string;
  readonly data: JsonValue;
  readonly at: number | null;
}

/** What {@link SessionStore.checkpoint} did. */
export interface CheckpointResult {
  /** `noop`: stored history already equals the list; `append`: it was a prefix; `replace`: otherwise. */
  readonly mode: "noop" | "append" | "replace";
  /** Stored entry count afterwards. */
  readonly count: number;
}

/** Input of {@link SessionStore.appendEvent}. */
export interface NewEvent {
  /** The session the event is about; omit (or `null`) for city-level events. */
  readonly session?: string | null;
  /** Dotted type, e.g. `session.state`, `reconcile.start`. */
  readonly type: string;
  /** Redacted before it is stored. */
  readonly payload?: JsonObject;
  /** Defaults to the store clock. */
  readonly at?: number;
}

/** Bounds of {@link SessionStore.trimEvents}. */
export interface EventRetention {
  /** Delete events with `at` earlier than this (ms since the epoch). */
  readonly before?: number;
  /** Keep at most this many (the newest). */
  readonly keep?: number;
}

/** An event read back from the log. */
export interface SessionEvent {
  /** Store-wide sequence number: strictly increasing, never reused, not dense per actor. */
  readonly seq: number;
  readonly session: string | null;
  readonly type: string;
  readonly at: number;
  readonly payload: JsonObject;
}

/** Query for {@link SessionStore.queryEvents}. */
export interface EventQuery {
  /** Only events about this session. */
  readonly session?: string;
  /** Only events with `seq > since` (exclusive), for tailing. */
  readonly since?: number;
  /** Only these types. */
  readonly types?: readonly string[];
  /** At most this many (after ordering). */
  readonly limit?: number;
  /** `asc` (default): oldest first. `desc`: newest first, so `limit` keeps the latest. */
  readonly order?: "asc" | "desc";
}

/** Life of a wait: `pending` until it is resolved, expires or is cancelled; never reopened. */
export type WaitState = "pending" | "resolved" | "expired" | "canceled";

/** Input of {@link SessionStore.createWait}. */
export interface NewWait {
  readonly session: string;
  /** What is awaited (`idle`, `match`, `state`, `deps`, …). */
  readonly kind: string;
  /** Kind-specific condition (regex, target state, dependency ids…). Redacted. */
  readonly condition?: JsonValue;
  readonly note?: string;
  /** The wait expires at this time (epoch ms); `null`/absent = never. */
  readonly expiresAt?: number | null;
}

/** A durable wait. */
export interface Wait {
  readonly id: number;
  readonly session: string;
  readonly kind: string;
  readonly condition: JsonValue;
  readonly note: string;
  readonly state: WaitState;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  /** When it left `pending`. */
  readonly settledAt: number | null;
  /** What the resolver reported (redacted). */
  readonly result: JsonValue;
  /** Why it expired or was cancelled. */
  readonly reason: string | null;
}

/** Outcome of settling a wait: the wait as stored now, and whether this call settled it. */
export interface WaitSettlement {
  readonly wait: Wait;
  /** False when the wait was already settled (first settler wins). */
  readonly changed: boolean;
}

/** Filter for {@link SessionStore.listWaits}. */
export interface WaitFilter {
  readonly session?: string;
  readonly states?: readonly WaitState[];
}

/**
 * Life of a queued nudge: `queued` → `claimed` (a deliverer holds it under a lease) →
 * `delivered`; failures go back to `queued` until attempts run out; expiry or exhausted
 * attempts make it `dead` (a kept dead letter with its reason).
 */
export type NudgeState = "queued" | "claimed" | "delivered" | "dead";

/** Input of {@link SessionStore.enqueueNudge}. */
export interface NewNudge {
  readonly session: string;
  /** Text to deliver, stored verbatim (it is the message, so it is not redacted). */
  readonly text: string;
  /** Time to live from enqueue; default {@link DEFAULT_NUDGE_TTL_MS}. */
  readonly ttlMs?: number;
  /** Delivery attempts before it becomes a dead letter; default {@link DEFAULT_NUDGE_MAX_ATTEMPTS}. */
  readonly maxAttempts?: number;
  /** Not deliverable before this time (epoch ms); default now. */
  readonly notBefore?: number;
  /** Who queued it (`cli`, `wait:12`, …). */
  readonly source?: string;
}

/** A queued nudge. */
export interface Nudge {
  readonly id: number;
  readonly session: string;
  readonly text: string;
  readonly state: NudgeState;
  /** Attempts started so far (a claim starts one). Also the fencing token of the current claim. */
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Next time it may be claimed. */
  readonly notBefore: number;
  /** While `claimed`: the lease end, after which another deliverer may claim it. */
  readonly claimedUntil: number | null;
  /** Reason given with the last failed attempt. */
  readonly lastError: string | null;
  /** Why it is dead (expired, attempts exhausted), with the last error. */
  readonly deadReason: string | null;
  readonly deliveredAt: number | null;
  readonly source: string | null;
}

/** Filter for {@link SessionStore.listNudges}. */
export interface NudgeFilter {
  readonly session?: string;
  readonly states?: readonly NudgeState[];
}

/** Who holds a session lock. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** Process start time from /proc (guards against pid reuse); `null` when unknown. */
  readonly startTime: string | null;
  /** Unique per acquisition; two holders in one process differ by token. */
  readonly token: string;
  /** What the holder is doing (`gc run`, `reconcile`…). */
  readonly purpose: string;
  readonly acquiredAt: number;
  /** Renewed while held; only consulted for holders on another host. */
  readonly leaseUntil: number;
}

/** A held session lock. */
export interface SessionLock {
  readonly session: string;
  readonly holder: LockHolder;
  /** Releases the lock. Idempotent; never throws. */
  release(): Promise<void>;
}

/** Options of {@link SessionStore.tryLock} and {@link SessionStore.synchronize}. */
export interface LockOptions {
  /** Shown to whoever is refused (default `"gc"`). */
  readonly purpose?: string;
  /** `synchronize` only: stop waiting when aborted (rejects with `signal.reason`). */
  readonly signal?: AbortSignal;
  /** `synchronize` only: give up waiting after this long (OperationTimeoutError). */
  readonly timeoutMs?: number;
}

/** What a store is and whom it serves. */
export interface StoreInfo {
  readonly kind: "sqlite" | "memory";
  /** Database path, or a label for memory stores. */
  readonly location: string;
  /** `multi`: one actor's view (`actor` set). `single`: a single-tenant store (`actor` undefined). */
  readonly tenancy: "single" | "multi";
  readonly actor: string | undefined;
}

/** Options shared by every store implementation. */
export interface StoreOpenOptions {
  /** Tenant id; required unless `singleTenant` is true. */
  readonly actor?: string;
  /**
   * Opens a single-tenant store with no actor. A database is single- or multi-tenant from
   * its first open on; opening it the other way throws StoreError.
   */
  readonly singleTenant?: boolean;
  /** Clock, epoch ms (default `Date.now`). */
  readonly now?: () => number;
}

/** Default time to live of a queued nudge: 24 h. */
export const DEFAULT_NUDGE_TTL_MS = 24 * 60 * 60 * 1000;
/** Default delivery attempts of a queued nudge. */
export const DEFAULT_NUDGE_MAX_ATTEMPTS = 5;
/** Default lease of a claimed nudge: after it, another deliverer may claim it again. */
export const DEFAULT_NUDGE_LEASE_MS = 60_000;
/** Lease of a session lock held by a process on another host (renewed every third of it). */
export const LOCK_LEASE_MS = 30_000;

/**
 * Bookkeeping for one city, seen through one actor. Every method is async and safe to call
 * concurrently from many processes on one database. Nothing of another actor is ever read,
 * changed, listed, locked or deleted. All mutating methods are atomic: they apply fully or
 * not at all, including across a SIGKILL.
 *
 * Errors: {@link InvalidNameError} for a bad session or actor name (nothing done),
 * {@link StaleVersionError} for a compare-and-set mismatch, {@link SessionNotFoundError}
 * where a record must exist, {@link StoreError} when the database is unusable.
 */
export interface SessionStore {
  readonly info: StoreInfo;

  /** The record, or `undefined` when there is none. */
  get(name: string): Promise<SessionRecord | undefined>;
  /** Records sorted by name, optionally filtered. */
  list(filter?: SessionFilter): Promise<SessionRecord[]>;
  /**
   * Creates a record at version 1 (records a `session.created` event in the same transaction).
   * With `then`, the new record is also updated by it ({@link update} of version 1, with its
   * event) in that same transaction, and the record after both is returned: one write where
   * a create and its first update would be two, with the same records and events.
   * @throws SessionExistsError when a record with that name exists.
   * @throws IllegalTransitionError when `then.transition` is not allowed from the new state
   * (nothing is created).
   */
  create(init: NewSession, then?: SessionPatch): Promise<SessionRecord>;
  /**
   * Compare-and-set update: applies `patch` if the stored version is `expectedVersion` and
   * returns the new record (version + 1). A transition also appends a `session.state` event
   * (`{from, to, reason, generation}`) in the same transaction.
   * @throws StaleVersionError when the stored version differs.
   * @throws SessionNotFoundError when there is no record.
   * @throws IllegalTransitionError when `patch.transition` is not allowed from the stored state.
   */
  update(name: string, expectedVersion: number, patch: SessionPatch): Promise<SessionRecord>;
  /**
   * Deletes the record with its history, waits and nudges (events are kept, and a
   * `session.deleted` event is added; a lock on the name is untouched). Idempotent: resolves
   * `false` when there was none.
   * @throws StaleVersionError when `expectedVersion` is given and differs.
   */
  delete(name: string, expectedVersion?: number): Promise<boolean>;

  /**
   * Atomically appends `entries` (transient ones dropped, the rest redacted) if the stored
   * entry count is `expectedCount`; resolves the new count.
   * @throws StaleVersionError when the stored count differs.
   * @throws SessionNotFoundError when there is no record.
   */
  appendHistory(name: string, entries: readonly HistoryEntry[], expectedCount: number): Promise<number>;
  /**
   * Makes the stored history equal `entries` (transient ones dropped, the rest redacted):
   * appends the tail when the stored history is a prefix of it, replaces it otherwise.
   * Atomic; idempotent. @throws SessionNotFoundError when there is no record.
   */
  checkpoint(name: string, entries: readonly HistoryEntry[]): Promise<CheckpointResult>;
  /** Stored entries from index `from` (default 0), at most `limit`. Empty when there is no record. */
  readHistory(name: string, opts?: { from?: number; limit?: number }): Promise<StoredHistoryEntry[]>;
  /** Stored entry count (0 when there is no record). */
  historyCount(name: string): Promise<number>;

  /** Appends one event (payload redacted) and resolves it with its sequence number. */
  appendEvent(event: NewEvent): Promise<SessionEvent>;
  /** Events matching `query`, ordered by `seq`. */
  queryEvents(query?: EventQuery): Promise<SessionEvent[]>;
  /** Deletes this actor's events with `seq <= throughSeq`; resolves how many. Idempotent. */
  pruneEvents(throughSeq: number): Promise<number>;
  /**
   * Retention: deletes this actor's events recorded before `before` (store clock, ms) and all
   * but the newest `keep`; either bound may be omitted. Resolves how many were deleted.
   */
  trimEvents(bounds: EventRetention): Promise<number>;
  /**
   * Rewrites the store's files so that no deleted or replaced content lingers in them (free
   * pages, old row versions, the journal). For content that must not survive its replacement
   * (fingerprints recorded before the city had a key). A no-op where nothing is on disk.
   * @throws StoreError when it could not finish (another process holds the journal): the old
   * content may still be there; call again later.
   */
  compact(): Promise<void>;

  /** Records a pending wait. */
  createWait(wait: NewWait): Promise<Wait>;
  /** The wait, or `undefined` (also for another actor's id). */
  getWait(id: number): Promise<Wait | undefined>;
  /** Moves a pending wait to `resolved`. `undefined` when there is no such wait. First settler wins. */
  resolveWait(id: number, result?: JsonValue): Promise<WaitSettlement | undefined>;
  /** Moves a pending wait to `expired`. `undefined` when there is no such wait. First settler wins. */
  expireWait(id: number, reason?: string): Promise<WaitSettlement | undefined>;
  /** Moves a pending wait to `canceled`. `undefined` when there is no such wait. First settler wins. */
  cancelWait(id: number, reason: string): Promise<WaitSettlement | undefined>;
  /** Expires every pending wait whose `expiresAt` has passed; resolves the ones it expired. */
  expireDueWaits(): Promise<Wait[]>;
  /** Waits by id, optionally filtered. */
  listWaits(filter?: WaitFilter): Promise<Wait[]>;

  /** Queues a nudge. @throws RangeError for a non-positive TTL or attempt count. */
  enqueueNudge(nudge: NewNudge): Promise<Nudge>;
  /** The nudge, or `undefined` (also for another actor's id). */
  getNudge(id: number): Promise<Nudge | undefined>;
  /** Nudges by id, optionally filtered. Shows stored states: call {@link expireNudges} first to age them. */
  listNudges(filter?: NudgeFilter): Promise<Nudge[]>;
  /**
   * Claims the next due nudge for `session` (FIFO by `notBefore`, then id) and starts an
   * attempt: state `claimed`, `attempts + 1`, lease until now + `leaseMs`. A claim whose
   * lease lapsed becomes a dead letter (its attempt may have typed the text: at most once). Expired nudges of the session become dead letters first.
   * Resolves `undefined` when nothing is due. Exactly one of several concurrent claimers wins.
   */
  claimNudge(session: string, opts?: { leaseMs?: number }): Promise<Nudge | undefined>;
  /**
   * Records that attempt `attempt` of nudge `id` failed with `reason`: back to `queued`
   * (claimable after `retryAfterMs`, default 0) or `dead` when attempts are exhausted, or at
   * once with `final` (the text may have reached the session: never sent twice).
   * @throws StaleVersionError unless the nudge is `claimed` with exactly `attempt` attempts.
   */
  failNudge(
    id: number,
    attempt: number,
    reason: string,
    opts?: { retryAfterMs?: number; final?: boolean },
  ): Promise<Nudge>;
  /**
   * Marks attempt `attempt` of nudge `id` delivered.
   * @throws StaleVersionError unless the nudge is `claimed` with exactly `attempt` attempts.
   */
  completeNudge(id: number, attempt: number): Promise<Nudge>;
  /** Moves every undelivered nudge past its TTL to `dead`; resolves the ones it moved. */
  expireNudges(): Promise<Nudge[]>;

  /**
   * Runs `fn` while holding the session's lock, which excludes every other holder in this and
   * other processes on the same database; waits (polling) while someone else holds it. A lock
   * whose holder process is dead (or, for another host, whose lease lapsed) is taken over.
   * Not reentrant: calling it again for the same name inside `fn` waits forever (use `timeoutMs`).
   * Releases the lock however `fn` ends and resolves/rejects with `fn`'s outcome.
   * @throws OperationTimeoutError (cause: LockedError) when `timeoutMs` passes while waiting.
   * Rejects with `signal.reason` when aborted while waiting.
   */
  synchronize<T>(name: string, fn: () => Promise<T> | T, opts?: LockOptions): Promise<T>;
  /**
   * Takes the session's lock without waiting.
   * @throws SessionLockedError (code GC_LOCKED, naming the holder) at once when it is held.
   */
  tryLock(name: string, opts?: LockOptions): Promise<SessionLock>;
  /** The live holder of the session's lock, or `undefined` when it is free (or held by a dead process). */
  lockHolder(name: string): Promise<LockHolder | undefined>;

  /**
   * File-backed stores: whether the store's file is still the one it has open — `missing`
   * (deleted under it) or `replaced` (another file at its path now) — and, with `writeBack`,
   * a missing file written back from the open database (see {@link StoreFileCheck}).
   */
  checkFile?(opts?: { writeBack?: boolean; damaged?: boolean }): {
    found: StoreFileCheck;
    movedAside?: string;
  };

  /** Releases locks this store holds and closes it. Idempotent. Any later call rejects with StoreError. */
  close(): Promise<void>;
}

/**
 * What {@link SessionStore.checkFile} found: `same` (nothing to do), `missing` (deleted; this
 * store keeps its open copy), `restored` (deleted or replaced, and this store's database was
 * written back to the path: reopen it), `replaced` (another file sits at the path: reopen it
 * to see it), `salvaged` (the file was damaged in place; it was moved aside and this store's
 * database written back: reopen it), `damaged` (damaged, and this store cannot read its
 * database whole either: reopen it with recovery).
 */
export type StoreFileCheck = "same" | "missing" | "restored" | "replaced" | "salvaged" | "damaged";

/** Options of {@link casUpdate}. */
export interface CasUpdateOptions {
  /** Attempts before the last StaleVersionError is rethrown (default 20). */
  readonly attempts?: number;
}

/**
 * Read–modify–write with retry: reads the record, asks `fn` for a patch, and applies it with
 * compare-and-set, retrying from the read on {@link StaleVersionError}. `fn` may run several
 * times, so it must be pure. When `fn` returns `undefined` nothing is written and the current
 * record is returned.
 * @throws SessionNotFoundError when the record does not exist (or is deleted meanwhile).
 * @throws StaleVersionError when every attempt lost the race.
 */
export async function casUpdate(
  store: SessionStore,
  name: string,
  fn: (current: SessionRecord) => SessionPatch | undefined,
  opts: CasUpdateOptions = {},
): Promise<SessionRecord> {
  const attempts = opts.attempts ?? 20;
  for (let i = 1; ; i++) {
    const current = await store.get(name);
    if (!current) throw new SessionNotFoundError(name, "no session record");
    const patch = fn(current);
    if (patch === undefined) return current;
    try {
      return await store.update(name, current.version, patch);
    } catch (e) {
      if (!(e instanceof StaleVersionError) || i >= attempts) throw e;
    }
  }
}

/**
 * Failure times within `windowMs` of `now`, oldest first, keeping at most `max` (the newest).
 * Pure; for maintaining {@link SessionRecord.recentFailures}.
 */
export function pruneFailures(times: readonly number[], now: number, windowMs: number, max = 32): number[] {
  return times
    .filter((t) => t > now - windowMs && t <= now)
    .sort((a, b) => a - b)
    .slice(-max);
}
