/**
 * Provider conformance cases, as data: isRunning, listRunning (prefixes, stopped and foreign
 * sessions) and processAlive. One group of `PROVIDER_CASES` (../provider-cases.ts), kept as one
 * table.
 */
import assert from "node:assert/strict";
import type { ConformanceCase } from "./case.js";
import { running } from "./checks.js";
import { LONG } from "./programs.js";

export const DISCOVERY_CASES: ConformanceCase[] = [
  {
    id: "isRunning.unknown",
    title: "isRunning: false for an unknown session",
    async run(ctx) {
      assert.equal(await ctx.provider.isRunning(ctx.newName("unknown")), false);
    },
  },
  {
    id: "isRunning.concurrent",
    title: "isRunning: concurrent calls on three sessions are all true",
    async run(ctx) {
      const names = await Promise.all([0, 1, 2].map(async () => (await running(ctx)).name));
      assert.deepEqual(await Promise.all(names.map((n) => ctx.provider.isRunning(n))), [true, true, true]);
    },
  },
  {
    id: "listRunning.prefix",
    title: "listRunning: the prefix filter is exact",
    async run(ctx) {
      const a = (await running(ctx)).name;
      const b = (await running(ctx)).name;
      const onlyA = await ctx.provider.listRunning(a);
      assert.ok(onlyA.includes(a));
      assert.ok(!onlyA.includes(b));
      for (const n of onlyA) assert.ok(n.startsWith(a), `${n} does not start with ${a}`);
      const both = await ctx.provider.listRunning(ctx.target.namePrefix);
      assert.ok(both.includes(a) && both.includes(b));
    },
  },
  {
    id: "listRunning.empty-prefix",
    title: "listRunning: an empty prefix lists all of ours",
    async run(ctx) {
      const a = (await running(ctx)).name;
      const b = (await running(ctx)).name;
      const all = await ctx.provider.listRunning("");
      assert.ok(all.includes(a) && all.includes(b));
      assert.equal(new Set(all).size, all.length, "no duplicates");
    },
  },
  {
    id: "listRunning.excludes-stopped",
    title: "listRunning: excludes stopped sessions",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.stop(name);
      assert.ok(!(await ctx.provider.listRunning("")).includes(name));
    },
  },
  {
    id: "listRunning.foreign",
    title: "listRunning: never lists a foreign session on the same backend, and stop never touches it",
    requires: ["foreign"],
    async run(ctx) {
      const foreign = ctx.newName("foreign");
      const cleanup = await ctx.target.createForeign!(foreign);
      ctx.defer(cleanup);
      const ours = (await running(ctx)).name;
      const all = await ctx.provider.listRunning("");
      assert.ok(all.includes(ours));
      assert.ok(!all.includes(foreign), "a foreign session was listed");
      assert.ok(!(await ctx.provider.listRunning(foreign)).includes(foreign));
    },
  },
  {
    id: "listRunning.concurrent",
    title: "listRunning: concurrent calls with distinct prefixes each see their session",
    async run(ctx) {
      const names = await Promise.all([0, 1, 2].map(async () => (await running(ctx)).name));
      const lists = await Promise.all(names.map((n) => ctx.provider.listRunning(n)));
      for (const [i, l] of lists.entries()) assert.ok(l.includes(names[i]!));
    },
  },
  {
    id: "processAlive.empty",
    title: "processAlive: true for an empty name list",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(await ctx.provider.processAlive(name, []), true);
    },
  },
  {
    id: "processAlive.real-name",
    title: "processAlive: true for the real program name",
    requires: ["executes", "processNames"],
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.eventually("sleep in the process tree", () => ctx.provider.processAlive(name, ["sleep"]));
    },
  },
  {
    id: "processAlive.bogus",
    title: "processAlive: false for a name that is not running",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(await ctx.provider.processAlive(name, ["gc-no-such-program-xyz"]), false);
    },
  },
  {
    id: "processAlive.after-stop",
    title: "processAlive: false after stop and for an unknown session",
    async run(ctx) {
      const { name } = await running(ctx, LONG, { processNames: ["sleep"] });
      await ctx.provider.stop(name);
      assert.equal(await ctx.provider.processAlive(name, ["sleep"]), false);
      assert.equal(await ctx.provider.processAlive(name, []), false);
      assert.equal(await ctx.provider.processAlive(ctx.newName("unknown"), []), false);
    },
  },
];
