/**
 * Store conformance cases, as data: a session's history: append with an expected count,
 * transient entries, races, checkpoint, read ranges, redaction. One group of `STORE_CASES`
 * (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { REDACTED } from "../../internal/session/redact.js";
import type { StoreCase } from "./case.js";
import { make, rejectsCode } from "./checks.js";

export const HISTORY_CASES: StoreCase[] = [
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
