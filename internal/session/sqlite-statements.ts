/**
 * The SQL of the SQLite store (sqlite-store.ts), per connection and per actor: every fixed
 * statement, prepared once; the write transactions, each one BEGIN IMMEDIATE … COMMIT that
 * applies codec.ts's pure rules to the rows it reads (so a SIGKILL leaves the database as
 * before or after it, and two processes never interleave); and the decoders of wait and nudge
 * rows. Every statement is scoped to one actor (tenancy: codec.ts).
 */
import type Database from "better-sqlite3";
import { SessionExistsError, SessionNotFoundError } from "../base/errors.js";
import {
  ageNudge,
  applyPatch,
  claimed,
  decodeRecord,
  encodeRecord,
  eventRow,
  pickDue,
  planCheckpoint,
  settleWait,
  staleHistory,
  staleRecord,
  waitDue,
} from "./codec.js";
import { holderAlive } from "./lock.js";
import type {
  CheckpointResult,
  JsonValue,
  LockHolder,
  Nudge,
  SessionPatch,
  SessionRecord,
  Wait,
  WaitSettlement,
} from "./store.js";

export type Db = Database.Database;
export type Stmt = Database.Statement;

/** Every fixed statement, prepared once per connection. */
export function prepareStatements(db: Db) {
  const p = (sql: string) => db.prepare(sql);
  return {
    getRecord: p("SELECT record FROM sessions WHERE actor = ? AND name = ?").pluck(),
    listRecords: p("SELECT record FROM sessions WHERE actor = ? ORDER BY name").pluck(),
    // Changes since a moment: `data_version` moves when another connection commits,
    // `total_changes()` when this one writes a row (any table).
    changeMark: p("SELECT (SELECT data_version FROM pragma_data_version) || ':' || total_changes()").pluck(),
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
    eventSeqRange: p("SELECT min(seq) AS lo, max(seq) AS hi FROM events WHERE actor = ?"),
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

export type Statements = ReturnType<typeof prepareStatements>;

type SettleDetail = { result?: JsonValue; reason?: string };

/** The store's write transactions (each BEGIN IMMEDIATE … COMMIT). */
export interface Transactions {
  /** Inserts `rec`; with `then`, updates it by `then` too (one transaction); returns the record stored. */
  create: (rec: SessionRecord, then: SessionPatch | undefined, now: number) => SessionRecord;
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

/** A row of the `events` table as read. */
export interface EventDbRow {
  seq: number;
  session: string | null;
  type: string;
  at: number;
  payload: string;
}

/**
 * The write transactions of actor `a` over `db`'s statements `s` (`loc` names the file in
 * errors; `clock` stamps the deletion event).
 */
export function prepareTransactions(
  db: Db,
  s: Statements,
  a: string,
  loc: string,
  clock: () => number,
): Transactions {
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
  /** Writes `patch` over `cur` (read in this transaction, of version `expected`), with its event. */
  const patchRecord = (cur: SessionRecord, expected: number, patch: SessionPatch, now: number) => {
    const { record, transition } = applyPatch(cur, patch, now);
    s.updateRecord.run(record.version, encodeRecord(record), a, cur.name, expected);
    if (transition) event(cur.name, "session.state", transition, now);
    return record;
  };
  return {
    create: imm((rec: SessionRecord, then: SessionPatch | undefined, now: number) => {
      const res = s.insertRecord.run(a, rec.name, rec.version, encodeRecord(rec));
      if (res.changes === 0) throw new SessionExistsError(rec.name);
      event(rec.name, "session.created", { state: rec.state, agent: rec.agent }, rec.createdAt);
      return then ? patchRecord(rec, rec.version, then, now) : rec;
    }),
    update: imm((name: string, expected: number, patch: SessionPatch, now: number) => {
      const cur = readRecord(name);
      if (!cur) throw new SessionNotFoundError(name, "no session record");
      if (cur.version !== expected) throw staleRecord(name, expected, cur.version);
      return patchRecord(cur, expected, patch, now);
    }),
    delete: imm((name: string, expected: number | undefined) => {
      const cur = readRecord(name);
      if (!cur) return undefined;
      if (expected !== undefined && cur.version !== expected) throw staleRecord(name, expected, cur.version);
      s.deleteRecord.run(a, name);
      s.deleteHistory.run(a, name);
      s.deleteWaits.run(a, name);
      s.deleteNudges.run(a, name);
      event(name, "session.deleted", { version: cur.version }, clock());
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
    settle: imm((id: number, to: "resolved" | "expired" | "canceled", detail: SettleDetail, now: number) => {
      const w = decodeWait(s.getWait.get(id, a) as IdRow | undefined);
      if (!w) return undefined;
      const res = settleWait(w, to, now, detail);
      if (res.changed) putWait(res.wait);
      return res;
    }),
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

/** A `waits` or `nudges` row as read: its id and the JSON of the rest. */
export interface IdRow {
  id: number;
  wait?: string;
  nudge?: string;
}

/** The wait of a `waits` row (undefined for no row). */
export function decodeWait(row: IdRow | undefined): Wait | undefined {
  if (!row || row.wait === undefined) return undefined;
  return { ...(JSON.parse(row.wait) as Omit<Wait, "id">), id: row.id };
}

/** The nudge of a `nudges` row (undefined for no row). */
export function decodeNudge(row: IdRow | undefined, _what = "nudge"): Nudge | undefined {
  if (!row || row.nudge === undefined) return undefined;
  return { ...(JSON.parse(row.nudge) as Omit<Nudge, "id">), id: row.id };
}
