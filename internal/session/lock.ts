/**
 * Per-session locks shared by both stores: holder identity (pid, host, process start time,
 * token), the staleness rule that lets a dead holder's lock be taken over, lease renewal,
 * and the waiting/non-waiting acquire loops. A store supplies only an atomic table
 * ({@link LockTable}); the CLI's `gc run` relies on {@link SessionLockedError} naming the holder.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { LockedError, OperationTimeoutError } from "../base/errors.js";
import { ended, procStartTime, readStat } from "../proc/process-table.js";
import { LOCK_LEASE_MS, type LockHolder, type LockOptions, type SessionLock } from "./store.js";

const HOST = hostname();
const POLL_MIN_MS = 5;
const POLL_MAX_MS = 100;

/**
 * Purpose of the lock the controller takes for a moment each pass to record finished turns
 * (milliseconds of store writes). Interactive commands wait for it instead of refusing.
 */
export const BOOKKEEPING_PURPOSE = "turn recording";

/** Another holder has the session's lock. `holder` says who (pid, host, purpose, since). */
export class SessionLockedError extends LockedError {
  readonly session: string;
  readonly holder: LockHolder;
  constructor(session: string, holder: LockHolder, options?: ErrorOptions) {
    super(`session ${JSON.stringify(session)} is busy: locked by ${describeHolder(holder)}`, options);
    this.session = session;
    this.holder = holder;
  }
}

/** `pid 123 on host-a (gc run) since 2026-01-01T00:00:00.000Z`. Pure. */
export function describeHolder(h: LockHolder): string {
  return `pid ${h.pid}${h.host === HOST ? "" : ` on ${h.host}`} (${h.purpose}) since ${new Date(h.acquiredAt).toISOString()}`;
}

/**
 * Start time of `pid` (field 22 of /proc/<pid>/stat), or `null` when the process is gone, a
 * zombie, or /proc is unavailable. Synchronous: called inside store transactions.
 */
export function processStartTime(pid: number): string | null {
  const t = procStartTime(pid);
  return t === null ? null : String(t);
}

const OWN_START_TIME = processStartTime(process.pid);

/** A holder record for this process. */
export function newHolder(purpose: string, now: number): LockHolder {
  return {
    pid: process.pid,
    host: HOST,
    startTime: OWN_START_TIME,
    token: randomUUID(),
    purpose,
    acquiredAt: now,
    leaseUntil: now + LOCK_LEASE_MS,
  };
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * True when `h` still holds its lock. On this host: its process exists, is not a zombie and
 * started when the holder said (pid reuse is not mistaken for the holder) — the lease does not
 * matter, so a slow or stopped holder keeps its lock. On another host, whose processes we
 * cannot see: while its lease runs. Synchronous.
 */
export function holderAlive(h: LockHolder, now: number): boolean {
  if (h.host !== HOST) return h.leaseUntil > now;
  // Our own pid: it is us unless a previous process with the same pid left the row behind.
  if (h.pid === process.pid) return h.startTime === OWN_START_TIME;
  if (!pidExists(h.pid)) return false;
  const st = readStat(h.pid);
  // Exists but /proc is unreadable (hidepid, no procfs): we cannot prove it dead, so it holds.
  if (!st) return true;
  if (ended(st)) return false;
  return h.startTime === null || h.startTime === st.startTime;
}

/** The atomic operations a store provides for locks, scoped to one actor. Synchronous. */
export interface LockTable {
  /**
   * In one atomic step: when `name` has no holder, or one for which `holderAlive` is false,
   * record `mine` and return `undefined`; otherwise return the live holder.
   */
  tryAcquire(name: string, mine: LockHolder, now: number): LockHolder | undefined;
  /** Extends the lease of the holder with `token`; no-op when it no longer holds. */
  renew(name: string, token: string, leaseUntil: number): void;
  /** Removes the holder with `token`; no-op when it no longer holds. */
  release(name: string, token: string): void;
  /** The recorded holder, dead or alive. */
  read(name: string): LockHolder | undefined;
}

/** Lock operations of one store instance: acquire loops, renewal timers, release on close. */
export class LockManager {
  readonly #table: LockTable;
  readonly #now: () => number;
  readonly #held = new Map<string, { name: string; timer: NodeJS.Timeout }>();

  constructor(table: LockTable, now: () => number) {
    this.#table = table;
    this.#now = now;
  }

  /** See {@link SessionStore.tryLock}. @throws SessionLockedError when held by a live holder. */
  tryLock(name: string, opts: LockOptions = {}): SessionLock {
    const mine = newHolder(opts.purpose ?? "gc", this.#now());
    const other = this.#table.tryAcquire(name, mine, this.#now());
    if (other) throw new SessionLockedError(name, other);
    const timer = setInterval(() => {
      try {
        this.#table.renew(name, mine.token, this.#now() + LOCK_LEASE_MS);
      } catch {
        // The store was closed under us; release() or close() cleans up.
      }
    }, LOCK_LEASE_MS / 3);
    timer.unref();
    this.#held.set(mine.token, { name, timer });
    return {
      session: name,
      holder: mine,
      release: async () => {
        this.#releaseToken(mine.token);
      },
    };
  }

  /** Waits for the lock. See {@link SessionStore.synchronize}. */
  async acquire(name: string, opts: LockOptions = {}): Promise<SessionLock> {
    const { signal, timeoutMs } = opts;
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    let delay = POLL_MIN_MS;
    for (;;) {
      signal?.throwIfAborted();
      try {
        return this.tryLock(name, opts);
      } catch (e) {
        if (!(e instanceof SessionLockedError)) throw e;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new OperationTimeoutError(
            `waiting for the lock of session ${JSON.stringify(name)}`,
            timeoutMs ?? 0,
            {
              cause: e,
            },
          );
        }
        // Jitter keeps several waiters from polling in lockstep.
        const ms = Math.min(left, delay * (0.5 + Math.random()));
        delay = Math.min(POLL_MAX_MS, delay * 2);
        try {
          await sleep(ms, undefined, signal ? { signal } : {});
        } catch (err) {
          if (signal?.aborted) throw signal.reason;
          throw err;
        }
      }
    }
  }

  /** The live holder of `name`, if any. */
  holder(name: string): LockHolder | undefined {
    const h = this.#table.read(name);
    return h && holderAlive(h, this.#now()) ? h : undefined;
  }

  /** Releases every lock this manager holds. Best-effort; never throws. */
  releaseAll(): void {
    for (const token of [...this.#held.keys()]) this.#releaseToken(token);
  }

  #releaseToken(token: string): void {
    const h = this.#held.get(token);
    if (!h) return;
    clearInterval(h.timer);
    this.#held.delete(token);
    try {
      this.#table.release(h.name, token);
    } catch {
      // Closed store: the row dies with our pid and is taken over as stale.
    }
  }
}
