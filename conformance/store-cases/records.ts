/**
 * Store conformance cases, as data: session records: create, get, list, compare-and-set update,
 * metadata merge, transitions, generation, races, delete, recreate. One group of `STORE_CASES`
 * (../store.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { isGcError } from "../../internal/base/errors.js";
import { type LifecycleState, TRANSITION_RULES } from "../../internal/session/lifecycle.js";
import { casUpdate, type SessionRecord } from "../../internal/session/store.js";
import { CLOCK_START, type StoreCase } from "./case.js";
import { go, make, rejectsCode, rejectsType, session } from "./checks.js";

export const RECORDS_CASES: StoreCase[] = [
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
    id: "records.create-then",
    title: "create with then: the record and events of a create and its first update, in one write",
    async run(ctx) {
      const s = await ctx.open();
      const then = {
        restarts: 0,
        pending: { action: "start", at: CLOCK_START, generation: 0 },
        transition: { to: "starting" as const, reason: "new session" },
      };
      const one = await s.create(session("one"), then);
      await make(s, "two");
      const two = await s.update("two", 1, then);
      const { name: _n1, ...oneRest } = one;
      const { name: _n2, ...twoRest } = two;
      assert.deepEqual(oneRest, twoRest);
      assert.equal(one.version, 2);
      assert.equal(one.state, "starting");
      assert.deepEqual(await s.get("one"), one);
      const evs = async (name: string) =>
        (await s.queryEvents({ session: name })).map((e) => ({ type: e.type, at: e.at, payload: e.payload }));
      assert.deepEqual(await evs("one"), await evs("two"));
      assert.deepEqual(
        (await evs("one")).map((e) => e.type),
        ["session.created", "session.state"],
      );
      // An update the new record refuses creates nothing; a taken name changes nothing.
      await rejectsCode(
        s.create(session("three"), { transition: { to: "running", reason: "x" } }),
        "GC_ILLEGAL_TRANSITION",
        "pending → running",
      );
      assert.equal(await s.get("three"), undefined);
      assert.deepEqual(await s.queryEvents({ session: "three" }), []);
      await rejectsCode(s.create(session("one"), then), "GC_SESSION_EXISTS", "second create");
      assert.deepEqual(await s.get("one"), one);
      assert.equal((await s.queryEvents({ session: "one" })).length, 2);
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
