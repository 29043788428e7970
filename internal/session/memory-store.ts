/**
 * In-memory {@link SessionStore} for tests and dry runs. Several store instances (actors, or
 * stand-ins for separate processes) can share one {@link MemoryBacking}, which plays the
 * database. Rows are kept serialised, exactly as the SQLite store keeps them, so both stores
 * behave alike; both pass conformance/store.ts.
 */
import { SessionExistsError, SessionNotFoundError, StoreError } from "../base/errors.js";
import { validateSessionName } from "../base/names.js";
import {
  ageNudge,
  applyPatch,
  checkLeaseMs,
  checkTenancy,
  claimed,
  decodeEntry,
  decodePayload,
  decodeRecord,
  deliveredNudge,
  encodeRecord,
  eventRow,
  failedNudge,
  newNudge,
  newRecord,
  newWait,
  persistEntries,
  pickDue,
  planCheckpoint,
  resolveTenancy,
  settleWait,
  staleHistory,
  staleRecord,
  type Tenancy,
  waitDue,
} from "./codec.js";
import { holderAlive, LockManager, type LockTable } from "./lock.js";
import {
  type CheckpointResult,
  DEFAULT_NUDGE_LEASE_MS,
  type EventQuery,
  type EventRetention,
  type HistoryEntry,
  type JsonValue,
  type LockHolder,
  type LockOptions,
  type NewEvent,
  type NewNudge,
  type NewSession,
  type NewWait,
  type Nudge,
  type NudgeFilter,
  type SessionEvent,
  type SessionFilter,
  type SessionLock,
  type SessionPatch,
  type SessionRecord,
  type SessionStore,
  type StoredHistoryEntry,
  type StoreInfo,
  type StoreOpenOptions,
  type Wait,
  type WaitFilter,
  type WaitSettlement,
} from "./store.js";

interface EventRowM {
  readonly seq: number;
  readonly actor: string;
  readonly session: string | null;
  readonly type: string;
  readonly at: number;
  readonly payload: string;
}

interface OwnedRow {
  readonly actor: string;
  data: string;
}

/** The shared "database" of memory stores. Create one per simulated city; never reuse across tests. */
export class MemoryBacking {
  /** Label shown in errors and {@link StoreInfo.location}. */
  readonly label: string;
  /** @internal Tenancy fixed by the first store opened on it. */
  tenancy: "single" | "multi" | undefined;
  /** @internal */ readonly sessions = new Map<string, string>();
  /** @internal */ readonly history = new Map<string, string[]>();
  /** @internal */ events: EventRowM[] = [];
  /** @internal */ nextSeq = 1;
  /** @internal */ readonly waits = new Map<number, OwnedRow>();
  /** @internal */ nextWaitId = 1;
  /** @internal */ readonly nudges = new Map<number, OwnedRow>();
  /** @internal */ nextNudgeId = 1;
  /** @internal */ readonly locks = new Map<string, string>();

  constructor(label = "memory") {
    this.label = label;
  }
}

/** Options of {@link openMemoryStore}. */
export interface MemoryStoreOptions extends StoreOpenOptions {
  /** The shared backing (default: a fresh one, private to this store). */
  readonly backing?: MemoryBacking;
}

/**
 * Opens a memory store for one actor (or single-tenant) over `opts.backing`.
 * @throws TypeError / InvalidNameError for a missing or bad actor.
 * @throws StoreError when the backing was first opened with the other tenancy.
 */
export function openMemoryStore(opts: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(opts);
}

const key = (actor: string, name: string): string => `${actor}\u0000${name}`;

/** The in-memory {@link SessionStore}. Create it with {@link openMemoryStore}. */
export class MemoryStore implements SessionStore {
  readonly info: StoreInfo;
  readonly #b: MemoryBacking;
  readonly #t: Tenancy;
  readonly #now: () => number;
  readonly #locks: LockManager;
  #closed = false;

  constructor(opts: MemoryStoreOptions) {
    this.#t = resolveTenancy(opts);
    this.#b = opts.backing ?? new MemoryBacking();
    checkTenancy(this.#b.label, this.#b.tenancy, this.#t);
    this.#b.tenancy = this.#t.mode;
    this.#now = opts.now ?? Date.now;
    this.info = { kind: "memory", location: this.#b.label, tenancy: this.#t.mode, actor: this.#t.actor };
    this.#locks = new LockManager(this.#lockTable(), this.#now);
  }

  #open(): void {
    if (this.#closed) throw new StoreError(`${this.#b.label}: session store is closed`);
  }

  #k(name: string): string {
    return key(this.#t.key, name);
  }

  #read(name: string): SessionRecord | undefined {
    const text = this.#b.sessions.get(this.#k(name));
    return text === undefined ? undefined : decodeRecord(this.#b.label, text);
  }

  #event(ev: NewEvent): SessionEvent {
    const row = eventRow(ev, this.#now());
    const seq = this.#b.nextSeq++;
    this.#b.events.push({ seq, actor: this.#t.key, ...row });
    return { seq, session: row.session, type: row.type, at: row.at, payload: decodePayload(row.payload) };
  }

  async get(name: string): Promise<SessionRecord | undefined> {
    this.#open();
    validateSessionName(name);
    return this.#read(name);
  }

  async list(filter: SessionFilter = {}): Promise<SessionRecord[]> {
    this.#open();
    const prefix = key(this.#t.key, "");
    const out: SessionRecord[] = [];
    for (const [k, text] of this.#b.sessions) {
      if (!k.startsWith(prefix)) continue;
      const r = decodeRecord(this.#b.label, text);
      if (filter.agent !== undefined && r.agent !== filter.agent) continue;
      if (filter.states !== undefined && !filter.states.includes(r.state)) continue;
      out.push(r);
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async create(init: NewSession, then?: SessionPatch): Promise<SessionRecord> {
    this.#open();
    const rec = newRecord(init, this.#now());
    if (this.#b.sessions.has(this.#k(rec.name))) throw new SessionExistsError(rec.name);
    const ev = {
      session: rec.name,
      type: "session.created",
      payload: { state: rec.state, agent: rec.agent },
    };
    eventRow(ev, this.#now()); // validate before any write
    // `then` is applied before anything is written: an illegal transition creates nothing.
    const after = then ? applyPatch(rec, then, this.#now()) : undefined;
    this.#b.sessions.set(this.#k(rec.name), encodeRecord(after?.record ?? rec));
    this.#event(ev);
    if (after?.transition)
      this.#event({ session: rec.name, type: "session.state", payload: { ...after.transition } });
    return decodeRecord(this.#b.label, encodeRecord(after?.record ?? rec));
  }

  async update(name: string, expectedVersion: number, patch: SessionPatch): Promise<SessionRecord> {
    this.#open();
    validateSessionName(name);
    const cur = this.#read(name);
    if (!cur) throw new SessionNotFoundError(name, "no session record");
    if (cur.version !== expectedVersion) throw staleRecord(name, expectedVersion, cur.version);
    const { record, transition } = applyPatch(cur, patch, this.#now());
    const text = encodeRecord(record);
    this.#b.sessions.set(this.#k(name), text);
    if (transition) this.#event({ session: name, type: "session.state", payload: { ...transition } });
    return decodeRecord(this.#b.label, text);
  }

  async delete(name: string, expectedVersion?: number): Promise<boolean> {
    this.#open();
    validateSessionName(name);
    const cur = this.#read(name);
    if (!cur) return false;
    if (expectedVersion !== undefined && cur.version !== expectedVersion) {
      throw staleRecord(name, expectedVersion, cur.version);
    }
    this.#b.sessions.delete(this.#k(name));
    this.#b.history.delete(this.#k(name));
    for (const table of [this.#b.waits, this.#b.nudges]) {
      for (const [id, row] of table) {
        if (row.actor === this.#t.key && (JSON.parse(row.data) as { session: string }).session === name) {
          table.delete(id);
        }
      }
    }
    this.#event({ session: name, type: "session.deleted", payload: { version: cur.version } });
    return true;
  }

  async appendHistory(
    name: string,
    entries: readonly HistoryEntry[],
    expectedCount: number,
  ): Promise<number> {
    this.#open();
    validateSessionName(name);
    const rows = persistEntries(entries);
    if (!this.#b.sessions.has(this.#k(name))) throw new SessionNotFoundError(name, "no session record");
    const stored = this.#b.history.get(this.#k(name)) ?? [];
    if (stored.length !== expectedCount) {
      throw staleHistory(name, expectedCount, stored.length);
    }
    const next = [...stored, ...rows];
    this.#b.history.set(this.#k(name), next);
    return next.length;
  }

  async checkpoint(name: string, entries: readonly HistoryEntry[]): Promise<CheckpointResult> {
    this.#open();
    validateSessionName(name);
    const rows = persistEntries(entries);
    if (!this.#b.sessions.has(this.#k(name))) throw new SessionNotFoundError(name, "no session record");
    const stored = this.#b.history.get(this.#k(name)) ?? [];
    const plan = planCheckpoint(stored, rows);
    if (plan.mode === "replace") this.#b.history.set(this.#k(name), [...rows]);
    else if (plan.mode === "append") this.#b.history.set(this.#k(name), [...stored, ...plan.tail]);
    return { mode: plan.mode, count: rows.length };
  }

  async readHistory(
    name: string,
    opts: { from?: number; limit?: number } = {},
  ): Promise<StoredHistoryEntry[]> {
    this.#open();
    validateSessionName(name);
    const from = Math.max(0, opts.from ?? 0);
    const stored = this.#b.history.get(this.#k(name)) ?? [];
    const end =
      opts.limit === undefined ? stored.length : Math.min(stored.length, from + Math.max(0, opts.limit));
    const out: StoredHistoryEntry[] = [];
    for (let i = from; i < end; i++) out.push(decodeEntry(i, stored[i] as string));
    return out;
  }

  async historyCount(name: string): Promise<number> {
    this.#open();
    validateSessionName(name);
    return this.#b.history.get(this.#k(name))?.length ?? 0;
  }

  async appendEvent(event: NewEvent): Promise<SessionEvent> {
    this.#open();
    return this.#event(event);
  }

  async queryEvents(q: EventQuery = {}): Promise<SessionEvent[]> {
    this.#open();
    if (q.session !== undefined) validateSessionName(q.session);
    let rows = this.#b.events.filter(
      (e) =>
        e.actor === this.#t.key &&
        (q.session === undefined || e.session === q.session) &&
        (q.since === undefined || e.seq > q.since) &&
        (q.types === undefined || q.types.includes(e.type)),
    );
    if (q.order === "desc") rows = rows.reverse();
    if (q.limit !== undefined) rows = rows.slice(0, Math.max(0, q.limit));
    return rows.map((e) => ({
      seq: e.seq,
      session: e.session,
      type: e.type,
      at: e.at,
      payload: decodePayload(e.payload),
    }));
  }

  async compact(): Promise<void> {
    this.#open(); // nothing on disk
  }

  async trimEvents(bounds: EventRetention): Promise<number> {
    this.#open();
    const before = this.#b.events.length;
    const mine = this.#b.events.filter((e) => e.actor === this.#t.key);
    const keep = bounds.keep === undefined ? mine.length : Math.max(0, Math.floor(bounds.keep));
    const dropSeq = new Set(
      mine
        .filter((e, i) => (bounds.before !== undefined && e.at < bounds.before) || i < mine.length - keep)
        .map((e) => e.seq),
    );
    this.#b.events = this.#b.events.filter((e) => !dropSeq.has(e.seq));
    return before - this.#b.events.length;
  }

  async pruneEvents(throughSeq: number): Promise<number> {
    this.#open();
    const before = this.#b.events.length;
    this.#b.events = this.#b.events.filter((e) => e.actor !== this.#t.key || e.seq > throughSeq);
    return before - this.#b.events.length;
  }

  #getOwned<T>(table: Map<number, OwnedRow>, id: number): T | undefined {
    const row = table.get(id);
    return row && row.actor === this.#t.key ? (JSON.parse(row.data) as T) : undefined;
  }

  #putOwned<T extends { id: number }>(table: Map<number, OwnedRow>, value: T): T {
    table.set(value.id, { actor: this.#t.key, data: JSON.stringify(value) });
    return JSON.parse(JSON.stringify(value)) as T;
  }

  #allOwned<T>(table: Map<number, OwnedRow>): T[] {
    const out: T[] = [];
    for (const row of table.values()) if (row.actor === this.#t.key) out.push(JSON.parse(row.data) as T);
    return out;
  }

  async createWait(wait: NewWait): Promise<Wait> {
    this.#open();
    const w = newWait(wait, this.#now());
    return this.#putOwned(this.#b.waits, { id: this.#b.nextWaitId++, ...w });
  }

  async getWait(id: number): Promise<Wait | undefined> {
    this.#open();
    return this.#getOwned<Wait>(this.#b.waits, id);
  }

  #settle(
    id: number,
    to: "resolved" | "expired" | "canceled",
    detail: { result?: JsonValue; reason?: string },
  ) {
    this.#open();
    const w = this.#getOwned<Wait>(this.#b.waits, id);
    if (!w) return undefined;
    const s = settleWait(w, to, this.#now(), detail);
    if (s.changed) this.#putOwned(this.#b.waits, s.wait);
    return s;
  }

  async resolveWait(id: number, result?: JsonValue): Promise<WaitSettlement | undefined> {
    return this.#settle(id, "resolved", result === undefined ? {} : { result });
  }

  async expireWait(id: number, reason = "expired"): Promise<WaitSettlement | undefined> {
    return this.#settle(id, "expired", { reason });
  }

  async cancelWait(id: number, reason: string): Promise<WaitSettlement | undefined> {
    return this.#settle(id, "canceled", { reason });
  }

  async expireDueWaits(): Promise<Wait[]> {
    this.#open();
    const now = this.#now();
    const out: Wait[] = [];
    for (const w of this.#allOwned<Wait>(this.#b.waits).sort((a, b) => a.id - b.id)) {
      if (!waitDue(w, now)) continue;
      const s = settleWait(w, "expired", now, { reason: "deadline passed" });
      out.push(this.#putOwned(this.#b.waits, s.wait));
    }
    return out;
  }

  async listWaits(filter: WaitFilter = {}): Promise<Wait[]> {
    this.#open();
    if (filter.session !== undefined) validateSessionName(filter.session);
    return this.#allOwned<Wait>(this.#b.waits)
      .filter(
        (w) =>
          (filter.session === undefined || w.session === filter.session) &&
          (filter.states === undefined || filter.states.includes(w.state)),
      )
      .sort((a, b) => a.id - b.id);
  }

  async enqueueNudge(nudge: NewNudge): Promise<Nudge> {
    this.#open();
    const n = newNudge(nudge, this.#now());
    return this.#putOwned(this.#b.nudges, { id: this.#b.nextNudgeId++, ...n });
  }

  async getNudge(id: number): Promise<Nudge | undefined> {
    this.#open();
    return this.#getOwned<Nudge>(this.#b.nudges, id);
  }

  async listNudges(filter: NudgeFilter = {}): Promise<Nudge[]> {
    this.#open();
    if (filter.session !== undefined) validateSessionName(filter.session);
    return this.#allOwned<Nudge>(this.#b.nudges)
      .filter(
        (n) =>
          (filter.session === undefined || n.session === filter.session) &&
          (filter.states === undefined || filter.states.includes(n.state)),
      )
      .sort((a, b) => a.id - b.id);
  }

  async claimNudge(session: string, opts: { leaseMs?: number } = {}): Promise<Nudge | undefined> {
    this.#open();
    validateSessionName(session);
    const now = this.#now();
    const leaseMs = opts.leaseMs ?? DEFAULT_NUDGE_LEASE_MS;
    checkLeaseMs(leaseMs);
    const live: Nudge[] = [];
    for (const n of this.#allOwned<Nudge>(this.#b.nudges)) {
      if (n.session !== session || (n.state !== "queued" && n.state !== "claimed")) continue;
      const aged = ageNudge(n, now);
      if (aged) this.#putOwned(this.#b.nudges, aged);
      live.push(aged ?? n);
    }
    const due = pickDue(live, now);
    return due ? this.#putOwned(this.#b.nudges, claimed(due, now, leaseMs)) : undefined;
  }

  async failNudge(
    id: number,
    attempt: number,
    reason: string,
    opts: { retryAfterMs?: number; final?: boolean } = {},
  ): Promise<Nudge> {
    this.#open();
    const n = this.#getOwned<Nudge>(this.#b.nudges, id);
    return this.#putOwned(
      this.#b.nudges,
      failedNudge(n, id, attempt, reason, opts.retryAfterMs ?? 0, this.#now(), opts.final),
    );
  }

  async completeNudge(id: number, attempt: number): Promise<Nudge> {
    this.#open();
    const n = this.#getOwned<Nudge>(this.#b.nudges, id);
    return this.#putOwned(this.#b.nudges, deliveredNudge(n, id, attempt, this.#now()));
  }

  async expireNudges(): Promise<Nudge[]> {
    this.#open();
    const now = this.#now();
    const out: Nudge[] = [];
    for (const n of this.#allOwned<Nudge>(this.#b.nudges).sort((a, b) => a.id - b.id)) {
      const aged = ageNudge(n, now);
      if (!aged) continue;
      this.#putOwned(this.#b.nudges, aged);
      if (aged.state === "dead") out.push(aged);
    }
    return out;
  }

  #lockTable(): LockTable {
    const b = this.#b;
    const k = (name: string) => this.#k(name);
    return {
      tryAcquire(name: string, mine: LockHolder, now: number): LockHolder | undefined {
        const cur = b.locks.get(k(name));
        if (cur !== undefined) {
          const h = JSON.parse(cur) as LockHolder;
          if (holderAlive(h, now)) return h;
        }
        b.locks.set(k(name), JSON.stringify(mine));
        return undefined;
      },
      renew(name: string, token: string, leaseUntil: number): void {
        const cur = b.locks.get(k(name));
        if (cur === undefined) return;
        const h = JSON.parse(cur) as LockHolder;
        if (h.token === token) b.locks.set(k(name), JSON.stringify({ ...h, leaseUntil }));
      },
      release(name: string, token: string): void {
        const cur = b.locks.get(k(name));
        if (cur !== undefined && (JSON.parse(cur) as LockHolder).token === token) b.locks.delete(k(name));
      },
      read(name: string): LockHolder | undefined {
        const cur = b.locks.get(k(name));
        return cur === undefined ? undefined : (JSON.parse(cur) as LockHolder);
      },
    };
  }

  async synchronize<T>(name: string, fn: () => Promise<T> | T, opts: LockOptions = {}): Promise<T> {
    this.#open();
    validateSessionName(name);
    const lock = await this.#locks.acquire(name, opts);
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  async tryLock(name: string, opts: LockOptions = {}): Promise<SessionLock> {
    this.#open();
    validateSessionName(name);
    return this.#locks.tryLock(name, opts);
  }

  async lockHolder(name: string): Promise<LockHolder | undefined> {
    this.#open();
    validateSessionName(name);
    return this.#locks.holder(name);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#locks.releaseAll();
    this.#closed = true;
  }
}
