/**
 * The identify gate of one tmux server.
 *
 * tmux (3.3a here; the same fault is reported up to 3.7) crashes its whole server — every
 * session with it — when it tells a control client of an event while that client is still
 * identifying itself: `control_write()` reads the client's control state before it exists
 * (segfault at address 0x20; tmux pull requests #4980 and #5004). A client's identify spans
 * several turns of the server's loop (its stdin and stdout descriptors travel in messages of
 * their own), and events that reach every control client are ordinary: a session made or
 * closed, a paste buffer set or deleted, another control client leaving. Two gc processes (a
 * controller and a CLI command), or one process with a second client (a watcher attached to a
 * session), hit it within seconds under load.
 *
 * The gate is a readers–writer lock per server. A control client identifies — from its spawn
 * to its first reply — holding it exclusively ({@link ServerGate.exclusive}); every command
 * that can make tmux notify control clients, and every control client's exit, holds it shared
 * ({@link ServerGate.shared}). Within a process, counters; across processes, fcntl locks on a
 * file beside the server's socket (SQLite's SHARED and EXCLUSIVE locks on an empty database,
 * tried without blocking and retried with backoff, so the event loop never blocks). A dead
 * process's lock is released by the kernel. Writers go first: once a client waits to
 * identify, new shared holders wait behind it.
 */
import { createHash } from "node:crypto";
import { mkdirSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type Database from "better-sqlite3";
import { OperationTimeoutError } from "../../base/errors.js";
import { openSqlite } from "../../base/sqlite.js";

/** How long a gate is waited for before the operation fails (another process holds it). */
export const GATE_WAIT_MS = 30_000;
const FIRST_RETRY_MS = 1;
const MAX_RETRY_MS = 16;

/** The gate file of the tmux server listening on socket `path`. Pure. */
export function gateFile(socketPath: string): string {
  return `${socketPath}.gc-gate`;
}

/**
 * The gate of a tmux server inside a container or pod, known here by `key` (e.g.
 * `k8s:<namespace>/<pod>`): its file lives in this machine's temporary directory, so gc
 * processes on this machine share it (processes elsewhere cannot). Pure.
 */
export function remoteGate(key: string): { readonly key: string; readonly file: string } {
  const digest = createHash("sha256").update(key).digest("hex").slice(0, 32);
  return { key, file: join(tmpdir(), `gc-${process.getuid?.() ?? 0}-tmux-gates`, digest) };
}

const gates = new Map<string, ServerGate>();

/** One server's gate (see the module comment), shared by every client of this process. */
export class ServerGate {
  /**
   * The gate of the server known by `key`; `file` (created when missing, its directory
   * 0700) carries it across processes, `undefined` keeps it within this process.
   */
  static of(key: string, file: string | undefined): ServerGate {
    let g = gates.get(key);
    if (!g) {
      g = new ServerGate(file);
      gates.set(key, g);
    }
    return g;
  }

  /**
   * Removes the gate file of a server that is gone (after kill-server). A process still
   * holding the old file keeps a lock the next server's clients do not see; it releases it
   * within one command, and its next use opens the new file.
   */
  static remove(file: string): void {
    for (const g of gates.values()) {
      // An idle gate reopens (and so re-creates) its file at its next use.
      if (g.file === file && !g.fileLocked && g.db) {
        g.db.close();
        g.db = undefined;
      }
    }
    try {
      unlinkSync(file);
    } catch {
      // never made, or already gone
    }
  }

  private readonly file: string | undefined;
  /** The lock file's connection; `null` once opening failed (in-process only from then). */
  private db: Database.Database | null | undefined;
  private readers = 0;
  private writer = false;
  private writersWaiting = 0;
  private waiters: (() => void)[] = [];
  /** The cross-process shared lock while readers hold the gate (acquired by the first). */
  private sharedLock: Promise<void> | undefined;
  private fileLocked = false;

  private constructor(file: string | undefined) {
    this.file = file;
  }

  /**
   * Runs `fn` holding the gate shared. Shared sections never nest (a nested one would wait
   * behind a writer that waits for the outer one).
   * @throws OperationTimeoutError when the gate stays closed for {@link GATE_WAIT_MS}.
   */
  async shared<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + GATE_WAIT_MS;
    while (this.writer || this.writersWaiting > 0) await this.turn(deadline);
    this.readers++;
    try {
      this.sharedLock ??= this.lockFile("shared", deadline);
      await this.sharedLock;
    } catch (e) {
      this.leaveShared();
      throw e;
    }
    try {
      return await fn();
    } finally {
      this.leaveShared();
    }
  }

  /**
   * Takes the gate exclusively; resolves the release (idempotent).
   * @throws OperationTimeoutError when the gate stays taken for {@link GATE_WAIT_MS}.
   */
  async exclusive(): Promise<() => void> {
    const deadline = Date.now() + GATE_WAIT_MS;
    this.writersWaiting++;
    try {
      while (this.writer || this.readers > 0) await this.turn(deadline);
    } finally {
      this.writersWaiting--;
    }
    this.writer = true;
    try {
      await this.lockFile("exclusive", deadline);
    } catch (e) {
      this.writer = false;
      this.wakeAll();
      throw e;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.unlockFile();
      this.writer = false;
      this.wakeAll();
    };
  }

  private leaveShared(): void {
    this.readers--;
    if (this.readers > 0) return;
    this.unlockFile();
    this.sharedLock = undefined;
    this.wakeAll();
  }

  /** Waits for the next change of the in-process state, or throws past `deadline`. */
  private async turn(deadline: number): Promise<void> {
    const left = deadline - Date.now();
    if (left <= 0) throw new OperationTimeoutError("the tmux server's identify gate", GATE_WAIT_MS);
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      timer = setTimeout(resolve, left);
    });
    clearTimeout(timer);
  }

  private wakeAll(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Takes the file's SHARED or EXCLUSIVE lock, retrying with backoff until `deadline`. */
  private async lockFile(mode: "shared" | "exclusive", deadline: number): Promise<void> {
    const db = this.open();
    if (!db) return;
    for (let wait = FIRST_RETRY_MS; ; wait = Math.min(wait * 2, MAX_RETRY_MS)) {
      try {
        if (mode === "exclusive") db.exec("BEGIN EXCLUSIVE");
        else {
          db.exec("BEGIN");
          db.prepare("SELECT count(*) FROM sqlite_master").get();
        }
        this.fileLocked = true;
        return;
      } catch (e) {
        if (db.inTransaction) db.exec("ROLLBACK");
        if ((e as { code?: string }).code !== "SQLITE_BUSY") {
          // An unusable lock file: keep the in-process gate, which covers this process.
          this.db = null;
          db.close();
          return;
        }
      }
      if (Date.now() >= deadline)
        throw new OperationTimeoutError("the tmux server's identify gate", GATE_WAIT_MS);
      await sleep(wait);
    }
  }

  private unlockFile(): void {
    if (!this.fileLocked) return;
    this.fileLocked = false;
    if (this.db?.inTransaction) this.db.exec("COMMIT");
  }

  private open(): Database.Database | null {
    if (this.db !== undefined) return this.db;
    this.db = null;
    if (this.file === undefined) return null;
    try {
      mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      // A new file is an empty database in rollback-journal mode: SHARED and EXCLUSIVE locks.
      this.db = openSqlite(this.file, { timeout: 0 });
    } catch {
      this.db = null;
    }
    return this.db;
  }
}
