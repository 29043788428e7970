/**
 * The state database as a file, for the SQLite store (sqlite-store.ts): made complete or not
 * at all (built under a temporary name and linked into place, so a 0-byte `state.db` is
 * damage, never "new"), configured (WAL, NORMAL sync, secure delete, a quick check first),
 * migrated to this gc's schema (sqlite-schema.ts) under the write lock, and, while open,
 * checked against the path and written back from the open connection when the file was
 * deleted, replaced or damaged. No session semantics here: those are the store's.
 */
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  type Stats,
  statSync,
} from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { StoreError } from "../base/errors.js";
import { openSqlite } from "../base/sqlite.js";
import { checkTenancy, type Tenancy } from "./codec.js";
import { isDamage, moveAside, StateFileFault } from "./recovery.js";
import { APPLICATION_ID, BOOTSTRAP_SQL, MIGRATIONS, SCHEMA_VERSION } from "./sqlite-schema.js";
import type { StoreFileCheck } from "./store.js";

type Db = Database.Database;

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

/** An error's message with its code (`SQLITE_CORRUPT`, `EACCES`), for StoreError texts. */
export function describe(e: unknown): string {
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
export function prepareFile(path: string, ownDir: boolean, tenancy: Tenancy, now: number): number {
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
      // Nobody reads the file before it is linked into place: no rollback journal and no
      // syncs while it is built (a crash leaves an unlinked temporary), one sync once it is.
      db.pragma("journal_mode = MEMORY");
      db.pragma("synchronous = OFF");
      migrate(db, tmp, tenancy, now);
    } finally {
      db.close();
    }
    const fd = openSync(tmp, "r+");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
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

/** Sets the connection's pragmas, after reading the header and a quick check (damage found here, not mid-write). */
export function configure(db: Db, path: string): void {
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

/**
 * Brings the database to {@link SCHEMA_VERSION} in one write transaction (a new file is
 * bootstrapped), after checking it is gc's and of this tenancy.
 * @throws StoreError for a foreign file, one from a newer gc, or a tenancy mismatch.
 */
export function migrate(db: Db, path: string, tenancy: Tenancy, now: number): void {
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

/** The open database that {@link checkStateFile} checks its path against. */
export interface OpenStateFile {
  readonly db: Db;
  /** The path it was opened at. */
  readonly path: string;
  /** Inode of the file opened, to tell it was deleted or replaced under the store. */
  readonly ino: number;
  readonly now: () => number;
}

/**
 * Whether `f.path` still names the file this store has open, and is still a database.
 * With `writeBack` (the controller, whose database is the city's bookkeeping) a file that is
 * gone or damaged is written back from the open database (VACUUM INTO a temporary name,
 * linked into place), so its records, holds, queued nudges, events and id sequences are not
 * lost: an `rm .gc/state.db` while it runs (a file another process created there meanwhile
 * is moved aside to `state.db.replaced-<time>` first), and garbage written over the file in
 * place, or a pass that met damage (`damaged`), whose file is moved aside to
 * `state.db.corrupt-<time>` first. When the open database cannot be read either, `damaged`
 * is found and the file left as it is (reopening it with `recover` starts a new one).
 */
export function checkStateFile(
  f: OpenStateFile,
  opts: { writeBack?: boolean; damaged?: boolean } = {},
): {
  found: StoreFileCheck;
  movedAside?: string;
} {
  const inode = () => {
    try {
      return statSync(f.path).ino;
    } catch {
      return undefined;
    }
  };
  const ino = inode();
  if (ino === f.ino) {
    if (!opts.writeBack || (!opts.damaged && hasDatabaseHeader(f.path))) return { found: "same" };
    return salvage(f, ino);
  }
  if (!opts.writeBack) return { found: ino === undefined ? "missing" : "replaced" };
  const movedAside = ino === undefined ? undefined : moveAside(f.path, ino, new Date(f.now()), "replaced");
  try {
    const restored = writeBack(f, () => {
      // A -wal/-shm left at the path belongs to the deleted file (its connections keep them
      // open): the file written back must not start with the deleted one's log.
      if (ino === undefined) for (const ext of ["-wal", "-shm"]) rmSync(`${f.path}${ext}`, { force: true });
    });
    if (!restored) return { found: "missing" };
    return movedAside ? { found: "restored", movedAside } : { found: "restored" };
  } catch (e) {
    throw new StoreError(`${f.path}: cannot write the state database back: ${describe(e)}`, {
      cause: e,
    });
  }
}

/** The damaged file `ino` replaced by a copy of the open database, when it can still be read. */
function salvage(f: OpenStateFile, ino: number): { found: StoreFileCheck; movedAside?: string } {
  let movedAside: string | undefined;
  try {
    const restored = writeBack(f, () => {
      movedAside = moveAside(f.path, ino, new Date(f.now()), "corrupt");
    });
    if (restored) return movedAside ? { found: "salvaged", movedAside } : { found: "salvaged" };
    return { found: "missing" };
  } catch (e) {
    // The open database cannot be read whole either: the caller reopens with recovery.
    if (e instanceof UnreadableCopy) return { found: "damaged" };
    throw new StoreError(`${f.path}: cannot write the state database back: ${describe(e)}`, {
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
function writeBack(f: OpenStateFile, clear: () => void): boolean {
  const tmp = `${f.path}.restore-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  try {
    try {
      f.db.prepare("VACUUM INTO ?").run(tmp);
    } catch (e) {
      if (isDamage(e)) throw new UnreadableCopy(describe(e), { cause: e });
      throw e;
    }
    chmodSync(tmp, 0o600);
    clear();
    try {
      linkSync(tmp, f.path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw e;
    }
    return true;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The open database could not be copied: it is damaged too. */
class UnreadableCopy extends Error {
  override readonly name = "UnreadableCopy";
}
