/**
 * The production {@link SessionStore}: one SQLite file per city (`<city>/.gc/state.db`, 0600 in
 * a 0700 directory) through better-sqlite3, in WAL mode with a busy timeout, so the controller
 * and any number of `gc` commands share it safely. Every mutation is one transaction, so a
 * SIGKILL at any point leaves a consistent database. Opened by cmd/gc's composition root.
 */
import {
  chmodSync,
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  type Stats,
  statSync,
} from "node:fs";
import { dirname, join } from "node:path";
import type Database from "better-sqlite3";
import { isGcError, SessionExistsError, SessionNotFoundError, StoreError } from "../base/errors.js";
import { validateSessionName } from "../base/names.js";
import { openSqlite } from "../base/sqlite.js";
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
import { isDamage, moveAside, StateFileFault, type StoreRecovery, writeRecovery } from "./recovery.js";
import { APPLICATION_ID, BOOTSTRAP_SQL, MIGRATIONS, SCHEMA_VERSION } from "./sqlite-schema.js";
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

type Db = Database.Database;
type Stmt = Database.Statement;

/** Every fixed statement, prepared once per connection. */
function prepareStatements(db: Db) {
  const p = (sql: string) => db.prepare(sql);
  return {
    getRecord: p("SELECT record FROM sessions WHERE actor = ? AND name = ?").pluck(),
    listRecords: p("SELECT record FROM sessions WHERE actor = ? ORDER BY name").pluck(),
    insertRecord: p(
      "INSERT INTO sessions (actor, name, version, record) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    ),
    updateRecord: p(
      "UPDATE sessions SET version = ?, record = ? WHERE actor = ? AND name = ? AND version = ?",
    ),
    deleteRecord: p("DELETE FROM sessions WHERE actor = ? AND name = ?"),
    // Indices are dense from 0, so max + 1 is the count, read from the primary key in O(log n).
    historyCount: p("SELECT coalesce(max(idx) + 1, 0) FROM history WHERE actor = ? AND session = ?").pluck(),
    historyAll: p("SELECT entry FROM history WHERE actor = ? AND session = ? ORDER BY idx").pluck(),
    historyRange: p(
      "SELECT idx, entry FROM history WHERE actor = ? AND session = ? AND idx >= ? ORDER BY idx LIMIT ?",
    ),
    insertHistory: p("INSERT INTO history (actor, session, idx, entry) VALUES (?, ?, ?, ?)"),
    deleteHistory: p("DELETE FROM history WHERE actor = ? AND session = ?"),
    insertEvent: p("INSERT INTO events (actor, session, type, at, payload) VALUES (?, ?, ?, ?, ?)"),
    pruneEvents: p("DELETE FROM events WHERE actor = ? AND seq <= ?"),
    trimEventsBefore: p("DELETE FROM events WHERE actor = ? AND at < ?"),
    trimEventsKeep: p(
      "DELETE FROM events WHERE actor = ? AND seq <= (SELECT seq FROM events WHERE actor = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
    ),
    insertWait: p("INSERT INTO waits (actor, session, state, expires_at, wait) VALUES (?, ?, ?, ?, ?)"),
    getWait: p("SELECT id, wait FROM waits WHERE id = ? AND actor = ?"),
    updateWait: p("UPDATE waits SET state = ?, wait = ? WHERE id = ? AND actor = ?"),
    listWaits: p("SELECT id, wait FROM waits WHERE actor = ? ORDER BY id"),
    dueWaits: p(
      "SELECT id, wait FROM waits WHERE actor = ? AND state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY id",
    ),
    deleteWaits: p("DELETE FROM waits WHERE actor = ? AND session = ?"),
    insertNudge: p("INSERT INTO nudges (actor, session, state, nudge) VALUES (?, ?, ?, ?)"),
    getNudge: p("SELECT id, nudge FROM nudges WHERE id = ? AND actor = ?"),
    updateNudge: p("UPDATE nudges SET state = ?, nudge = ? WHERE id = ? AND actor = ?"),
    listNudges: p("SELECT id, nudge FROM nudges WHERE actor = ? ORDER BY id"),
    liveNudgesOf: p(
      "SELECT id, nudge FROM nudges WHERE actor = ? AND session = ? AND state IN ('queued', 'claimed') ORDER BY id",
    ),
    liveNudges: p(
      "SELECT id, nudge FROM nudges WHERE actor = ? AND state IN ('queued', 'claimed') ORDER BY id",
    ),
    deleteNudges: p("DELETE FROM nudges WHERE actor = ? AND session = ?"),
    getLock: p("SELECT holder FROM locks WHERE actor = ? AND name = ?").pluck(),
    putLock: p("INSERT OR REPLACE INTO locks (actor, name, holder) VALUES (?, ?, ?)"),
    deleteLock: p("DELETE FROM locks WHERE actor = ? AND name = ?"),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

type SettleDetail = { result?: JsonValue; reason?: string };

/** The store's write transactions (each BEGIN IMMEDIATE … COMMIT). */
interface Transactions {
  create: (rec: SessionRecord) => void;
  update: (name: string, expected: number, patch: SessionPatch, now: number) => SessionRecord;
  delete: (name: string, expected: number | undefined) => number | undefined;
  append: (name: string, rows: string[], expected: number) => number;
  checkpoint: (name: string, rows: string[]) => CheckpointResult;
  settle: (
    id: number,
    to: "resolved" | "expired" | "canceled",
    detail: SettleDetail,
    now: number,
  ) => WaitSettlement | undefined;
  expireWaits: (now: number) => Wait[];
  claim: (session: string, now: number, leaseMs: number) => Nudge | undefined;
  nudgeTo: (id: number, next: (n: Nudge | undefined) => Nudge) => Nudge;
  expireNudges: (now: number) => Nudge[];
  tryLock: (name: string, mine: LockHolder, now: number) => LockHolder | undefined;
  renew: (name: string, token: string, leaseUntil: number) => void;
  release: (name: string, token: string) => void;
}

interface EventDbRow {
  seq: number;
  session: string | null;
  type: string;
  at: number;
  payload: string;
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

/** SQLite's magic string, the first 16 bytes of every database file. */
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

/** Whether `path` starts with SQLite's header (one 16-byte read; false when unreadable). */
function hasDatabaseHeader(path: string): boolean {
  const buf = Buffer.alloc(SQLITE_HEADER.length);
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    return readSync(fd, buf, 0, buf.length, 0) === buf.length && buf.equals(SQLITE_HEADER);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function describe(e: unknown): string {
  if (e instanceof Error)
    return "code" in e && typeof e.code === "string" ? `${e.message} (${e.code})` : e.message;
  return String(e);
}

/**
 * Makes sure `path` exists (directory 0700, file 0600; loose modes tightened) and returns
 * its inode. A missing database is built complete under a temporary name and hard-linked
 * into place (a concurrent creator's file wins), so a 0-byte `state.db` is always damage.
 * @throws StateFileFault for a 0-byte file; StoreError for anything else that is wrong.
 */
function prepareFile(path: string, ownDir: boolean, tenancy: Tenancy, now: number): number {
  const dir = dirname(path);
  let st: Stats;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // `.gc/` belongs to gc: keep it private even if something else created it loosely.
    if (ownDir && (statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
    if (!existsSync(path)) createComplete(path, tenancy, now);
    st = statSync(path);
    if (!st.isFile()) throw new Error("not a regular file");
    if ((st.mode & 0o077) !== 0) chmodSync(path, 0o600);
  } catch (cause) {
    throw new StoreError(`${path}: cannot prepare the state database: ${describe(cause)}`, { cause });
  }
  if (st.size === 0) throw new StateFileFault("empty (0 bytes)", st.ino);
  return st.ino;
}

/** Builds a bootstrapped database at a temporary name and links it to `path` (EEXIST = someone else did). */
function createComplete(path: string, tenancy: Tenancy, now: number): void {
  const tmp = `${path}.init-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  try {
    closeSync(openSync(tmp, "wx", 0o600));
    const db = openSqlite(tmp, { fileMustExist: true });
    try {
      migrate(db, tmp, tenancy, now);
    } finally {
      db.close();
    }
    // A -wal/-shm without its database is a deleted file's (`rm state.db` under an open
    // connection, which keeps them): the new file must not be read through its log.
    if (!existsSync(path)) for (const ext of ["-wal", "-shm"]) rmSync(`${path}${ext}`, { force: true });
    try {
      linkSync(tmp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
  } finally {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}-journal`, { force: true });
  }
}

function configure(db: Db, path: string): void {
  // Reading the header first turns "garbage bytes" into SQLITE_NOTADB here, not mid-write.
  db.pragma("schema_version", { simple: true });
  // Damaged pages in a file with a good header: found now, not by some later write.
  const check = db.pragma("quick_check(1)", { simple: true });
  if (check !== "ok") {
    const e = new Error(`quick check: ${String(check)}`) as Error & { code: string };
    e.code = "SQLITE_CORRUPT";
    throw e;
  }
  const mode = db.pragma("journal_mode = WAL", { simple: true });
  if (mode !== "wal")
    throw new StoreError(`${path}: cannot switch to WAL journal mode (got ${String(mode)})`);
  // NORMAL in WAL mode: a committed transaction survives a process crash; only an OS crash or
  // power loss can lose the last commits, never consistency.
  db.pragma("synchronous = NORMAL");
  db.pragma("trusted_schema = OFF");
  // Replaced and deleted content is zeroed, not left in free space (a record's old
  // fingerprints, pruned events): what gc replaces is gone from the file.
  db.pragma("secure_delete = ON");
}

/**
 * True when the database is a gc state database at this schema version and of this tenancy:
 * nothing to migrate. Read without the write lock (the common case of every command; anything
 * else is decided again under it, by {@link migrate}).
 */
function upToDate(db: Db, tenancy: Tenancy): boolean {
  try {
    const meta = new Map(
      (db.prepare("SELECT key, value FROM gc_meta").all() as { key: string; value: string }[]).map((r) => [
        r.key,
        r.value,
      ]),
    );
    const current = (
      db.prepare("SELECT max(version) AS v FROM gc_schema_version").get() as { v: number | null }
    ).v;
    return (
      meta.get("application") === APPLICATION_ID &&
      current === SCHEMA_VERSION &&
      meta.get("tenancy") === tenancy.mode
    );
  } catch {
    return false; // no such tables (new or foreign file): migrate decides
  }
}

function migrate(db: Db, path: string, tenancy: Tenancy, now: number): void {
  if (upToDate(db, tenancy)) return;
  db.transaction(() => {
    const tables = (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .all() as {
        name: string;
      }[]
    ).map((r) => r.name);
    if (tables.length === 0) {
      db.exec(BOOTSTRAP_SQL);
      db.prepare("INSERT INTO gc_meta (key, value) VALUES ('application', ?)").run(APPLICATION_ID);
    } else if (!tables.includes("gc_meta") || !tables.includes("gc_schema_version")) {
      throw new StoreError(
        `${path}: not a gc state database (it holds unrelated tables: ${tables.slice(0, 8).join(", ")})`,
      );
    }
    const meta = new Map(
      (db.prepare("SELECT key, value FROM gc_meta").all() as { key: string; value: string }[]).map((r) => [
        r.key,
        r.value,
      ]),
    );
    if (meta.get("application") !== APPLICATION_ID) {
      throw new StoreError(`${path}: not a gc state database (application marker missing)`);
    }
    const current =
      (db.prepare("SELECT max(version) AS v FROM gc_schema_version").get() as { v: number | null }).v ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new StoreError(
        `${path}: written by a newer gc (schema version ${current}; this gc understands up to ${SCHEMA_VERSION})`,
      );
    }
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      db.prepare("INSERT INTO gc_schema_version (version, applied_at, description) VALUES (?, ?, ?)").run(
        m.version,
        now,
        m.description,
      );
    }
    checkTenancy(path, meta.get("tenancy"), tenancy);
    if (!meta.has("tenancy"))
      db.prepare("INSERT INTO gc_meta (key, value) VALUES ('tenancy', ?)").run(tenancy.mode);
  }).immediate();
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
    this.#tx = this.#transactions();
    this.#locks = new LockManager(this.#lockTable(), now);
  }

  #transactions(): Transactions {
    const db = this.#db;
    const s = this.#s;
    const a = this.#actor;
    const loc = this.path;
    const imm = <A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) =>
      db.transaction(fn).immediate as (...args: A) => R;
    const event = (session: string, type: string, payload: object, now: number) => {
      const row = eventRow({ session, type, payload: payload as Record<string, JsonValue> }, now);
      s.insertEvent.run(a, row.session, row.type, row.at, row.payload);
    };
    const readRecord = (name: string) => {
      const text = s.getRecord.get(a, name) as string | undefined;
      return text === undefined ? undefined : decodeRecord(loc, text);
    };
    const getNudge = (id: number) => decodeNudge(s.getNudge.get(id, a) as IdRow | undefined, "nudge");
    const putNudge = (n: Nudge) => {
      const { id, ...rest } = n;
      s.updateNudge.run(n.state, JSON.stringify(rest), id, a);
      return n;
    };
    const putWait = (w: Wait) => {
      const { id, ...rest } = w;
      s.updateWait.run(w.state, JSON.stringify(rest), id, a);
      return w;
    };
    return {
      create: imm((rec: SessionRecord) => {
        const res = s.insertRecord.run(a, rec.name, rec.version, encodeRecord(rec));
        if (res.changes === 0) throw new SessionExistsError(rec.name);
        event(rec.name, "session.created", { state: rec.state, agent: rec.agent }, rec.createdAt);
      }),
      update: imm((name: string, expected: number, patch: SessionPatch, now: number) => {
        const cur = readRecord(name);
        if (!cur) throw new SessionNotFoundError(name, "no session record");
        if (cur.version !== expected) throw staleRecord(name, expected, cur.version);
        const { record, transition } = applyPatch(cur, patch, now);
        s.updateRecord.run(record.version, encodeRecord(record), a, name, expected);
        if (transition) event(name, "session.state", transition, now);
        return record;
      }),
      delete: imm((name: string, expected: number | undefined) => {
        const cur = readRecord(name);
        if (!cur) return undefined;
        if (expected !== undefined && cur.version !== expected)
          throw staleRecord(name, expected, cur.version);
        s.deleteRecord.run(a, name);
        s.deleteHistory.run(a, name);
        s.deleteWaits.run(a, name);
        s.deleteNudges.run(a, name);
        event(name, "session.deleted", { version: cur.version }, this.#now());
        return cur.version;
      }),
      append: imm((name: string, rows: string[], expected: number) => {
        if (s.getRecord.get(a, name) === undefined) throw new SessionNotFoundError(name, "no session record");
        const count = s.historyCount.get(a, name) as number;
        if (count !== expected) throw staleHistory(name, expected, count);
        for (const [i, r] of rows.entries()) s.insertHistory.run(a, name, count + i, r);
        return count + rows.length;
      }),
      checkpoint: imm((name: string, rows: string[]) => {
        if (s.getRecord.get(a, name) === undefined) throw new SessionNotFoundError(name, "no session record");
        const stored = s.historyAll.all(a, name) as string[];
        const plan = planCheckpoint(stored, rows);
        if (plan.mode === "replace") {
          s.deleteHistory.run(a, name);
          for (const [i, r] of rows.entries()) s.insertHistory.run(a, name, i, r);
        } else if (plan.mode === "append") {
          for (const [i, r] of plan.tail.entries()) s.insertHistory.run(a, name, stored.length + i, r);
        }
        return { mode: plan.mode, count: rows.length };
      }),
      settle: imm(
        (id: number, to: "resolved" | "expired" | "canceled", detail: SettleDetail, now: number) => {
          const w = decodeWait(s.getWait.get(id, a) as IdRow | undefined);
          if (!w) return undefined;
          const res = settleWait(w, to, now, detail);
          if (res.changed) putWait(res.wait);
          return res;
        },
      ),
      expireWaits: imm((now: number) => {
        const out: Wait[] = [];
        for (const row of s.dueWaits.all(a, now) as IdRow[]) {
          const w = decodeWait(row) as Wait;
          if (!waitDue(w, now)) continue;
          out.push(putWait(settleWait(w, "expired", now, { reason: "deadline passed" }).wait));
        }
        return out;
      }),
      claim: imm((session: string, now: number, leaseMs: number) => {
        const live: Nudge[] = [];
        for (const row of s.liveNudgesOf.all(a, session) as IdRow[]) {
          const n = decodeNudge(row, "nudge") as Nudge;
          const aged = ageNudge(n, now);
          live.push(aged ? putNudge(aged) : n);
        }
        const due = pickDue(live, now);
        return due ? putNudge(claimed(due, now, leaseMs)) : undefined;
      }),
      nudgeTo: imm((id: number, next: (n: Nudge | undefined) => Nudge) => putNudge(next(getNudge(id)))),
      expireNudges: imm((now: number) => {
        const out: Nudge[] = [];
        for (const row of s.liveNudges.all(a) as IdRow[]) {
          const aged = ageNudge(decodeNudge(row, "nudge") as Nudge, now);
          if (!aged) continue;
          putNudge(aged);
          if (aged.state === "dead") out.push(aged);
        }
        return out;
      }),
      tryLock: imm((name: string, mine: LockHolder, now: number) => {
        const cur = s.getLock.get(a, name) as string | undefined;
        if (cur !== undefined) {
          const h = JSON.parse(cur) as LockHolder;
          if (holderAlive(h, now)) return h;
        }
        s.putLock.run(a, name, JSON.stringify(mine));
        return undefined;
      }),
      renew: imm((name: string, token: string, leaseUntil: number) => {
        const cur = s.getLock.get(a, name) as string | undefined;
        if (cur === undefined) return;
        const h = JSON.parse(cur) as LockHolder;
        if (h.token === token) s.putLock.run(a, name, JSON.stringify({ ...h, leaseUntil }));
      }),
      release: imm((name: string, token: string) => {
        const cur = s.getLock.get(a, name) as string | undefined;
        if (cur !== undefined && (JSON.parse(cur) as LockHolder).token === token) s.deleteLock.run(a, name);
      }),
    };
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
    const rows = this.#run(() => this.#s.listRecords.all(this.#actor) as string[]);
    // A row stored with the same text as at the previous list decodes to the same (frozen)
    // record: a steady controller pass parses nothing again.
    const previous = this.#listed;
    this.#listed = new Map();
    return rows
      .map((t) => {
        const rec = previous.get(t) ?? deepFreeze(decodeRecord(this.path, t));
        this.#listed.set(t, rec);
        return rec;
      })
      .filter(
        (r) =>
          (filter.agent === undefined || r.agent === filter.agent) &&
          (filter.states === undefined || filter.states.includes(r.state)),
      );
  }

  async create(init: NewSession): Promise<SessionRecord> {
    const rec = newRecord(init, this.#now());
    this.#run(() => this.#tx.create(rec));
    return rec;
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
      if (bounds.keep !== undefined)
        n += this.#s.trimEventsKeep.run(
          this.#actor,
          this.#actor,
          Math.max(0, Math.floor(bounds.keep)),
        ).changes;
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
    const inode = () => {
      try {
        return statSync(this.path).ino;
      } catch {
        return undefined;
      }
    };
    const ino = inode();
    if (ino === this.#ino) {
      if (!opts.writeBack || (!opts.damaged && hasDatabaseHeader(this.path))) return { found: "same" };
      return this.#salvage(ino);
    }
    if (!opts.writeBack) return { found: ino === undefined ? "missing" : "replaced" };
    const movedAside =
      ino === undefined ? undefined : moveAside(this.path, ino, new Date(this.#now()), "replaced");
    try {
      const restored = this.#writeBack(() => {
        // A -wal/-shm left at the path belongs to the deleted file (its connections keep them
        // open): the file written back must not start with the deleted one's log.
        if (ino === undefined)
          for (const ext of ["-wal", "-shm"]) rmSync(`${this.path}${ext}`, { force: true });
      });
      if (!restored) return { found: "missing" };
      return movedAside ? { found: "restored", movedAside } : { found: "restored" };
    } catch (e) {
      throw new StoreError(`${this.path}: cannot write the state database back: ${describe(e)}`, {
        cause: e,
      });
    }
  }

  /** The damaged file `ino` replaced by a copy of the open database, when it can still be read. */
  #salvage(ino: number): { found: StoreFileCheck; movedAside?: string } {
    let movedAside: string | undefined;
    try {
      const restored = this.#writeBack(() => {
        movedAside = moveAside(this.path, ino, new Date(this.#now()), "corrupt");
      });
      if (restored) return movedAside ? { found: "salvaged", movedAside } : { found: "salvaged" };
      return { found: "missing" };
    } catch (e) {
      // The open database cannot be read whole either: the caller reopens with recovery.
      if (e instanceof UnreadableCopy) return { found: "damaged" };
      throw new StoreError(`${this.path}: cannot write the state database back: ${describe(e)}`, {
        cause: e,
      });
    }
  }

  /**
   * Copies the open database to a temporary name, runs `clear` (which frees the path) and
   * links the copy into place. Resolves false when another process created the path
   * meanwhile (the next check deals with it).
   * @throws UnreadableCopy when the open database cannot be copied (nothing was changed).
   */
  #writeBack(clear: () => void): boolean {
    const tmp = `${this.path}.restore-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
    try {
      try {
        this.#db.prepare("VACUUM INTO ?").run(tmp);
      } catch (e) {
        if (isDamage(e)) throw new UnreadableCopy(describe(e), { cause: e });
        throw e;
      }
      chmodSync(tmp, 0o600);
      clear();
      try {
        linkSync(tmp, this.path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw e;
      }
      return true;
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#locks.releaseAll();
    this.#closed = true;
    this.#db.close();
  }
}

/** The open database could not be copied: it is damaged too. */
class UnreadableCopy extends Error {
  override readonly name = "UnreadableCopy";
}

interface IdRow {
  id: number;
  wait?: string;
  nudge?: string;
}

function decodeWait(row: IdRow | undefined): Wait | undefined {
  if (!row || row.wait === undefined) return undefined;
  return { ...(JSON.parse(row.wait) as Omit<Wait, "id">), id: row.id };
}

function decodeNudge(row: IdRow | undefined, _what = "nudge"): Nudge | undefined {
  if (!row || row.nudge === undefined) return undefined;
  return { ...(JSON.parse(row.nudge) as Omit<Nudge, "id">), id: row.id };
}

/** Freezes a decoded JSON value and everything in it, so a shared record cannot be changed. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
