/**
 * The session store conformance suite, as data: every {@link SessionStore} implementation
 * (memory, SQLite, any future one) must pass every case. A case gets a fresh database, opens
 * as many stores (actors, or stand-ins for separate processes) on it as it likes, and drives
 * them with a fake clock. Assertions use node:assert, so the suite runs under vitest (see
 * test/session/store.conformance.test.ts) or any other runner via {@link runStoreCase}.
 *
 * Here: the runner and the two targets gc has (memory, SQLite), and the index of the cases,
 * kept by group in store-cases/ (one table each; what a case is: store-cases/case.ts; the
 * checks they share: store-cases/checks.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { MemoryBacking, openMemoryStore } from "../internal/session/memory-store.js";
import { openSqliteStore } from "../internal/session/sqlite-store.js";
import type { SessionStore } from "../internal/session/store.js";
import {
  CLOCK_START,
  type FakeClock,
  type StoreCase,
  type StoreCaseContext,
  type StoreTarget,
  type StoreTargetFactory,
} from "./store-cases/case.js";
import { EVENTS_CASES } from "./store-cases/events.js";
import { HISTORY_CASES } from "./store-cases/history.js";
import { ISOLATION_CASES } from "./store-cases/isolation.js";
import { LOCKS_CASES } from "./store-cases/locks.js";
import { MISC_CASES } from "./store-cases/misc.js";
import { NUDGES_CASES } from "./store-cases/nudges.js";
import { RECORDS_CASES } from "./store-cases/records.js";
import { WAITS_CASES } from "./store-cases/waits.js";

export {
  CLOCK_START,
  type FakeClock,
  type StoreCase,
  type StoreCaseContext,
  type StoreTarget,
  type StoreTargetFactory,
} from "./store-cases/case.js";

/** Why `c` cannot run on `target`, or `undefined`. */
export function storeSkipReason(c: StoreCase, target: StoreTarget): string | undefined {
  for (const r of c.requires ?? []) if (!target[r]) return `requires ${r}`;
  return undefined;
}

/**
 * Runs one case on a fresh target, closing every store it opened and removing the database
 * even when it fails. Resolves `"skipped"` when the target lacks a requirement.
 * @throws the case's assertion failure (or a cleanup failure).
 */
export async function runStoreCase(
  c: StoreCase,
  makeTarget: StoreTargetFactory,
): Promise<"passed" | "skipped"> {
  const target = await makeTarget();
  const opened: SessionStore[] = [];
  let t = CLOCK_START;
  const clock: FakeClock = {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
  const ctx: StoreCaseContext = {
    clock,
    target,
    async open(actor = "actor-a", extra = {}) {
      const s = await target.open({ ...extra, actor, now: clock.now });
      opened.push(s);
      return s;
    },
    async openSingle() {
      const s = await target.open({ singleTenant: true, now: clock.now });
      opened.push(s);
      return s;
    },
  };
  try {
    if (storeSkipReason(c, target)) return "skipped";
    await c.run(ctx);
    return "passed";
  } finally {
    for (const s of opened) await s.close();
    await target.cleanup();
  }
}

/** A memory-store target (fresh {@link MemoryBacking} per case). */
export async function memoryStoreTarget(): Promise<StoreTarget> {
  const backing = new MemoryBacking("memory:conformance");
  return {
    open: async (opts) => openMemoryStore({ ...opts, backing }),
    async plantLock(actorKey, name, holder) {
      backing.locks.set(`${actorKey}\u0000${name}`, JSON.stringify(holder));
    },
    async cleanup() {},
  };
}

/** A SQLite target: `<tmp>/city/.gc/state.db`, removed afterwards. */
export async function sqliteStoreTarget(): Promise<StoreTarget> {
  const dir = await mkdtemp(join(tmpdir(), "gc-store-conf-"));
  const cityDir = join(dir, "city");
  const path = join(cityDir, ".gc", "state.db");
  return {
    open: async (opts) => openSqliteStore({ ...opts, cityDir }),
    async plantLock(actorKey, name, holder) {
      const db = new Database(path);
      try {
        db.pragma("busy_timeout = 5000");
        db.prepare("INSERT OR REPLACE INTO locks (actor, name, holder) VALUES (?, ?, ?)").run(
          actorKey,
          name,
          JSON.stringify(holder),
        );
      } finally {
        db.close();
      }
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Every store conformance case. */
export const STORE_CASES: readonly StoreCase[] = Object.freeze([
  ...RECORDS_CASES,
  ...HISTORY_CASES,
  ...EVENTS_CASES,
  ...WAITS_CASES,
  ...NUDGES_CASES,
  ...LOCKS_CASES,
  ...ISOLATION_CASES,
  ...MISC_CASES,
]);
