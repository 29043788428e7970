/**
 * The session store conformance suite, as data: every {@link SessionStore} implementation
 * (memory, SQLite, any future one) must pass every case. A case gets a fresh database, opens
 * as many stores (actors, or stand-ins for separate processes) on it as it likes, and drives
 * them with a fake clock. Assertions use node:assert, so the suite runs under vitest (see
 * test/session/store.conformance.test.ts) or any other runner via {@link runStoreCase}.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describeError, type GcErrorCode, isGcError } from "../internal/base/errors.js";
import { LIFECYCLE_STATES, type LifecycleState, TRANSITION_RULES } from "../internal/session/lifecycle.js";
import { processStartTime } from "../internal/session/lock.js";
import { MemoryBacking, openMemoryStore } from "../internal/session/memory-store.js";
import { REDACTED } from "../internal/session/redact.js";
import { openSqliteStore } from "../internal/session/sqlite-store.js";
import {
  casUpdate,
  DEFAULT_NUDGE_MAX_ATTEMPTS,
  DEFAULT_NUDGE_TTL_MS,
  type LockHolder,
  type NewSession,
  type SessionRecord,
  type SessionStore,
  type StoreOpenOptions,
} from "../internal/session/store.js";

/** A store implementation under test: one fresh database per case. */
export interface StoreTarget {
  /** Opens a store on this target's database; every call in one case shares the database. */
  open(opts: StoreOpenOptions): Promise<SessionStore>;
  /** Writes a raw lock row as if `holder` held `name` (simulates other processes and hosts). */
  plantLock?(actorKey: string, name: string, holder: LockHolder): Promise<void>;
  /** Removes the database. */
  cleanup(): Promise<void>;
}

/** Makes a fresh {@link StoreTarget}. */
export type StoreTargetFactory = () => Promise<StoreTarget>;

/** A controllable clock shared by every store a case opens. */
export interface FakeClock {
  now(): number;
  advance(ms: number): void;
}

/** Handed to every case. */
export interface StoreCaseContext {
  /** Opens a store for `actor` (default `"actor-a"`) on the case's database, using the fake clock. */
  open(actor?: string, extra?: Omit<StoreOpenOptions, "actor" | "now">): Promise<SessionStore>;
  /** Opens a single-tenant store on the case's database. */
  openSingle(): Promise<SessionStore>;
  readonly clock: FakeClock;
  readonly target: StoreTarget;
}

/** One conformance case. */
export interface StoreCase {
  /** Stable id (`group.behaviour`). */
  readonly id: string;
  /** `"<method>: <behaviour>"`. */
  readonly title: string;
  /** Target extras the case needs; it is skipped without them. */
  readonly requires?: readonly "plantLock"[];
  run(ctx: StoreCaseContext): Promise<void>;
}

/** The fake clock's start: 2023-11-14T22:13:20Z. */
export const CLOCK_START = 1_700_000_000_000;

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

// ---------------------------------------------------------------------------------------------
// helpers

async function rejectsCode(p: Promise<unknown>, code: GcErrorCode, what: string): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    if (isGcError(e, code)) return e;
    throw new assert.AssertionError({ message: `${what}: expected ${code}, got ${describeError(e)}` });
  }
  throw new assert.AssertionError({ message: `${what}: expected rejection with ${code}, but it resolved` });
}

async function rejectsType(
  p: Promise<unknown>,
  type: new (...a: never[]) => Error,
  what: string,
): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (e instanceof type) return;
    throw new assert.AssertionError({ message: `${what}: expected ${type.name}, got ${describeError(e)}` });
  }
  throw new assert.AssertionError({
    message: `${what}: expected rejection with ${type.name}, but it resolved`,
  });
}

function session(name: string, extra: Partial<NewSession> = {}): NewSession {
  return { name, agent: "worker", provider: "fake", ...extra };
}

async function make(
  store: SessionStore,
  name = "s1",
  extra: Partial<NewSession> = {},
): Promise<SessionRecord> {
  return store.create(session(name, extra));
}

function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", ""]);
  assert.ok(r.pid, "could not spawn a short-lived process");
  return r.pid;
}

function holder(extra: Partial<LockHolder>): LockHolder {
  return {
    pid: process.pid,
    host: hostname(),
    startTime: processStartTime(process.pid),
    token: `planted-${Math.random()}`,
    purpose: "planted",
    acquiredAt: CLOCK_START,
    leaseUntil: CLOCK_START + 30_000,
    ...extra,
  };
}

/** Applies `to` with compare-and-set from whatever the record's state is now. */
async function go(store: SessionStore, name: string, to: LifecycleState, reason = `to ${to}`) {
  const cur = await store.get(name);
  assert.ok(cur, `${name} must exist`);
  return store.update(name, cur.version, { transition: { to, reason } });
}

// ---------------------------------------------------------------------------------------------
// cases

const records: StoreCase[] = [
  {
    id: "records.create-defaults",
    title: "create: version 1, pending, empty counters, clock timestamps",
    async run(ctx) {
      const s = await ctx.open();
      const r = await make(s, "mayor", { metadata: { role: "lead" } });
      assert.equal(r.name, "mayor");
      assert.equal(r.agent, "worker");
      assert.equal(r.provider, "fake");
      assert.equal(r.version, 1);
      assert.equal(r.state, "pending");
      assert.equal(r.stateReason, "created");
      assert.equal(r.generation, 0);
      assert.equal(r.restarts, 0);
      assert.deepEqual(r.recentFailures, []);
      assert.deepEqual(r.breakdown, {});
      assert.deepEqual(r.metadata, { role: "lead" });
      for (const k of [
        "coreHash",
        "liveHash",
        "backoffUntil",
        "quarantineReason",
        "lastError",
        "lastExit",
      ] as const) {
        assert.equal(r[k], null, k);
      }
      assert.equal(r.pending, null);
      assert.equal(r.startedAt, null);
      assert.equal(r.createdAt, CLOCK_START);
      assert.equal(r.updatedAt, CLOCK_START);
      assert.equal(r.stateChangedAt, CLOCK_START);
      assert.deepEqual(await s.get("mayor"), r);
    },
  },
  {
    id: "records.create-initial-state",
    title: "create: accepts an initial state and reason (adoption)",
    async run(ctx) {
      const s = await ctx.open();
      const r = await make(s, "adopted", {
        state: "running",
        stateReason: "adopted after controller restart",
      });
      assert.equal(r.state, "running");
      assert.equal(r.stateReason, "adopted after controller restart");
    },
  },
  {
    id: "records.create-duplicate",
    title: "create: a duplicate name rejects with SessionExistsError and changes nothing",
    async run(ctx) {
      const s = await ctx.open();
      const first = await make(s, "dup", { metadata: { a: "1" } });
      await rejectsCode(make(s, "dup", { agent: "other" }), "GC_SESSION_EXISTS", "second create");
      assert.deepEqual(await s.get("dup"), first);
      const created = await s.queryEvents({ session: "dup", types: ["session.created"] });
      assert.equal(created.length, 1);
    },
  },
  {
    id: "records.create-invalid",
    title: "create: bad session/agent names and bad fields reject and store nothing",
    async run(ctx) {
      const s = await ctx.open();
      for (const name of ["", "-x", "a b", "a/b", "x".repeat(129), "a;rm -rf"]) {
        await rejectsCode(make(s, name), "GC_INVALID_NAME", `name ${JSON.stringify(name)}`);
      }
      await rejectsCode(make(s, "ok", { agent: "bad agent" }), "GC_INVALID_NAME", "agent");
      await rejectsType(make(s, "ok", { provider: "" }), TypeError, "empty provider");
      await rejectsType(make(s, "ok", { stateReason: " " }), TypeError, "blank reason");
      await rejectsType(make(s, "ok", { state: "bogus" as LifecycleState }), TypeError, "unknown state");
      await rejectsCode(make(s, "ok", { metadata: { "bad key": "v" } }), "GC_INVALID_NAME", "metadata key");
      assert.deepEqual(await s.list(), []);
      assert.deepEqual(await s.queryEvents(), []);
    },
  },
  {
    id: "records.create-event",
    title: "create: records a session.created event",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "ev");
      const evs = await s.queryEvents({ session: "ev" });
      assert.equal(evs.length, 1);
      assert.equal(evs[0]?.type, "session.created");
      assert.equal(evs[0]?.at, CLOCK_START);
      assert.deepEqual(evs[0]?.payload, { state: "pending", agent: "worker" });
    },
  },
  {
    id: "records.get-missing",
    title: "get: undefined for a missing record; InvalidNameError for a bad name",
    async run(ctx) {
      const s = await ctx.open();
      assert.equal(await s.get("nope"), undefined);
      await rejectsCode(s.get("../etc"), "GC_INVALID_NAME", "bad name");
    },
  },
  {
    id: "records.copies",
    title: "get: returns copies; mutating one changes nothing stored",
    async run(ctx) {
      const s = await ctx.open();
      const created = await make(s, "c", { metadata: { k: "v" } });
      (created.metadata as Record<string, string>).k = "changed";
      const got = await s.get("c");
      assert.ok(got);
      (got.metadata as Record<string, string>).k = "changed again";
      (got.recentFailures as number[]).push(1);
      const again = await s.get("c");
      assert.deepEqual(again?.metadata, { k: "v" });
      assert.deepEqual(again?.recentFailures, []);
    },
  },
  {
    id: "records.list",
    title: "list: sorted by name, filtered by agent and states",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "b", { agent: "worker" });
      await make(s, "a", { agent: "mayor", state: "running" });
      await make(s, "c", { agent: "worker", state: "stopped" });
      assert.deepEqual(
        (await s.list()).map((r) => r.name),
        ["a", "b", "c"],
      );
      assert.deepEqual(
        (await s.list({ agent: "worker" })).map((r) => r.name),
        ["b", "c"],
      );
      assert.deepEqual(
        (await s.list({ states: ["running", "stopped"] })).map((r) => r.name),
        ["a", "c"],
      );
      assert.deepEqual(
        (await s.list({ agent: "worker", states: ["running"] })).map((r) => r.name),
        [],
      );
      assert.deepEqual(await s.list({ states: [] }), []);
    },
  },
  {
    id: "records.update-cas",
    title: "update: compare-and-set bumps version and updatedAt",
    async run(ctx) {
      const s = await ctx.open();
      const r1 = await make(s, "u");
      ctx.clock.advance(1000);
      const r2 = await s.update("u", 1, { restarts: 3 });
      assert.equal(r2.version, 2);
      assert.equal(r2.restarts, 3);
      assert.equal(r2.updatedAt, CLOCK_START + 1000);
      assert.equal(r2.createdAt, r1.createdAt);
      const r3 = await s.update("u", 2, {});
      assert.equal(r3.version, 3, "an empty patch still bumps the version");
      assert.deepEqual(await s.get("u"), r3);
    },
  },
  {
    id: "records.update-stale",
    title: "update: a stale expected version rejects with StaleVersionError and changes nothing",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "st");
      const cur = await s.update("st", 1, { restarts: 1 });
      for (const expected of [1, 3, 0, -1]) {
        const e = (await rejectsCode(
          s.update("st", expected, { restarts: 99 }),
          "GC_STALE_VERSION",
          `expected ${expected}`,
        )) as { expected: number; actual: number };
        assert.equal(e.expected, expected);
        assert.equal(e.actual, 2);
      }
      assert.deepEqual(await s.get("st"), cur);
    },
  },
  {
    id: "records.update-missing",
    title: "update: a missing record rejects with SessionNotFoundError",
    async run(ctx) {
      const s = await ctx.open();
      await rejectsCode(s.update("ghost", 1, { restarts: 1 }), "GC_SESSION_NOT_FOUND", "update ghost");
      assert.equal(await s.get("ghost"), undefined);
    },
  },
  {
    id: "records.update-metadata-merge",
    title: "update: metadata is merged; a null value deletes the key",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "m", { metadata: { a: "1", b: "2" } });
      const r = await s.update("m", 1, { metadata: { b: null, c: "3", a: "one" } });
      assert.deepEqual(r.metadata, { a: "one", c: "3" });
      const r2 = await s.update("m", 2, { metadata: { nothing: null } });
      assert.deepEqual(r2.metadata, { a: "one", c: "3" });
      assert.deepEqual((await s.get("m"))?.metadata, { a: "one", c: "3" });
    },
  },
  {
    id: "records.update-roundtrip",
    title: "update: every field round-trips, and null clears nullable fields",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "rt");
      const patch = {
        agent: "mayor",
        provider: "tmux",
        coreHash: "v1:0123456789abcdef",
        liveHash: "v1:fedcba9876543210",
        breakdown: { command: { hash: "v1:1111111111111111", value: "python3 -i" } },
        restarts: 4,
        recentFailures: [CLOCK_START - 2000, CLOCK_START - 1000],
        backoffUntil: CLOCK_START + 5000,
        quarantineReason: "5 failures in 5 minutes",
        lastError: "exit 1",
        lastExit: { code: null, signal: "SIGKILL", at: CLOCK_START - 1000 },
        startedAt: CLOCK_START - 60_000,
        pending: { action: "start", at: CLOCK_START, generation: 1, detail: { by: "reconciler" } },
      } as const;
      const r = await s.update("rt", 1, patch);
      for (const [k, v] of Object.entries(patch)) {
        assert.deepEqual((r as unknown as Record<string, unknown>)[k], v, k);
      }
      assert.deepEqual(await s.get("rt"), r);
      const cleared = await s.update("rt", 2, {
        coreHash: null,
        liveHash: null,
        backoffUntil: null,
        quarantineReason: null,
        lastError: null,
        lastExit: null,
        startedAt: null,
        pending: null,
      });
      for (const k of [
        "coreHash",
        "liveHash",
        "backoffUntil",
        "quarantineReason",
        "lastError",
        "lastExit",
        "startedAt",
        "pending",
      ] as const) {
        assert.equal(cleared[k], null, k);
      }
      assert.equal(cleared.restarts, 4, "absent fields are untouched");
      assert.deepEqual(await s.get("rt"), cleared);
    },
  },
  {
    id: "records.update-invalid",
    title: "update: invalid field values reject and change nothing",
    async run(ctx) {
      const s = await ctx.open();
      const r = await make(s, "iv");
      const bad: [string, Promise<unknown>, new (...a: never[]) => Error][] = [
        ["restarts -1", s.update("iv", 1, { restarts: -1 }), TypeError],
        ["restarts 1.5", s.update("iv", 1, { restarts: 1.5 }), TypeError],
        ["backoffUntil NaN", s.update("iv", 1, { backoffUntil: Number.NaN }), TypeError],
        ["failures", s.update("iv", 1, { recentFailures: [Number.POSITIVE_INFINITY] }), TypeError],
        ["provider", s.update("iv", 1, { provider: "" }), TypeError],
        ["intent", s.update("iv", 1, { pending: { action: "", at: 1, generation: 0 } }), TypeError],
        ["reason", s.update("iv", 1, { transition: { to: "starting", reason: "" } }), TypeError],
      ];
      for (const [what, p, type] of bad) await rejectsType(p, type, what);
      await rejectsCode(s.update("iv", 1, { agent: "no spaces allowed" }), "GC_INVALID_NAME", "agent");
      await rejectsCode(s.update("iv", 1, { metadata: { "": "x" } }), "GC_INVALID_NAME", "metadata key");
      assert.deepEqual(await s.get("iv"), r);
      assert.equal((await s.queryEvents({ types: ["session.state"] })).length, 0);
    },
  },
  {
    id: "records.transition-legal",
    title: "update: a legal transition sets state, reason and time, and logs session.state",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "t");
      ctx.clock.advance(500);
      const r = await s.update("t", 1, { transition: { to: "starting", reason: "desired, not running" } });
      assert.equal(r.state, "starting");
      assert.equal(r.stateReason, "desired, not running");
      assert.equal(r.stateChangedAt, CLOCK_START + 500);
      const evs = await s.queryEvents({ session: "t", types: ["session.state"] });
      assert.equal(evs.length, 1);
      assert.deepEqual(evs[0]?.payload, {
        from: "pending",
        to: "starting",
        reason: "desired, not running",
        generation: 1,
      });
      ctx.clock.advance(500);
      const r2 = await s.update("t", 2, { restarts: 1 });
      assert.equal(r2.stateChangedAt, CLOCK_START + 500, "no transition, no state time change");
    },
  },
  {
    id: "records.transition-illegal",
    title: "update: an illegal transition rejects with IllegalTransitionError and changes nothing",
    async run(ctx) {
      const s = await ctx.open();
      const r = await make(s, "il");
      for (const to of ["running", "draining", "crashed", "backoff", "quarantined", "pending"] as const) {
        const e = (await rejectsCode(
          s.update("il", 1, { restarts: 5, transition: { to, reason: "x" } }),
          "GC_ILLEGAL_TRANSITION",
          `pending → ${to}`,
        )) as { from: string; to: string };
        assert.equal(e.from, "pending");
        assert.equal(e.to, to);
      }
      assert.deepEqual(await s.get("il"), r);
      assert.equal((await s.queryEvents({ types: ["session.state"] })).length, 0);
    },
  },
  {
    id: "records.transition-table",
    title: "update: every rule of the transition table is accepted by the store",
    async run(ctx) {
      const s = await ctx.open();
      let n = 0;
      for (const rule of TRANSITION_RULES) {
        const name = `tt${n++}`;
        await make(s, name, { state: rule.from });
        const r = await s.update(name, 1, { transition: { to: rule.to, reason: rule.trigger } });
        assert.equal(r.state, rule.to, `${rule.from} → ${rule.to}`);
      }
      assert.equal((await s.queryEvents({ types: ["session.state"] })).length, TRANSITION_RULES.length);
    },
  },
  {
    id: "records.generation",
    title: "update: entering starting increments generation and sets startedAt",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "g");
      ctx.clock.advance(10);
      let r = await go(s, "g", "starting");
      assert.equal(r.generation, 1);
      assert.equal(r.startedAt, CLOCK_START + 10);
      r = await go(s, "g", "running");
      assert.equal(r.generation, 1);
      r = await go(s, "g", "crashed");
      r = await go(s, "g", "backoff");
      ctx.clock.advance(10);
      r = await go(s, "g", "starting");
      assert.equal(r.generation, 2);
      assert.equal(r.startedAt, CLOCK_START + 20);
      r = await s.update("g", r.version, {
        transition: { to: "stopped", reason: "stop" },
        startedAt: null,
      });
      assert.equal(r.startedAt, null);
      r = await s.update("g", r.version, { transition: { to: "starting", reason: "again" }, startedAt: 42 });
      assert.equal(r.generation, 3);
      assert.equal(r.startedAt, 42, "an explicit startedAt wins");
    },
  },
  {
    id: "records.update-race",
    title: "update: two writers with the same expected version: exactly one wins",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      await make(a, "race");
      const results = await Promise.allSettled([
        a.update("race", 1, { metadata: { by: "a" } }),
        b.update("race", 1, { metadata: { by: "b" } }),
      ]);
      const ok = results.filter((r) => r.status === "fulfilled");
      const stale = results.filter((r) => r.status === "rejected" && isGcError(r.reason, "GC_STALE_VERSION"));
      assert.equal(ok.length, 1);
      assert.equal(stale.length, 1);
      const winner = (ok[0] as PromiseFulfilledResult<SessionRecord>).value;
      assert.deepEqual(await b.get("race"), winner);
    },
  },
  {
    id: "records.cas-update",
    title: "casUpdate: retries after losing a race and applies on the fresh record",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      await make(a, "cas");
      let calls = 0;
      let competing: Promise<unknown> | undefined;
      const r = await casUpdate(a, "cas", (cur) => {
        calls++;
        // A competing writer starts between our read and our write (stores apply a call's
        // effects before their promise settles, so it lands first).
        if (calls === 1) competing = b.update("cas", cur.version, { restarts: cur.restarts + 10 });
        return { restarts: cur.restarts + 1 };
      });
      await competing;
      assert.equal(calls, 2, "lost the first race, then retried once");
      const final = await a.get("cas");
      assert.deepEqual(final, r);
      assert.equal(final?.restarts, 11);
      const same = await casUpdate(a, "cas", () => undefined);
      assert.equal(same.version, r.version, "undefined patch writes nothing");
      await rejectsCode(
        casUpdate(a, "missing", () => ({})),
        "GC_SESSION_NOT_FOUND",
        "casUpdate missing",
      );
    },
  },
  {
    id: "records.delete",
    title: "delete: removes record, history, waits and nudges; keeps events; idempotent",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "d");
      await make(s, "keep");
      await s.appendHistory("d", [{ kind: "note", data: "x" }], 0);
      await s.createWait({ session: "d", kind: "idle" });
      await s.enqueueNudge({ session: "d", text: "hi" });
      await s.createWait({ session: "keep", kind: "idle" });
      await s.enqueueNudge({ session: "keep", text: "hi" });
      await s.appendEvent({ session: "d", type: "custom" });
      assert.equal(await s.delete("d"), true);
      assert.equal(await s.get("d"), undefined);
      assert.equal(await s.historyCount("d"), 0);
      assert.deepEqual(await s.listWaits({ session: "d" }), []);
      assert.deepEqual(await s.listNudges({ session: "d" }), []);
      assert.equal((await s.listWaits()).length, 1, "other sessions' waits stay");
      assert.equal((await s.listNudges()).length, 1, "other sessions' nudges stay");
      const types = (await s.queryEvents({ session: "d" })).map((e) => e.type);
      assert.deepEqual(types, ["session.created", "custom", "session.deleted"]);
      assert.equal(await s.delete("d"), false);
      assert.ok(await s.get("keep"));
    },
  },
  {
    id: "records.delete-stale",
    title: "delete: a stale expected version rejects and keeps the record",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "ds");
      await s.update("ds", 1, {});
      await rejectsCode(s.delete("ds", 1), "GC_STALE_VERSION", "delete stale");
      assert.ok(await s.get("ds"));
      assert.equal(await s.delete("ds", 2), true);
    },
  },
  {
    id: "records.recreate",
    title: "create: after delete, the name starts over at version 1 with empty history",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "re");
      await s.appendHistory("re", [{ kind: "a" }], 0);
      await s.update("re", 1, { restarts: 2 });
      await s.delete("re");
      const r = await make(s, "re");
      assert.equal(r.version, 1);
      assert.equal(r.restarts, 0);
      assert.equal(await s.historyCount("re"), 0);
    },
  },
];

const history: StoreCase[] = [
  {
    id: "history.append",
    title: "appendHistory: appends atomically and resolves the new count",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      assert.equal(await s.historyCount("h"), 0);
      assert.equal(
        await s.appendHistory("h", [{ kind: "prompt", data: "hi", at: 5 }, { kind: "output" }], 0),
        2,
      );
      assert.equal(await s.appendHistory("h", [{ kind: "note", data: { n: 1, list: [1, "two"] } }], 2), 3);
      assert.equal(await s.historyCount("h"), 3);
      assert.deepEqual(await s.readHistory("h"), [
        { index: 0, kind: "prompt", data: "hi", at: 5 },
        { index: 1, kind: "output", data: null, at: null },
        { index: 2, kind: "note", data: { n: 1, list: [1, "two"] }, at: null },
      ]);
    },
  },
  {
    id: "history.append-stale",
    title: "appendHistory: a wrong expected count rejects with StaleVersionError and appends nothing",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      await s.appendHistory("h", [{ kind: "a" }], 0);
      for (const expected of [0, 2, 7]) {
        const e = (await rejectsCode(
          s.appendHistory("h", [{ kind: "b" }], expected),
          "GC_STALE_VERSION",
          `expected ${expected}`,
        )) as { actual: number };
        assert.equal(e.actual, 1);
      }
      assert.equal(await s.historyCount("h"), 1);
    },
  },
  {
    id: "history.transient",
    title: "appendHistory: transient entries are dropped and not counted",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      const n = await s.appendHistory(
        "h",
        [
          { kind: "prompt", data: "keep" },
          { kind: "secret", data: "do-not-store", transient: true },
          { kind: "output", data: "keep too", transient: false },
        ],
        0,
      );
      assert.equal(n, 2);
      const stored = await s.readHistory("h");
      assert.deepEqual(
        stored.map((e) => e.data),
        ["keep", "keep too"],
      );
      assert.equal(
        await s.appendHistory("h", [{ kind: "x", transient: true }], 2),
        2,
        "all transient: no-op",
      );
      await rejectsCode(
        s.appendHistory("h", [{ kind: "x", transient: true }], 0),
        "GC_STALE_VERSION",
        "still checks the count",
      );
    },
  },
  {
    id: "history.missing-record",
    title: "appendHistory/checkpoint: a missing record rejects with SessionNotFoundError",
    async run(ctx) {
      const s = await ctx.open();
      await rejectsCode(s.appendHistory("none", [{ kind: "a" }], 0), "GC_SESSION_NOT_FOUND", "append");
      await rejectsCode(s.checkpoint("none", [{ kind: "a" }]), "GC_SESSION_NOT_FOUND", "checkpoint");
      assert.deepEqual(await s.readHistory("none"), []);
      assert.equal(await s.historyCount("none"), 0);
    },
  },
  {
    id: "history.append-race",
    title: "appendHistory: concurrent appends with one expected count: exactly one wins",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      await make(a, "h");
      const results = await Promise.allSettled([
        a.appendHistory("h", [{ kind: "a" }, { kind: "a" }], 0),
        b.appendHistory("h", [{ kind: "b" }], 0),
      ]);
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
      const kinds = (await a.readHistory("h")).map((e) => e.kind);
      assert.ok(
        JSON.stringify(kinds) === '["a","a"]' || JSON.stringify(kinds) === '["b"]',
        `no interleaving: ${kinds}`,
      );
    },
  },
  {
    id: "history.checkpoint",
    title: "checkpoint: appends when stored history is a prefix, replaces otherwise, no-op when equal",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      const e = (k: string, extra: object = {}) => ({ kind: k, data: { v: k, ...extra } });
      assert.deepEqual(await s.checkpoint("h", [e("a"), e("b")]), { mode: "append", count: 2 });
      assert.deepEqual(await s.checkpoint("h", [e("a"), e("b"), e("c")]), { mode: "append", count: 3 });
      assert.deepEqual(await s.checkpoint("h", [e("a"), e("b"), e("c")]), { mode: "noop", count: 3 });
      // Object key order does not matter; values do.
      assert.deepEqual(await s.checkpoint("h", [{ data: { v: "a" }, kind: "a" }, e("b"), e("c")]), {
        mode: "noop",
        count: 3,
      });
      assert.deepEqual(await s.checkpoint("h", [e("a"), e("x")]), { mode: "replace", count: 2 });
      assert.deepEqual(
        (await s.readHistory("h")).map((x) => x.kind),
        ["a", "x"],
      );
      assert.deepEqual(await s.checkpoint("h", [e("a")]), { mode: "replace", count: 1 }, "shorter replaces");
      assert.deepEqual(await s.checkpoint("h", [e("a", { extra: 1 })]), { mode: "replace", count: 1 });
      assert.deepEqual(await s.checkpoint("h", []), { mode: "replace", count: 0 });
      assert.equal(await s.historyCount("h"), 0);
      assert.deepEqual(await s.checkpoint("h", []), { mode: "noop", count: 0 });
      assert.equal(await s.appendHistory("h", [{ kind: "after" }], 0), 1, "counts stay consistent");
      assert.deepEqual(await s.readHistory("h"), [{ index: 0, kind: "after", data: null, at: null }]);
    },
  },
  {
    id: "history.checkpoint-transient",
    title: "checkpoint: transient entries are dropped before comparing",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      await s.checkpoint("h", [{ kind: "a" }, { kind: "b" }]);
      const r = await s.checkpoint("h", [{ kind: "a" }, { kind: "sys", transient: true }, { kind: "b" }]);
      assert.deepEqual(r, { mode: "noop", count: 2 });
    },
  },
  {
    id: "history.read-range",
    title: "readHistory: from and limit select a window",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      await s.appendHistory(
        "h",
        Array.from({ length: 10 }, (_, i) => ({ kind: "k", data: i })),
        0,
      );
      assert.deepEqual(
        (await s.readHistory("h", { from: 3, limit: 4 })).map((e) => [e.index, e.data]),
        [
          [3, 3],
          [4, 4],
          [5, 5],
          [6, 6],
        ],
      );
      assert.deepEqual(
        (await s.readHistory("h", { from: 8 })).map((e) => e.index),
        [8, 9],
      );
      assert.deepEqual(await s.readHistory("h", { from: 20 }), []);
      assert.deepEqual(await s.readHistory("h", { limit: 0 }), []);
    },
  },
  {
    id: "history.redacted",
    title: "appendHistory: secret-looking keys and KEY=value strings are redacted",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "h");
      await s.appendHistory(
        "h",
        [
          {
            kind: "env",
            data: { env: ["PATH=/bin", "GH_TOKEN=ghp_abc"], nested: { password: "hunter2", user: "bob" } },
          },
        ],
        0,
      );
      const [e] = await s.readHistory("h");
      assert.deepEqual(e?.data, {
        env: ["PATH=/bin", `GH_TOKEN=${REDACTED}`],
        nested: { password: REDACTED, user: "bob" },
      });
      // Redaction is deterministic, so checkpointing the same (unredacted) list is a no-op.
      const again = await s.checkpoint("h", [
        {
          kind: "env",
          data: { env: ["PATH=/bin", "GH_TOKEN=ghp_abc"], nested: { password: "hunter2", user: "bob" } },
        },
      ]);
      assert.equal(again.mode, "noop");
    },
  },
];

const events: StoreCase[] = [
  {
    id: "events.append-query",
    title: "appendEvent: strictly increasing seq; queryEvents returns them in order",
    async run(ctx) {
      const s = await ctx.open();
      const e1 = await s.appendEvent({ session: "a", type: "x.one", payload: { n: 1 } });
      ctx.clock.advance(5);
      const e2 = await s.appendEvent({ type: "city.tick" });
      const e3 = await s.appendEvent({
        session: "b",
        type: "x.two",
        payload: { deep: { list: [1, null] } },
        at: 7,
      });
      assert.ok(e1.seq < e2.seq && e2.seq < e3.seq);
      assert.equal(e1.at, CLOCK_START);
      assert.equal(e2.at, CLOCK_START + 5);
      assert.equal(e2.session, null);
      assert.deepEqual(e2.payload, {});
      assert.equal(e3.at, 7);
      assert.deepEqual(await s.queryEvents(), [e1, e2, e3]);
    },
  },
  {
    id: "events.query-filters",
    title: "queryEvents: session, since (exclusive), types, limit and desc order",
    async run(ctx) {
      const s = await ctx.open();
      const all = [];
      for (let i = 0; i < 10; i++) {
        all.push(
          await s.appendEvent({
            session: i % 2 ? "odd" : "even",
            type: i % 3 ? "t.a" : "t.b",
            payload: { i },
          }),
        );
      }
      const seqs = (evs: { seq: number }[]) => evs.map((e) => e.seq);
      assert.deepEqual(seqs(await s.queryEvents({ session: "odd" })), seqs(all.filter((_, i) => i % 2)));
      const mid = all[4]?.seq ?? 0;
      assert.deepEqual(seqs(await s.queryEvents({ since: mid })), seqs(all.slice(5)));
      assert.deepEqual(seqs(await s.queryEvents({ since: mid, limit: 2 })), seqs(all.slice(5, 7)));
      assert.deepEqual(
        seqs(await s.queryEvents({ types: ["t.b"] })),
        seqs(all.filter((_, i) => i % 3 === 0)),
      );
      assert.deepEqual(await s.queryEvents({ types: [] }), []);
      assert.deepEqual(seqs(await s.queryEvents({ order: "desc", limit: 3 })), seqs(all.slice(7).reverse()));
      assert.deepEqual(
        seqs(await s.queryEvents({ session: "even", types: ["t.b"], since: all[0]?.seq ?? 0 })),
        seqs([all[6]!]),
      );
      assert.deepEqual(await s.queryEvents({ since: all[9]?.seq ?? 0 }), []);
      assert.deepEqual(await s.queryEvents({ limit: 0 }), []);
    },
  },
  {
    id: "events.redacted",
    title: "appendEvent: payload values under secret keys and SECRET=value strings are redacted",
    async run(ctx) {
      const s = await ctx.open();
      const e = await s.appendEvent({
        session: "a",
        type: "start",
        payload: {
          env: { API_KEY: "sk-1", LOG_LEVEL: "info", db_password: "pw", Authorization: "Bearer x" },
          argv: ["--flag", "ANTHROPIC_API_KEY=sk-2"],
          author: "alice",
          message: "failed with GITHUB_TOKEN=ghp_zzz set",
        },
      });
      const want = {
        env: { API_KEY: REDACTED, LOG_LEVEL: "info", db_password: REDACTED, Authorization: REDACTED },
        argv: ["--flag", `ANTHROPIC_API_KEY=${REDACTED}`],
        author: "alice",
        message: `failed with GITHUB_TOKEN=${REDACTED} set`,
      };
      assert.deepEqual(e.payload, want);
      assert.deepEqual((await s.queryEvents())[0]?.payload, want);
    },
  },
  {
    id: "events.invalid",
    title: "appendEvent: empty type, bad session name or non-object payload reject",
    async run(ctx) {
      const s = await ctx.open();
      await rejectsType(s.appendEvent({ type: "" }), TypeError, "empty type");
      await rejectsCode(s.appendEvent({ type: "x", session: "a b" }), "GC_INVALID_NAME", "bad session");
      await rejectsType(s.appendEvent({ type: "x", payload: [1] as never }), TypeError, "array payload");
      assert.deepEqual(await s.queryEvents(), []);
    },
  },
  {
    id: "events.prune",
    title: "pruneEvents: deletes this actor's events through a seq, idempotently",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      const ea = [];
      for (let i = 0; i < 4; i++) ea.push(await a.appendEvent({ type: "a" }));
      const eb = await b.appendEvent({ type: "b" });
      assert.equal(await a.pruneEvents(eb.seq), 4);
      assert.equal(await a.pruneEvents(eb.seq), 0);
      assert.deepEqual(await b.queryEvents(), [eb]);
      const later = await a.appendEvent({ type: "a" });
      assert.ok(later.seq > (ea[3]?.seq ?? 0), "seq is never reused");
      assert.deepEqual(await a.queryEvents(), [later]);
    },
  },
  {
    id: "events.trim",
    title: "trimEvents: retention by age and by count, this actor's events only",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      for (let i = 0; i < 5; i++) await a.appendEvent({ type: `old${i}`, at: 1_000 + i });
      for (let i = 0; i < 5; i++) await a.appendEvent({ type: `new${i}`, at: 9_000 + i });
      const eb = await b.appendEvent({ type: "b", at: 1 });
      assert.equal(await a.trimEvents({ before: 9_000 }), 5, "age: every event before the bound");
      assert.deepEqual(
        (await a.queryEvents()).map((e) => e.type),
        ["new0", "new1", "new2", "new3", "new4"],
      );
      assert.equal(await a.trimEvents({ keep: 2 }), 3, "count: all but the newest 2");
      assert.deepEqual(
        (await a.queryEvents()).map((e) => e.type),
        ["new3", "new4"],
      );
      assert.equal(await a.trimEvents({ keep: 2, before: 0 }), 0, "idempotent");
      assert.equal(await a.trimEvents({}), 0, "no bounds: nothing");
      assert.deepEqual(await b.queryEvents(), [eb], "another actor's events are untouched");
      assert.equal(await a.trimEvents({ keep: 0 }), 2);
      assert.deepEqual(await a.queryEvents(), []);
    },
  },
];

const waits: StoreCase[] = [
  {
    id: "waits.create",
    title: "createWait: records a pending wait",
    async run(ctx) {
      const s = await ctx.open();
      const w = await s.createWait({
        session: "s1",
        kind: "match",
        condition: { regex: "done" },
        note: "wait for done",
        expiresAt: CLOCK_START + 1000,
      });
      assert.equal(w.state, "pending");
      assert.equal(w.session, "s1");
      assert.equal(w.kind, "match");
      assert.deepEqual(w.condition, { regex: "done" });
      assert.equal(w.note, "wait for done");
      assert.equal(w.createdAt, CLOCK_START);
      assert.equal(w.expiresAt, CLOCK_START + 1000);
      assert.equal(w.settledAt, null);
      assert.equal(w.result, null);
      assert.equal(w.reason, null);
      assert.deepEqual(await s.getWait(w.id), w);
      const w2 = await s.createWait({ session: "s1", kind: "idle" });
      assert.ok(w2.id > w.id);
      assert.equal(w2.expiresAt, null);
      assert.equal(w2.note, "");
      await rejectsType(s.createWait({ session: "s1", kind: "" }), TypeError, "empty kind");
      await rejectsCode(s.createWait({ session: "s 1", kind: "idle" }), "GC_INVALID_NAME", "bad session");
    },
  },
  {
    id: "waits.settle-once",
    title: "resolveWait/expireWait/cancelWait: the first settler wins; later calls report changed=false",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      const w = await a.createWait({ session: "s1", kind: "idle" });
      ctx.clock.advance(100);
      const r = await a.resolveWait(w.id, { output: "ok", token: "t0ps3cret" });
      assert.equal(r?.changed, true);
      assert.equal(r?.wait.state, "resolved");
      assert.equal(r?.wait.settledAt, CLOCK_START + 100);
      assert.deepEqual(r?.wait.result, { output: "ok", token: REDACTED });
      for (const again of [b.resolveWait(w.id, "late"), b.expireWait(w.id), b.cancelWait(w.id, "no")]) {
        const x = await again;
        assert.equal(x?.changed, false);
        assert.deepEqual(x?.wait, r?.wait);
      }
      const c = await a.createWait({ session: "s1", kind: "idle" });
      const cancelled = await a.cancelWait(c.id, "session reset");
      assert.equal(cancelled?.wait.state, "canceled");
      assert.equal(cancelled?.wait.reason, "session reset");
      const e = await a.createWait({ session: "s1", kind: "idle" });
      assert.equal((await a.expireWait(e.id))?.wait.state, "expired");
      assert.equal(await a.resolveWait(9_999_999), undefined);
    },
  },
  {
    id: "waits.race",
    title: "resolveWait: concurrent settlers: exactly one reports changed",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      const w = await a.createWait({ session: "s1", kind: "idle" });
      const rs = await Promise.all([a.resolveWait(w.id, "a"), b.expireWait(w.id, "deadline")]);
      assert.equal(rs.filter((r) => r?.changed).length, 1);
    },
  },
  {
    id: "waits.expire-due",
    title: "expireDueWaits: expires exactly the pending waits past their deadline",
    async run(ctx) {
      const s = await ctx.open();
      const soon = await s.createWait({ session: "s1", kind: "idle", expiresAt: CLOCK_START + 10 });
      const later = await s.createWait({ session: "s1", kind: "idle", expiresAt: CLOCK_START + 1000 });
      const never = await s.createWait({ session: "s1", kind: "idle" });
      const done = await s.createWait({ session: "s1", kind: "idle", expiresAt: CLOCK_START + 5 });
      await s.resolveWait(done.id);
      assert.deepEqual(await s.expireDueWaits(), []);
      ctx.clock.advance(10);
      const expired = await s.expireDueWaits();
      assert.deepEqual(
        expired.map((w) => w.id),
        [soon.id],
      );
      assert.equal(expired[0]?.state, "expired");
      assert.equal((await s.getWait(soon.id))?.state, "expired");
      assert.equal((await s.getWait(later.id))?.state, "pending");
      assert.equal((await s.getWait(never.id))?.state, "pending");
      assert.equal((await s.getWait(done.id))?.state, "resolved");
      assert.deepEqual(await s.expireDueWaits(), [], "idempotent");
    },
  },
  {
    id: "waits.list",
    title: "listWaits: by id, filtered by session and states",
    async run(ctx) {
      const s = await ctx.open();
      const w1 = await s.createWait({ session: "a", kind: "idle" });
      const w2 = await s.createWait({ session: "b", kind: "idle" });
      const w3 = await s.createWait({ session: "a", kind: "state" });
      await s.resolveWait(w3.id);
      const ids = (ws: { id: number }[]) => ws.map((w) => w.id);
      assert.deepEqual(ids(await s.listWaits()), [w1.id, w2.id, w3.id]);
      assert.deepEqual(ids(await s.listWaits({ session: "a" })), [w1.id, w3.id]);
      assert.deepEqual(ids(await s.listWaits({ states: ["pending"] })), [w1.id, w2.id]);
      assert.deepEqual(ids(await s.listWaits({ session: "a", states: ["resolved"] })), [w3.id]);
    },
  },
];

const nudges: StoreCase[] = [
  {
    id: "nudges.enqueue",
    title: "enqueueNudge: queued with defaults; text stored verbatim",
    async run(ctx) {
      const s = await ctx.open();
      const text = "line 1\nline 2 'quotes' $(not run) ✓ API_TOKEN=this-is-message-text";
      const n = await s.enqueueNudge({ session: "s1", text, source: "cli" });
      assert.equal(n.state, "queued");
      assert.equal(n.text, text);
      assert.equal(n.attempts, 0);
      assert.equal(n.maxAttempts, DEFAULT_NUDGE_MAX_ATTEMPTS);
      assert.equal(n.expiresAt, CLOCK_START + DEFAULT_NUDGE_TTL_MS);
      assert.equal(n.notBefore, CLOCK_START);
      assert.equal(n.source, "cli");
      assert.deepEqual(await s.getNudge(n.id), n);
      await rejectsType(s.enqueueNudge({ session: "s1", text: "x", ttlMs: 0 }), RangeError, "ttl 0");
      await rejectsType(
        s.enqueueNudge({ session: "s1", text: "x", maxAttempts: 0 }),
        RangeError,
        "attempts 0",
      );
      await rejectsCode(s.enqueueNudge({ session: "s 1", text: "x" }), "GC_INVALID_NAME", "bad session");
      assert.equal((await s.listNudges()).length, 1);
    },
  },
  {
    id: "nudges.claim-fifo",
    title: "claimNudge: FIFO per session; a claimed nudge is not handed out twice",
    async run(ctx) {
      const s = await ctx.open();
      const n1 = await s.enqueueNudge({ session: "s1", text: "one" });
      const other = await s.enqueueNudge({ session: "s2", text: "other" });
      const n2 = await s.enqueueNudge({ session: "s1", text: "two" });
      const c1 = await s.claimNudge("s1", { leaseMs: 1000 });
      assert.equal(c1?.id, n1.id);
      assert.equal(c1?.state, "claimed");
      assert.equal(c1?.attempts, 1);
      assert.equal(c1?.claimedUntil, CLOCK_START + 1000);
      const c2 = await s.claimNudge("s1");
      assert.equal(c2?.id, n2.id);
      assert.equal(await s.claimNudge("s1"), undefined, "nothing else due");
      assert.equal((await s.getNudge(other.id))?.state, "queued");
      await rejectsType(s.claimNudge("s2", { leaseMs: 0 }), RangeError, "lease 0");
    },
  },
  {
    id: "nudges.not-before",
    title: "claimNudge: honours notBefore, earliest due first",
    async run(ctx) {
      const s = await ctx.open();
      const later = await s.enqueueNudge({ session: "s1", text: "later", notBefore: CLOCK_START + 100 });
      const sooner = await s.enqueueNudge({ session: "s1", text: "sooner", notBefore: CLOCK_START + 50 });
      assert.equal(await s.claimNudge("s1"), undefined);
      ctx.clock.advance(100);
      assert.equal((await s.claimNudge("s1"))?.id, sooner.id);
      assert.equal((await s.claimNudge("s1"))?.id, later.id);
    },
  },
  {
    id: "nudges.complete",
    title: "completeNudge: marks the current claim delivered; a wrong attempt is stale",
    async run(ctx) {
      const s = await ctx.open();
      const n = await s.enqueueNudge({ session: "s1", text: "hi" });
      await rejectsCode(s.completeNudge(n.id, 0), "GC_STALE_VERSION", "not claimed");
      const c = await s.claimNudge("s1");
      assert.ok(c);
      await rejectsCode(s.completeNudge(n.id, 2), "GC_STALE_VERSION", "wrong attempt");
      ctx.clock.advance(7);
      const d = await s.completeNudge(n.id, c.attempts);
      assert.equal(d.state, "delivered");
      assert.equal(d.deliveredAt, CLOCK_START + 7);
      assert.equal(d.claimedUntil, null);
      await rejectsCode(s.completeNudge(n.id, c.attempts), "GC_STALE_VERSION", "twice");
      await rejectsCode(s.completeNudge(424242, 1), "GC_STALE_VERSION", "unknown id");
      assert.equal(await s.claimNudge("s1"), undefined);
    },
  },
  {
    id: "nudges.fail-retry-dead",
    title: "failNudge: retries after the delay, then keeps a dead letter with the reason",
    async run(ctx) {
      const s = await ctx.open();
      const n = await s.enqueueNudge({ session: "s1", text: "hi", maxAttempts: 2 });
      const c1 = await s.claimNudge("s1");
      assert.ok(c1);
      const f1 = await s.failNudge(n.id, c1.attempts, "session busy", { retryAfterMs: 500 });
      assert.equal(f1.state, "queued");
      assert.equal(f1.lastError, "session busy");
      assert.equal(f1.notBefore, CLOCK_START + 500);
      assert.equal(await s.claimNudge("s1"), undefined, "not before the retry delay");
      ctx.clock.advance(500);
      const c2 = await s.claimNudge("s1");
      assert.equal(c2?.attempts, 2);
      const f2 = await s.failNudge(n.id, 2, "paste not confirmed");
      assert.equal(f2.state, "dead");
      assert.match(f2.deadReason ?? "", /attempts exhausted/);
      assert.match(f2.deadReason ?? "", /2\/2/);
      assert.match(f2.deadReason ?? "", /paste not confirmed/);
      assert.equal(await s.claimNudge("s1"), undefined);
      assert.deepEqual(
        (await s.listNudges({ states: ["dead"] })).map((x) => x.id),
        [n.id],
      );
      await rejectsCode(s.failNudge(n.id, 2, "again"), "GC_STALE_VERSION", "fail a dead letter");
    },
  },
  {
    id: "nudges.ttl",
    title: "claimNudge/expireNudges: past its TTL a nudge becomes a dead letter saying why",
    async run(ctx) {
      const s = await ctx.open();
      const a = await s.enqueueNudge({ session: "s1", text: "a", ttlMs: 1000 });
      const b = await s.enqueueNudge({ session: "s2", text: "b", ttlMs: 1000 });
      const c = await s.enqueueNudge({ session: "s2", text: "c", ttlMs: 5000 });
      const ca = await s.claimNudge("s1");
      assert.ok(ca);
      await s.failNudge(a.id, 1, "still busy");
      ctx.clock.advance(1000);
      assert.equal(await s.claimNudge("s1"), undefined);
      const deadA = await s.getNudge(a.id);
      assert.equal(deadA?.state, "dead");
      assert.match(deadA?.deadReason ?? "", /expired/);
      assert.match(deadA?.deadReason ?? "", /still busy/);
      const moved = await s.expireNudges();
      assert.deepEqual(
        moved.map((n) => n.id),
        [b.id],
      );
      assert.equal((await s.getNudge(b.id))?.state, "dead");
      assert.equal((await s.getNudge(c.id))?.state, "queued");
      assert.deepEqual(await s.expireNudges(), [], "idempotent");
    },
  },
  {
    id: "nudges.lease",
    title:
      "claimNudge: a lapsed claim is a dead letter, never claimed again (at most once), and fences the old claimer",
    async run(ctx) {
      const s = await ctx.open();
      const n = await s.enqueueNudge({ session: "s1", text: "x", maxAttempts: 3 });
      const first = await s.claimNudge("s1", { leaseMs: 100 });
      assert.equal(first?.attempts, 1);
      ctx.clock.advance(99);
      assert.equal(await s.claimNudge("s1"), undefined, "lease still running");
      ctx.clock.advance(1);
      assert.equal(
        await s.claimNudge("s1", { leaseMs: 100 }),
        undefined,
        "its attempt may have typed the text",
      );
      const dead = await s.getNudge(n.id);
      assert.equal(dead?.state, "dead");
      assert.match(dead?.deadReason ?? "", /at most once/);
      assert.match(dead?.lastError ?? "", /lease/);
      await rejectsCode(s.completeNudge(n.id, 1), "GC_STALE_VERSION", "old claimer");
      await rejectsCode(s.failNudge(n.id, 1, "old"), "GC_STALE_VERSION", "old claimer fail");
    },
  },
  {
    id: "nudges.lease-expire",
    title: "expireNudges: a lapsed claim becomes dead",
    async run(ctx) {
      const s = await ctx.open();
      const n = await s.enqueueNudge({ session: "s1", text: "x", maxAttempts: 3 });
      await s.claimNudge("s1", { leaseMs: 10 });
      ctx.clock.advance(10);
      const moved = await s.expireNudges();
      assert.deepEqual(
        moved.map((x) => x.id),
        [n.id],
      );
      assert.match(moved[0]?.deadReason ?? "", /at most once/);
    },
  },
  {
    id: "nudges.fail-final",
    title: "failNudge: a final failure (the text may have arrived) is a dead letter at once",
    async run(ctx) {
      const s = await ctx.open();
      const n = await s.enqueueNudge({ session: "s1", text: "x", maxAttempts: 5 });
      await s.claimNudge("s1");
      const f = await s.failNudge(n.id, 1, "sent but not confirmed", { retryAfterMs: 10, final: true });
      assert.equal(f.state, "dead");
      assert.match(f.deadReason ?? "", /at most once/);
      ctx.clock.advance(1_000);
      assert.equal(await s.claimNudge("s1"), undefined);
    },
  },
  {
    id: "nudges.claim-race",
    title: "claimNudge: concurrent claimers: each nudge goes to exactly one",
    async run(ctx) {
      const stores = [await ctx.open(), await ctx.open(), await ctx.open()];
      const first = stores[0];
      assert.ok(first);
      for (let i = 0; i < 5; i++) await first.enqueueNudge({ session: "s1", text: `n${i}` });
      const got = await Promise.all(
        Array.from({ length: 9 }, (_, i) => stores[i % 3]?.claimNudge("s1") ?? Promise.resolve(undefined)),
      );
      const ids = got.filter((n) => n !== undefined).map((n) => n.id);
      assert.equal(ids.length, 5);
      assert.equal(new Set(ids).size, 5);
    },
  },
  {
    id: "nudges.list",
    title: "listNudges: by id, filtered by session and states",
    async run(ctx) {
      const s = await ctx.open();
      const a = await s.enqueueNudge({ session: "a", text: "1" });
      const b = await s.enqueueNudge({ session: "b", text: "2" });
      const a2 = await s.enqueueNudge({ session: "a", text: "3" });
      await s.claimNudge("a");
      const ids = (ns: { id: number }[]) => ns.map((n) => n.id);
      assert.deepEqual(ids(await s.listNudges()), [a.id, b.id, a2.id]);
      assert.deepEqual(ids(await s.listNudges({ session: "a" })), [a.id, a2.id]);
      assert.deepEqual(ids(await s.listNudges({ states: ["claimed"] })), [a.id]);
      assert.deepEqual(ids(await s.listNudges({ session: "a", states: ["queued"] })), [a2.id]);
    },
  },
];

const locks: StoreCase[] = [
  {
    id: "locks.try-lock",
    title: "tryLock: a second holder is refused at once with LockedError naming the holder",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      assert.equal(await a.lockHolder("s1"), undefined);
      const lock = await a.tryLock("s1", { purpose: "gc run" });
      assert.equal(lock.session, "s1");
      assert.equal(lock.holder.pid, process.pid);
      const e = (await rejectsCode(
        b.tryLock("s1", { purpose: "other" }),
        "GC_LOCKED",
        "second tryLock",
      )) as Error & {
        holder: LockHolder;
      };
      assert.match(e.message, new RegExp(`pid ${process.pid}`));
      assert.match(e.message, /gc run/);
      assert.equal(e.holder.token, lock.holder.token);
      await rejectsCode(a.tryLock("s1"), "GC_LOCKED", "not reentrant");
      assert.equal((await b.lockHolder("s1"))?.token, lock.holder.token);
      const other = await b.tryLock("s2");
      await other.release();
      await lock.release();
      await lock.release(); // idempotent
      assert.equal(await a.lockHolder("s1"), undefined);
      const again = await b.tryLock("s1");
      await lock.release(); // a stale handle must not release the new holder
      assert.equal((await a.lockHolder("s1"))?.token, again.holder.token);
      await again.release();
    },
  },
  {
    id: "locks.synchronize-serializes",
    title: "synchronize: critical sections on one session never overlap",
    async run(ctx) {
      const stores = [await ctx.open(), await ctx.open()];
      let inside = 0;
      let maxInside = 0;
      const order: number[] = [];
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          stores[i % 2]?.synchronize("s1", async () => {
            inside++;
            maxInside = Math.max(maxInside, inside);
            await new Promise((r) => setImmediate(r));
            order.push(i);
            inside--;
          }),
        ),
      );
      assert.equal(maxInside, 1);
      assert.equal(order.length, 6);
      assert.equal(await stores[0]?.lockHolder("s1"), undefined);
    },
  },
  {
    id: "locks.synchronize-result",
    title: "synchronize: resolves fn's value, rejects with fn's error, releases either way",
    async run(ctx) {
      const s = await ctx.open();
      assert.equal(await s.synchronize("s1", () => 42), 42);
      await assert.rejects(
        s.synchronize("s1", async () => {
          throw new Error("boom");
        }),
        /boom/,
      );
      assert.equal(await s.lockHolder("s1"), undefined);
      assert.equal(await s.synchronize("s1", async () => "again"), "again");
    },
  },
  {
    id: "locks.synchronize-abort",
    title: "synchronize: a waiter aborted by its signal rejects with the reason; the holder keeps the lock",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      const lock = await a.tryLock("s1");
      const ac = new AbortController();
      const reason = new Error("operator pressed Ctrl-C");
      const waiting = b.synchronize("s1", () => "never", { signal: ac.signal });
      setTimeout(() => ac.abort(reason), 20);
      await assert.rejects(waiting, (e) => e === reason);
      assert.equal((await a.lockHolder("s1"))?.token, lock.holder.token);
      const pre = new AbortController();
      pre.abort(reason);
      await assert.rejects(
        b.synchronize("s2", () => 1, { signal: pre.signal }),
        (e) => e === reason,
      );
      await lock.release();
    },
  },
  {
    id: "locks.synchronize-timeout",
    title: "synchronize: gives up after timeoutMs with OperationTimeoutError caused by LockedError",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      const lock = await a.tryLock("s1", { purpose: "long job" });
      const e = (await rejectsCode(
        b.synchronize("s1", () => 1, { timeoutMs: 30 }),
        "GC_TIMEOUT",
        "timeout",
      )) as Error;
      assert.ok(isGcError(e.cause, "GC_LOCKED"));
      await lock.release();
    },
  },
  {
    id: "locks.synchronize-waits",
    title: "synchronize: a waiter proceeds once the holder releases",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      const lock = await a.tryLock("s1");
      let ran = false;
      const waiting = b.synchronize("s1", () => {
        ran = true;
        return "done";
      });
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(ran, false);
      await lock.release();
      assert.equal(await waiting, "done");
    },
  },
  {
    id: "locks.dead-pid",
    title: "tryLock: a lock whose holder process is dead is taken over",
    requires: ["plantLock"],
    async run(ctx) {
      const s = await ctx.open();
      const plantLock = ctx.target.plantLock;
      assert.ok(plantLock);
      await plantLock("actor-a", "s1", holder({ pid: deadPid(), startTime: "1" }));
      assert.equal(await s.lockHolder("s1"), undefined, "a dead holder is no holder");
      const lock = await s.tryLock("s1");
      assert.equal(lock.holder.pid, process.pid);
      await lock.release();
    },
  },
  {
    id: "locks.pid-reuse",
    title: "tryLock: a holder whose pid now belongs to a different process is stale",
    requires: ["plantLock"],
    async run(ctx) {
      const s = await ctx.open();
      const plantLock = ctx.target.plantLock;
      assert.ok(plantLock);
      await plantLock("actor-a", "s1", holder({ startTime: "12345-not-my-start-time" }));
      const lock = await s.tryLock("s1");
      await lock.release();
      await plantLock(
        "actor-a",
        "s2",
        holder({ pid: process.ppid, startTime: "not-the-parent's-start-time" }),
      );
      const lock2 = await s.tryLock("s2");
      await lock2.release();
    },
  },
  {
    id: "locks.live-planted",
    title: "tryLock: a live holder in another process context is respected",
    requires: ["plantLock"],
    async run(ctx) {
      const s = await ctx.open();
      const plantLock = ctx.target.plantLock;
      assert.ok(plantLock);
      // Our parent process, with its real start time, is alive for as long as we are.
      const pid = process.ppid;
      await plantLock(
        "actor-a",
        "s1",
        holder({ pid, startTime: processStartTime(pid), purpose: "controller" }),
      );
      const e = (await rejectsCode(s.tryLock("s1"), "GC_LOCKED", "held by the parent")) as Error;
      assert.match(e.message, new RegExp(`pid ${pid} .*controller`));
    },
  },
  {
    id: "locks.other-host",
    title: "tryLock: another host's lock is held while its lease runs and taken over after",
    requires: ["plantLock"],
    async run(ctx) {
      const s = await ctx.open();
      const plantLock = ctx.target.plantLock;
      assert.ok(plantLock);
      await plantLock("actor-a", "s1", holder({ host: "elsewhere.invalid", leaseUntil: CLOCK_START + 1000 }));
      const e = (await rejectsCode(s.tryLock("s1"), "GC_LOCKED", "lease running")) as Error;
      assert.match(e.message, /elsewhere\.invalid/);
      ctx.clock.advance(1000);
      const lock = await s.tryLock("s1");
      await lock.release();
    },
  },
  {
    id: "locks.close-releases",
    title: "close: releases the locks the store holds",
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.open();
      await a.tryLock("s1");
      await a.close();
      const lock = await b.tryLock("s1");
      await lock.release();
    },
  },
];

const isolation: StoreCase[] = [
  {
    id: "isolation.records",
    title: "actors: records of one actor are invisible and untouchable to another",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      const ra = await make(a, "same", { metadata: { owner: "a" } });
      assert.equal(await b.get("same"), undefined);
      assert.deepEqual(await b.list(), []);
      await rejectsCode(b.update("same", 1, { restarts: 9 }), "GC_SESSION_NOT_FOUND", "cross-actor update");
      assert.equal(await b.delete("same"), false);
      const rb = await make(b, "same", { metadata: { owner: "b" } });
      assert.equal(rb.version, 1);
      await b.update("same", 1, { restarts: 2 });
      assert.deepEqual(await a.get("same"), ra);
      assert.deepEqual(
        (await a.list()).map((r) => r.metadata.owner),
        ["a"],
      );
      assert.equal(await a.delete("same"), true);
      assert.equal((await b.get("same"))?.restarts, 2);
    },
  },
  {
    id: "isolation.history",
    title: "actors: history is per actor",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      await make(a, "h");
      await make(b, "h");
      await a.appendHistory("h", [{ kind: "a" }, { kind: "a" }], 0);
      assert.equal(await b.historyCount("h"), 0);
      assert.deepEqual(await b.readHistory("h"), []);
      assert.equal(await b.appendHistory("h", [{ kind: "b" }], 0), 1);
      await b.checkpoint("h", [{ kind: "z" }]);
      assert.deepEqual(
        (await a.readHistory("h")).map((e) => e.kind),
        ["a", "a"],
      );
    },
  },
  {
    id: "isolation.events",
    title: "actors: events are per actor",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      await a.appendEvent({ session: "s", type: "a" });
      await make(a, "s");
      const eb = await b.appendEvent({ session: "s", type: "b" });
      assert.deepEqual(await b.queryEvents(), [eb]);
      assert.deepEqual(await b.queryEvents({ session: "s" }), [eb]);
      assert.deepEqual(
        (await a.queryEvents()).map((e) => e.type),
        ["a", "session.created"],
      );
    },
  },
  {
    id: "isolation.waits",
    title: "actors: waits are per actor, including by id",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      const w = await a.createWait({ session: "s", kind: "idle", expiresAt: CLOCK_START });
      assert.equal(await b.getWait(w.id), undefined);
      assert.equal(await b.resolveWait(w.id), undefined);
      assert.equal(await b.expireWait(w.id), undefined);
      assert.equal(await b.cancelWait(w.id, "x"), undefined);
      assert.deepEqual(await b.listWaits(), []);
      assert.deepEqual(await b.expireDueWaits(), []);
      assert.equal((await a.getWait(w.id))?.state, "pending");
    },
  },
  {
    id: "isolation.nudges",
    title: "actors: nudges are per actor, including by id",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      const n = await a.enqueueNudge({ session: "s", text: "for a", ttlMs: 10 });
      assert.equal(await b.getNudge(n.id), undefined);
      assert.equal(await b.claimNudge("s"), undefined);
      assert.deepEqual(await b.listNudges(), []);
      const c = await a.claimNudge("s");
      assert.ok(c);
      await rejectsCode(b.completeNudge(n.id, 1), "GC_STALE_VERSION", "cross-actor complete");
      await rejectsCode(b.failNudge(n.id, 1, "x"), "GC_STALE_VERSION", "cross-actor fail");
      ctx.clock.advance(10);
      assert.deepEqual(await b.expireNudges(), []);
      assert.equal((await a.getNudge(n.id))?.state, "claimed");
    },
  },
  {
    id: "isolation.locks",
    title: "actors: locks are per actor",
    async run(ctx) {
      const a = await ctx.open("actor-a");
      const b = await ctx.open("actor-b");
      const la = await a.tryLock("s");
      assert.equal(await b.lockHolder("s"), undefined);
      const lb = await b.tryLock("s");
      await la.release();
      assert.equal((await b.lockHolder("s"))?.token, lb.holder.token);
      await lb.release();
    },
  },
  {
    id: "isolation.tenancy",
    title: "open: an actor is required unless single-tenant; the store says which",
    async run(ctx) {
      await rejectsType(ctx.target.open({}), TypeError, "no actor");
      await rejectsType(ctx.target.open({ actor: "a", singleTenant: true }), TypeError, "both");
      for (const actor of ["", "has space", "-lead", "a/b", "x".repeat(200)]) {
        await rejectsCode(ctx.target.open({ actor }), "GC_INVALID_NAME", `actor ${JSON.stringify(actor)}`);
      }
      const a = await ctx.open("team-1@example.com");
      assert.equal(a.info.tenancy, "multi");
      assert.equal(a.info.actor, "team-1@example.com");
      await rejectsCode(ctx.target.open({ singleTenant: true }), "GC_STORE", "multi db opened single");
    },
  },
  {
    id: "isolation.single-tenant",
    title: "open: a single-tenant store works and refuses later actor opens",
    async run(ctx) {
      const s = await ctx.openSingle();
      assert.equal(s.info.tenancy, "single");
      assert.equal(s.info.actor, undefined);
      await make(s, "solo");
      const again = await ctx.openSingle();
      assert.ok(await again.get("solo"));
      const e = (await rejectsCode(
        ctx.target.open({ actor: "a" }),
        "GC_STORE",
        "single db opened multi",
      )) as Error;
      assert.match(e.message, /single-tenant/);
    },
  },
];

const misc: StoreCase[] = [
  {
    id: "redaction.records",
    title: "create/update: secrets in metadata, breakdown, intent detail and error text are redacted",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "r", {
        metadata: {
          GITHUB_TOKEN: "ghp_1",
          db_password: "pw",
          note: "uses OPENAI_API_KEY=sk-3",
          author: "carol",
        },
        breakdown: {
          "env.API_SECRET": { hash: "v1:aaaaaaaaaaaaaaaa", value: "shh" },
          "env.LOG_LEVEL": { hash: "v1:bbbbbbbbbbbbbbbb", value: "info" },
          command: { hash: "v1:cccccccccccccccc", value: "agent --x AUTH_TOKEN=tok" },
        },
      });
      const r = await s.update("r", 1, {
        metadata: { SESSION_SECRET: "s" },
        lastError: "start failed: AWS_SECRET_ACCESS_KEY=abc rejected",
        quarantineReason: "crash loop, PASSWORD=x seen",
        pending: { action: "start", at: 1, generation: 1, detail: { API_KEY: "k", why: "drift" } },
        transition: { to: "starting", reason: "restart with TOKEN=zzz" },
      });
      assert.deepEqual(r.metadata, {
        GITHUB_TOKEN: REDACTED,
        db_password: REDACTED,
        note: `uses OPENAI_API_KEY=${REDACTED}`,
        author: "carol",
        SESSION_SECRET: REDACTED,
      });
      assert.equal(r.breakdown["env.API_SECRET"]?.value, REDACTED);
      assert.equal(r.breakdown["env.API_SECRET"]?.hash, "v1:aaaaaaaaaaaaaaaa");
      assert.equal(r.breakdown["env.LOG_LEVEL"]?.value, "info");
      assert.equal(r.breakdown.command?.value, `agent --x AUTH_TOKEN=${REDACTED}`);
      assert.equal(r.lastError, `start failed: AWS_SECRET_ACCESS_KEY=${REDACTED} rejected`);
      assert.equal(r.quarantineReason, `crash loop, PASSWORD=${REDACTED} seen`);
      assert.deepEqual(r.pending?.detail, { API_KEY: REDACTED, why: "drift" });
      assert.equal(r.stateReason, `restart with TOKEN=${REDACTED}`);
      assert.deepEqual(await s.get("r"), r);
      const [ev] = await s.queryEvents({ types: ["session.state"] });
      assert.equal(ev?.payload.reason, `restart with TOKEN=${REDACTED}`);
    },
  },
  {
    id: "redaction.waits",
    title: "createWait/resolveWait: secrets in condition, note and result are redacted",
    async run(ctx) {
      const s = await ctx.open();
      const w = await s.createWait({
        session: "s",
        kind: "match",
        condition: { regex: "x", headers: { authorization: "Bearer abc" } },
        note: "check with SLACK_TOKEN=xoxb",
      });
      assert.deepEqual(w.condition, { regex: "x", headers: { authorization: REDACTED } });
      assert.equal(w.note, `check with SLACK_TOKEN=${REDACTED}`);
      const r = await s.cancelWait(w.id, "reset; CREDENTIALS=abc");
      assert.equal(r?.wait.reason, `reset; CREDENTIALS=${REDACTED}`);
    },
  },
  {
    id: "close.rejects-after",
    title: "close: idempotent; every later call rejects with StoreError",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "c");
      await s.close();
      await s.close();
      await rejectsCode(s.get("c"), "GC_STORE", "get after close");
      await rejectsCode(s.list(), "GC_STORE", "list after close");
      await rejectsCode(make(s, "d"), "GC_STORE", "create after close");
      await rejectsCode(s.appendEvent({ type: "x" }), "GC_STORE", "event after close");
      await rejectsCode(s.tryLock("c"), "GC_STORE", "lock after close");
      const other = await ctx.open();
      assert.ok(await other.get("c"), "the data survives close");
    },
  },
  {
    id: "lifecycle.walk",
    title: "update: a full life (start, crash, backoff, quarantine, reset, suspend, drain, stop, restart)",
    async run(ctx) {
      const s = await ctx.open();
      await make(s, "life");
      const path: LifecycleState[] = [
        "starting",
        "crashed",
        "backoff",
        "starting",
        "running",
        "crashed",
        "backoff",
        "quarantined",
        "pending",
        "suspended",
        "pending",
        "starting",
        "running",
        "draining",
        "stopped",
        "starting",
        "running",
        "stopped",
        "pending",
        "stopped",
      ];
      for (const to of path) await go(s, "life", to, `go ${to}`);
      const evs = await s.queryEvents({ session: "life", types: ["session.state"] });
      assert.deepEqual(
        evs.map((e) => e.payload.to),
        path,
      );
      const r = await s.get("life");
      assert.equal(r?.generation, path.filter((p) => p === "starting").length);
      assert.equal(r?.version, path.length + 1);
      for (const st of LIFECYCLE_STATES) assert.ok(path.includes(st), `walk visits ${st}`);
    },
  },
];

/** Every store conformance case. */
export const STORE_CASES: readonly StoreCase[] = Object.freeze([
  ...records,
  ...history,
  ...events,
  ...waits,
  ...nudges,
  ...locks,
  ...isolation,
  ...misc,
]);
