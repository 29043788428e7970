/**
 * Store conformance cases, as data: the event log: append and query (filters), redaction,
 * invalid events, prune, trim. One group of `STORE_CASES` (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { REDACTED } from "../../internal/session/redact.js";
import { CLOCK_START, type StoreCase } from "./case.js";
import { rejectsCode, rejectsType } from "./checks.js";

export const EVENTS_CASES: StoreCase[] = [
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
