/**
 * Store conformance cases, as data: redaction of records and waits, a closed store, a walk
 * through every lifecycle state. One group of `STORE_CASES` (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { LIFECYCLE_STATES, type LifecycleState } from "../../internal/session/lifecycle.js";
import { REDACTED } from "../../internal/session/redact.js";
import type { StoreCase } from "./case.js";
import { go, make, rejectsCode } from "./checks.js";

export const MISC_CASES: StoreCase[] = [
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
