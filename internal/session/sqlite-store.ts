/**
 * The production {@link SessionStore}: one SQLite file per city (`<city>/.gc/state.db`, 0600 in
 * a 0700 directory) through better-sqlite3, in WAL mode with a busy timeout, so the controller
 * and any number of `gc` commands share it safely. Every mutation is one transaction, so a
 * SIGKILL at any point leaves a consistent database. Opened by cmd/gc's composition root.
 *
 * This module is the store's surface (open, recover, the {@link SessionStore} methods, event
 * queries, locks); the file on disk (creation, pragmas, migration, write-back) is
 * sqlite-file.ts, and the statements and write transactions are sqlite-statements.ts.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type Database from "better-sqlite3";
import { isGcError, StoreError } from "../base/errors.js";
import { validateSessionName } from "../base/names.js";
import { openSqlite } from "../base/sqlite.js";
import { nextTurn } from "../base/turn.js";
import {
  checkLeaseMs,
  decodeEntry,
  decodePayload,
  decodeRecord,
  deliveredNudge,
  eventRow,
  failedNudge,
  newNudge,
  newRecord,
  newWait,
  persistEntries,
  resolveTenancy,
  type Tenancy,
} from "./codec.js";
import { LockManager, type LockTable } from "./lock.js";
import { isDamage, moveAside, StateFileFault, type StoreRecovery, writeRecovery } from "./recovery.js";
import { checkStateFile, configure, describe, migrate, prepareFile } from "./sqlite-file.js";
import {
  type Db,
  decodeNudge,
  decodeWait,
  type EventDbRow,
  type IdRow,
  prepareStatements,
  prepareTransactions,
  type Statements,
  type Stmt,
  type Transactions,
} from "./sqlite-statements.js";
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
  type StoreFileCheck,
  type StoreInfo,
  type StoreOpenOptions,
  type Wait,
  type WaitFilter,
  type WaitSettlement,
} from "./store.js";

/** How long a write waits for another process's write transaction before failing. */
export const BUSY_TIMEOUT_MS = 5_000;
/** File name of the state database inside `<city>/.gc/`. */
export const STATE_DB_FILE = "state.db";

/** Options of {@link openSqliteStore}: exactly one of `cityDir` and `path`. */
export interface SqliteStoreOptions extends StoreOpenOptions {
  /** City directory: the database is `<cityDir>/.gc/state.db` (directory created 0700). */
  readonly cityDir?: string;
  /** Explicit database path (parent directories created 0700 when missing). */
  readonly path?: string;
  /** Default {@link BUSY_TIMEOUT_MS}. */
  readonly busyTimeoutMs?: number;
  /**
   * Move a damaged file aside and start a fresh database instead of throwing (the city's
   * composition root sets it; see {@link openSqliteStore}).
   */
  readonly recover?: boolean;
  /**
   * Create the database when the file is missing (default true). False: a missing file is a
   * StoreError (a command beside a controller that writes its open copy back must not start
   * an empty file that the write-back would then move aside with its writes).
   */
  readonly create?: boolean;
}

/**
 * Opens (creating and migrating when needed) the state database for one actor. A new
 * database is built under a temporary name and linked into place complete, so an existing
 * `state.db` of 0 bytes is never "new": it is damage, like a file that is not a database or
 * fails SQLite's quick check. Damage is a {@link StoreError} unless `recover` is set; then
 * the file is moved aside (`state.db.corrupt-<time>`), a `state-recovered.json` marker is
 * written and a fresh database is opened, with {@link SqliteStore.recovery} saying so.
 * @throws StoreError naming the path when the file is not a usable gc state database
 *   (damaged without `recover`, foreign, from a newer gc, wrong tenancy, unreadable).
 * @throws TypeError / InvalidNameError for bad options (nothing is created).
 */
export function openSqliteStore(opts: SqliteStoreOptions): SqliteStore {
  const tenancy = resolveTenancy(opts);
  if ((opts.cityDir === undefined) === (opts.path === undefined)) {
    throw new TypeError("openSqliteStore: pass exactly one of cityDir and path");
  }
  const path = opts.cityDir !== undefined ? join(opts.cityDir, ".gc", STATE_DB_FILE) : (opts.path as string);
  const now = opts.now ?? Date.now;
  try {
    return openAt(path, opts, tenancy, now);
  } catch (e) {
    if (!(e instanceof StateFileFault)) throw e;
    const problem = `${path}: the state database is damaged (${e.message})`;
    if (!opts.recover) {
      throw new StoreError(
        `${problem}; nothing was written. \`gc reconcile\` or \`gc start\` moves it aside and starts a new one (or put a good copy back)`,
        { cause: e },
      );
    }
    const at = new Date(now());
    const movedTo = moveAside(path, e.ino, at);
    const store = openAt(path, opts, tenancy, now);
    if (movedTo) {
      // Ids of the lost file may be referred to still (an event cursor, a nudge id someone
      // noted): the new file's count from the recovery's time in ms, above any of them.
      store.raiseIdFloor(at.getTime());
      const recovery: StoreRecovery = { at: at.toISOString(), reason: e.message, movedTo };
      writeRecovery(dirname(path), recovery);
      store.recovery = recovery;
    }
    return store;
  }
}

function openAt(path: string, opts: SqliteStoreOptions, tenancy: Tenancy, now: () => number): SqliteStore {
  if (opts.create === false && !existsSync(path))
    throw new StoreError(
      `${path}: the state database is missing; nothing was written (a running controller writes its open copy back at its next pass: \`gc reconcile\`, then try again)`,
    );
  const ino = prepareFile(path, opts.cityDir !== undefined, tenancy, now());
  let db: Db;
  try {
    db = openSqlite(path, {
      fileMustExist: true,
      timeout: opts.busyTimeoutMs ?? BUSY_TIMEOUT_MS,
    });
  } catch (cause) {
    if (isDamage(cause)) throw new StateFileFault(describe(cause), ino, { cause });
    throw new StoreError(`${path}: cannot open the state database: ${describe(cause)}`, { cause });
  }
  try {
    configure(db, path);
    migrate(db, path, tenancy, now());
    return new SqliteStore(db, path, tenancy, now, ino);
  } catch (cause) {
    db.close();
    if (cause instanceof StoreError || cause instanceof StateFileFault) throw cause;
    if (isDamage(cause)) throw new StateFileFault(describe(cause), ino, { cause });
    throw new StoreError(`${path}: not a usable gc state database: ${describe(cause)}`, { cause });
  }
}

/** The SQLite {@link SessionStore}. Create it with {@link openSqliteStore}. */
export class SqliteStore implements SessionStore {
  readonly info: StoreInfo;
  /** Absolute or given path of the database file. */
  readonly path: string;
  /** Set when this open found the file damaged and replaced it (report it loudly). */
  recovery: StoreRecovery | undefined;
  readonly #db: Db;
  readonly #actor: string;
  /** The records the last {@link list} returned, by their stored text. */
  #listed = new Map<string, SessionRecord>();
  /** Every record at the last {@link list}, and the database's change mark then. */
  #lastList: { mark: string; records: SessionRecord[] } | undefined;
  readonly #now: () => number;
  readonly #locks: LockManager;
  readonly #s: Statements;
  readonly #queries = new Map<string, Stmt>();
  readonly #tx: Transactions;
  #closed = false;

  /** Inode of the file opened, to tell it was deleted or replaced under this store. */
  readonly #ino: number;

  /** @internal Use {@link openSqliteStore}. */
  constructor(db: Db, path: string, tenancy: Tenancy, now: () => number, ino: number) {
    this.#db = db;
    this.#ino = ino;
    this.path = path;
    this.#actor = tenancy.key;
    this.#now = now;
    this.info = { kind: "sqlite", location: path, tenancy: tenancy.mode, actor: tenancy.actor };
    this.#s = prepareStatements(db);
    this.#tx = prepareTransactions(db, this.#s, this.#actor, path, now);
    this.#locks = new LockManager(this.#lockTable(), now);
  }

  #lockTable(): LockTable {
    return {
      tryAcquire: (name, mine, now) => this.#run(() => this.#tx.tryLock(name, mine, now)),
      renew: (name, token, leaseUntil) => this.#run(() => this.#tx.renew(name, token, leaseUntil)),
      release: (name, token) => this.#run(() => this.#tx.release(name, token)),
      read: (name) => {
        const cur = this.#run(() => this.#s.getLock.get(this.#actor, name) as string | undefined);
        return cur === undefined ? undefined : (JSON.parse(cur) as LockHolder);
      },
    };
  }

  /** Runs a database step, mapping SQLite failures to StoreError (gc errors pass through). */
  #run<T>(fn: () => T): T {
    if (this.#closed) throw new StoreError(`${this.path}: session store is closed`);
    try {
      return fn();
    } catch (e) {
      if (isGcError(e) || e instanceof TypeError || e instanceof RangeError) throw e;
      throw new StoreError(`${this.path}: ${describe(e)}`, { cause: e });
    }
  }

  async get(name: string): Promise<SessionRecord | undefined> {
    validateSessionName(name);
    const text = this.#run(() => this.#s.getRecord.get(this.#actor, name) as string | undefined);
    return text === undefined ? undefined : decodeRecord(this.path, text);
  }

  async list(filter: SessionFilter = {}): Promise<SessionRecord[]> {
    return (await this.#allRecords()).filter(
      (r) =>
        (filter.agent === undefined || r.agent === filter.agent) &&
        (filter.states === undefined || filter.states.includes(r.state)),
    );
  }

  /**
   * Every record of the actor, by name. Nothing written since the last call (by this
   * connection or any other: the change mark) returns the same records without reading a
   * row; otherwise a row stored with the same text as at the last read decodes to the same
   * (frozen) record. A steady controller pass reads and parses nothing. The rows are read in
   * one query; decoding many of them gives the event loop a turn every {@link DECODE_TURN}
   * records, so a caller's I/O (a tmux client's replies) is answered meanwhile.
   */
  async #allRecords(): Promise<readonly SessionRecord[]> {
    const read = this.#run(() => {
      const mark = this.#s.changeMark.get() as string;
      if (this.#lastList?.mark === mark) return this.#lastList;
      return { mark, rows: this.#s.listRecords.all(this.#actor) as string[] };
    });
    if ("records" in read) return read.records;
    const { mark, rows } = read;
    const previous = this.#listed;
    const listed = new Map<string, SessionRecord>();
    const records: SessionRecord[] = [];
    let decoded = 0;
    for (const t of rows) {
      let rec = previous.get(t);
      if (rec === undefined) {
        if (++decoded % DECODE_TURN === 0) await nextTurn();
        rec = deepFreeze(decodeRecord(this.path, t));
      }
      listed.set(t, rec);
      records.push(rec);
    }
    this.#listed = listed;
    this.#lastList = { mark, records };
    return records;
  }

  async create(init: NewSession, then?: SessionPatch): Promise<SessionRecord> {
    const now = this.#now();
    const rec = newRecord(init, now);
    return this.#run(() => this.#tx.create(rec, then, now));
  }

  async update(name: string, expectedVersion: number, patch: SessionPatch): Promise<SessionRecord> {
    validateSessionName(name);
    return this.#run(() => this.#tx.update(name, expectedVersion, patch, this.#now()));
  }

  async delete(name: string, expectedVersion?: number): Promise<boolean> {
    validateSessionName(name);
    return this.#run(() => this.#tx.delete(name, expectedVersion)) !== undefined;
  }

  async appendHistory(
    name: string,
    entries: readonly HistoryEntry[],
    expectedCount: number,
  ): Promise<number> {
    validateSessionName(name);
    const rows = persistEntries(entries);
    return this.#run(() => this.#tx.append(name, rows, expectedCount));
  }

  async checkpoint(name: string, entries: readonly HistoryEntry[]): Promise<CheckpointResult> {
    validateSessionName(name);
    const rows = persistEntries(entries);
    return this.#run(() => this.#tx.checkpoint(name, rows));
  }

  async readHistory(
    name: string,
    opts: { from?: number; limit?: number } = {},
  ): Promise<StoredHistoryEntry[]> {
    validateSessionName(name);
    const from = Math.max(0, opts.from ?? 0);
    const limit = opts.limit === undefined ? -1 : Math.max(0, opts.limit);
    const rows = this.#run(
      () => this.#s.historyRange.all(this.#actor, name, from, limit) as { idx: number; entry: string }[],
    );
    return rows.map((r) => decodeEntry(r.idx, r.entry));
  }

  async historyCount(name: string): Promise<number> {
    validateSessionName(name);
    return this.#run(() => this.#s.historyCount.get(this.#actor, name) as number);
  }

  async appendEvent(event: NewEvent): Promise<SessionEvent> {
    const row = eventRow(event, this.#now());
    const res = this.#run(() =>
      this.#s.insertEvent.run(this.#actor, row.session, row.type, row.at, row.payload),
    ) as Database.RunResult;
    return {
      seq: Number(res.lastInsertRowid),
      session: row.session,
      type: row.type,
      at: row.at,
      payload: decodePayload(row.payload),
    };
  }

  async queryEvents(q: EventQuery = {}): Promise<SessionEvent[]> {
    if (q.session !== undefined) validateSessionName(q.session);
    const where = ["actor = ?"];
    const args: unknown[] = [this.#actor];
    if (q.session !== undefined) {
      where.push("session = ?");
      args.push(q.session);
    }
    if (q.since !== undefined) {
      where.push("seq > ?");
      args.push(q.since);
    }
    if (q.types !== undefined) {
      if (q.types.length === 0) return [];
      where.push(`type IN (${q.types.map(() => "?").join(", ")})`);
      args.push(...q.types);
    }
    const sql =
      `SELECT seq, session, type, at, payload FROM events WHERE ${where.join(" AND ")} ` +
      `ORDER BY seq ${q.order === "desc" ? "DESC" : "ASC"} LIMIT ?`;
    args.push(q.limit === undefined ? -1 : Math.max(0, q.limit));
    const rows = this.#run(() => this.#query(sql).all(...args) as EventDbRow[]);
    return rows.map((r) => ({
      seq: r.seq,
      session: r.session,
      type: r.type,
      at: r.at,
      payload: decodePayload(r.payload),
    }));
  }

  #query(sql: string): Stmt {
    let st = this.#queries.get(sql);
    if (!st) {
      st = this.#db.prepare(sql);
      this.#queries.set(sql, st);
    }
    return st;
  }

  async pruneEvents(throughSeq: number): Promise<number> {
    return this.#run(() => this.#s.pruneEvents.run(this.#actor, throughSeq).changes ?? 0);
  }

  async compact(): Promise<void> {
    // VACUUM rewrites the file without free pages or old cells; the truncating checkpoint
    // then empties the WAL, whose frames held the old page images.
    return this.#run(() => {
      this.#db.exec("VACUUM");
      // A reader of another process can hold the WAL: wait for it briefly (this blocks the
      // thread), and say so rather than claim the old pages are gone.
      const timeout = this.#db.pragma("busy_timeout", { simple: true });
      this.#db.pragma("busy_timeout = 1000");
      try {
        const [r] = this.#db.pragma("wal_checkpoint(TRUNCATE)") as {
          busy: number;
          log: number;
          checkpointed: number;
        }[];
        if (r?.busy !== 0 || r.log !== r.checkpointed) {
          throw new StoreError(
            `${this.path}: compaction: the WAL is in use by another process; try again later`,
          );
        }
      } finally {
        this.#db.pragma(`busy_timeout = ${Number(timeout)}`);
      }
    });
  }

  async trimEvents(bounds: EventRetention): Promise<number> {
    return this.#run(() => {
      let n = 0;
      if (bounds.before !== undefined) n += this.#s.trimEventsBefore.run(this.#actor, bounds.before).changes;
      if (bounds.keep !== undefined) {
        const keep = Math.max(0, Math.floor(bounds.keep));
        // Seqs are unique: a log whose seq range is no wider than `keep` holds at most `keep`
        // events, and the counting delete (a walk over `keep` rows) is skipped.
        const { lo, hi } = this.#s.eventSeqRange.get(this.#actor) as { lo: number | null; hi: number | null };
        if (lo !== null && hi !== null && hi - lo + 1 > keep)
          n += this.#s.trimEventsKeep.run(this.#actor, this.#actor, keep).changes;
      }
      return n;
    });
  }

  async createWait(wait: NewWait): Promise<Wait> {
    const w = newWait(wait, this.#now());
    const res = this.#run(() =>
      this.#s.insertWait.run(this.#actor, w.session, w.state, w.expiresAt, JSON.stringify(w)),
    ) as Database.RunResult;
    return { id: Number(res.lastInsertRowid), ...w };
  }

  async getWait(id: number): Promise<Wait | undefined> {
    return decodeWait(this.#run(() => this.#s.getWait.get(id, this.#actor) as IdRow | undefined));
  }

  async resolveWait(id: number, result?: JsonValue): Promise<WaitSettlement | undefined> {
    return this.#run(() =>
      this.#tx.settle(id, "resolved", result === undefined ? {} : { result }, this.#now()),
    );
  }

  async expireWait(id: number, reason = "expired"): Promise<WaitSettlement | undefined> {
    return this.#run(() => this.#tx.settle(id, "expired", { reason }, this.#now()));
  }

  async cancelWait(id: number, reason: string): Promise<WaitSettlement | undefined> {
    return this.#run(() => this.#tx.settle(id, "canceled", { reason }, this.#now()));
  }

  async expireDueWaits(): Promise<Wait[]> {
    return this.#run(() => this.#tx.expireWaits(this.#now()));
  }

  async listWaits(filter: WaitFilter = {}): Promise<Wait[]> {
    if (filter.session !== undefined) validateSessionName(filter.session);
    const rows = this.#run(() => this.#s.listWaits.all(this.#actor) as IdRow[]);
    return rows
      .map((r) => decodeWait(r) as Wait)
      .filter(
        (w) =>
          (filter.session === undefined || w.session === filter.session) &&
          (filter.states === undefined || filter.states.includes(w.state)),
      );
  }

  async enqueueNudge(nudge: NewNudge): Promise<Nudge> {
    const n = newNudge(nudge, this.#now());
    const res = this.#run(() =>
      this.#s.insertNudge.run(this.#actor, n.session, n.state, JSON.stringify(n)),
    ) as Database.RunResult;
    return { id: Number(res.lastInsertRowid), ...n };
  }

  async getNudge(id: number): Promise<Nudge | undefined> {
    return decodeNudge(this.#run(() => this.#s.getNudge.get(id, this.#actor) as IdRow | undefined));
  }

  async listNudges(filter: NudgeFilter = {}): Promise<Nudge[]> {
    if (filter.session !== undefined) validateSessionName(filter.session);
    const rows = this.#run(() => this.#s.listNudges.all(this.#actor) as IdRow[]);
    return rows
      .map((r) => decodeNudge(r) as Nudge)
      .filter(
        (n) =>
          (filter.session === undefined || n.session === filter.session) &&
          (filter.states === undefined || filter.states.includes(n.state)),
      );
  }

  async claimNudge(session: string, opts: { leaseMs?: number } = {}): Promise<Nudge | undefined> {
    validateSessionName(session);
    const leaseMs = opts.leaseMs ?? DEFAULT_NUDGE_LEASE_MS;
    checkLeaseMs(leaseMs);
    return this.#run(() => this.#tx.claim(session, this.#now(), leaseMs));
  }

  async failNudge(
    id: number,
    attempt: number,
    reason: string,
    opts: { retryAfterMs?: number; final?: boolean } = {},
  ): Promise<Nudge> {
    const now = this.#now();
    return this.#run(() =>
      this.#tx.nudgeTo(id, (n) =>
        failedNudge(n, id, attempt, reason, opts.retryAfterMs ?? 0, now, opts.final),
      ),
    );
  }

  async completeNudge(id: number, attempt: number): Promise<Nudge> {
    const now = this.#now();
    return this.#run(() => this.#tx.nudgeTo(id, (n) => deliveredNudge(n, id, attempt, now)));
  }

  async expireNudges(): Promise<Nudge[]> {
    return this.#run(() => this.#tx.expireNudges(this.#now()));
  }

  async synchronize<T>(name: string, fn: () => Promise<T> | T, opts: LockOptions = {}): Promise<T> {
    validateSessionName(name);
    const lock = await this.#locks.acquire(name, opts);
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  async tryLock(name: string, opts: LockOptions = {}): Promise<SessionLock> {
    validateSessionName(name);
    return this.#locks.tryLock(name, opts);
  }

  async lockHolder(name: string): Promise<LockHolder | undefined> {
    validateSessionName(name);
    return this.#locks.holder(name);
  }

  /**
   * Runs SQLite's full `integrity_check` and returns its messages (`["ok"]` when healthy).
   * Reads the whole file: for `gc doctor` and tests, not for hot paths.
   */
  integrityCheck(): string[] {
    return this.#run(() => this.#db.pragma("integrity_check") as { integrity_check: string }[]).map(
      (r) => r.integrity_check,
    );
  }

  /** The schema version the database is at. */
  schemaVersion(): number {
    return this.#run(
      () => this.#db.prepare("SELECT max(version) FROM gc_schema_version").pluck().get() as number,
    );
  }

  /**
   * Makes the next id of events, waits and nudges at least `floor + 1` (ids are never reused:
   * a recovered database starts above the ids of the file it replaces). @internal
   */
  raiseIdFloor(floor: number): void {
    this.#run(() =>
      this.#db
        .transaction(() => {
          for (const table of ["events", "waits", "nudges"]) {
            const seq = this.#db.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").pluck().get(table);
            if (seq === undefined)
              this.#db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(table, floor);
            else if (Number(seq) < floor)
              this.#db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = ?").run(floor, table);
          }
        })
        .immediate(),
    );
  }

  /**
   * Whether {@link path} still names the file this store has open, and is still a database.
   * With `writeBack` (the controller, whose database is the city's bookkeeping) a file that is
   * gone or damaged is written back from the open database (VACUUM INTO a temporary name,
   * linked into place), so its records, holds, queued nudges, events and id sequences are not
   * lost: an `rm .gc/state.db` while it runs (a file another process created there meanwhile
   * is moved aside to `state.db.replaced-<time>` first), and garbage written over the file in
   * place, or a pass that met damage (`damaged`), whose file is moved aside to
   * `state.db.corrupt-<time>` first. When the open database cannot be read either, `damaged`
   * is found and the file left as it is (reopening it with `recover` starts a new one).
   */
  checkFile(opts: { writeBack?: boolean; damaged?: boolean } = {}): {
    found: StoreFileCheck;
    movedAside?: string;
  } {
    if (this.#closed) return { found: "same" };
    return checkStateFile({ db: this.#db, path: this.path, ino: this.#ino, now: this.#now }, opts);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#locks.releaseAll();
    this.#closed = true;
    this.#db.close();
  }
}

/** Records {@link SqliteStore}'s list decodes between two turns of the event loop. */
const DECODE_TURN = 100;

/** Freezes a decoded JSON value and everything in it, so a shared record cannot be changed. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    // A decoded JSON value: plain objects and arrays, whose enumerable keys are all their own
    // (`for…in` walks them without an array of values per object).
    const obj = value as Record<string, unknown>;
    for (const k in obj) deepFreeze(obj[k]);
    Object.freeze(value);
  }
  return value;
}
