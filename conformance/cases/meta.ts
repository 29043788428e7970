/**
 * Provider conformance cases, as data: session metadata: round trip, unset, overwrite, hostile
 * values, invalid keys, cleared by stop. One group of `PROVIDER_CASES` (../provider-cases.ts),
 * kept as one table.
 */
import assert from "node:assert/strict";
import type { ConformanceCase } from "./case.js";
import { rejectsWith, running } from "./checks.js";
import { HOSTILE_META } from "./programs.js";

export const META_CASES: ConformanceCase[] = [
  {
    id: "meta.round-trip",
    title: "setMeta: a value round-trips",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.setMeta(name, "conf-key", "conf-value");
      assert.equal(await ctx.provider.getMeta(name, "conf-key"), "conf-value");
    },
  },
  {
    id: "meta.unset",
    title: "getMeta: undefined for an unset key",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(await ctx.provider.getMeta(name, "never-set"), undefined);
    },
  },
  {
    id: "meta.overwrite",
    title: "setMeta: overwrites the previous value",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.setMeta(name, "k", "v1");
      await ctx.provider.setMeta(name, "k", "v2");
      assert.equal(await ctx.provider.getMeta(name, "k"), "v2");
    },
  },
  {
    id: "meta.remove",
    title: "removeMeta: the key reads undefined afterwards; removing an unset key resolves",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.setMeta(name, "k", "v");
      await ctx.provider.removeMeta(name, "k");
      assert.equal(await ctx.provider.getMeta(name, "k"), undefined);
      await ctx.provider.removeMeta(name, "never-set");
    },
  },
  {
    id: "meta.several",
    title: "setMeta: several keys are independent",
    async run(ctx) {
      const { name } = await running(ctx);
      await Promise.all(["a", "b", "c"].map((k) => ctx.provider.setMeta(name, `key.${k}`, `value-${k}`)));
      for (const k of ["a", "b", "c"])
        assert.equal(await ctx.provider.getMeta(name, `key.${k}`), `value-${k}`);
      await ctx.provider.removeMeta(name, "key.b");
      assert.equal(await ctx.provider.getMeta(name, "key.a"), "value-a");
      assert.equal(await ctx.provider.getMeta(name, "key.c"), "value-c");
    },
  },
  {
    id: "meta.hostile-values",
    title: "setMeta: newlines, quotes, shell and tmux syntax, Unicode and 4 KB values round-trip exactly",
    async run(ctx) {
      const { name } = await running(ctx);
      for (const [i, v] of HOSTILE_META.entries()) {
        await ctx.provider.setMeta(name, `hostile${i}`, v);
        assert.equal(await ctx.provider.getMeta(name, `hostile${i}`), v, `value ${i}`);
      }
      await ctx.provider.setMeta(name, "empty", "");
      assert.equal(await ctx.provider.getMeta(name, "empty"), "", "empty string is a value, not unset");
    },
  },
  {
    id: "meta.invalid-key",
    title: "setMeta: an invalid key rejects with InvalidNameError",
    async run(ctx) {
      const { name } = await running(ctx);
      for (const k of ["", "a b", "a;b", "$(x)", "k\nv", "-x"]) {
        await rejectsWith(
          ctx.provider.setMeta(name, k, "v"),
          "GC_INVALID_NAME",
          `setMeta key ${JSON.stringify(k)}`,
        );
      }
    },
  },
  {
    id: "meta.missing-session",
    title: "getMeta/setMeta: reject with SessionNotFoundError for a missing session",
    async run(ctx) {
      const missing = ctx.newName("missing");
      await rejectsWith(ctx.provider.getMeta(missing, "k"), "GC_SESSION_NOT_FOUND", "getMeta");
      await rejectsWith(ctx.provider.setMeta(missing, "k", "v"), "GC_SESSION_NOT_FOUND", "setMeta");
      assert.equal(await ctx.provider.isRunning(missing), false, "setMeta must not create a session");
    },
  },
  {
    id: "meta.cleared-by-stop",
    title: "getMeta: metadata does not outlive the session",
    async run(ctx) {
      const { name, cfg } = await running(ctx);
      await ctx.provider.setMeta(name, "k", "old");
      await ctx.provider.stop(name);
      await ctx.start(name, cfg);
      assert.equal(await ctx.provider.getMeta(name, "k"), undefined);
    },
  },
];
