/**
 * Store conformance cases, as data: session locks: tryLock, synchronize (serialized, result,
 * abort, timeout, waiting), dead, reused and planted pids, other hosts, release on close. One
 * group of `STORE_CASES` (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { isGcError } from "../../internal/base/errors.js";
import { processStartTime } from "../../internal/session/lock.js";
import type { LockHolder } from "../../internal/session/store.js";
import { CLOCK_START, type StoreCase } from "./case.js";
import { deadPid, holder, rejectsCode } from "./checks.js";

export const LOCKS_CASES: StoreCase[] = [
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
