/**
 * Store conformance cases, as data: tenancy: actors on one database see only their own records,
 * history, events, waits, nudges and locks; single-tenant stores. One group of `STORE_CASES`
 * (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { CLOCK_START, type StoreCase } from "./case.js";
import { make, rejectsCode, rejectsType } from "./checks.js";

export const ISOLATION_CASES: StoreCase[] = [
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
