/**
 * Store conformance cases, as data: waits: create, settle once, races, expiry when due,
 * listing. One group of `STORE_CASES` (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { REDACTED } from "../../internal/session/redact.js";
import { CLOCK_START, type StoreCase } from "./case.js";
import { rejectsCode, rejectsType } from "./checks.js";

export const WAITS_CASES: StoreCase[] = [
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
