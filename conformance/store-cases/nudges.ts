/**
 * Store conformance cases, as data: the nudge queue: enqueue, FIFO claims, not-before,
 * complete, fail and retry to dead letter, TTL, leases, claim races, listing. One group of
 * `STORE_CASES` (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { DEFAULT_NUDGE_MAX_ATTEMPTS, DEFAULT_NUDGE_TTL_MS } from "../../internal/session/store.js";
import { CLOCK_START, type StoreCase } from "./case.js";
import { rejectsCode, rejectsType } from "./checks.js";

export const NUDGES_CASES: StoreCase[] = [
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
