/**
 * Provider conformance cases, as data: stop: idempotent, exact names, the whole process tree,
 * concurrent stops, a program that exits by itself, its exit status. One group of
 * `PROVIDER_CASES` (../provider-cases.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { supportsExitStatus } from "../../internal/runtime/provider.js";
import type { ConformanceCase } from "./case.js";
import { armed, assertGone, running } from "./checks.js";
import { EXIT_ON_INT, LONG } from "./programs.js";

export const STOPPING_CASES: ConformanceCase[] = [
  {
    id: "stop.not-running",
    title: "stop: the session is not running afterwards",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.stop(name);
      await assertGone(ctx, name);
    },
  },
  {
    id: "stop.never-started",
    title: "stop: idempotent when never started",
    async run(ctx) {
      await ctx.provider.stop(ctx.newName("never"));
    },
  },
  {
    id: "stop.twice",
    title: "stop: idempotent when already stopped",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.stop(name);
      await ctx.provider.stop(name);
      await assertGone(ctx, name);
    },
  },
  {
    id: "stop.tree",
    title: "stop: kills the whole process tree, including a grandchild that ignores SIGHUP",
    requires: ["executes", "pidAlive"],
    async run(ctx) {
      const { name, cfg } = await running(
        ctx,
        "(trap '' HUP; exec sleep 1000) & echo $! > child.pid; exec sleep 300",
      );
      // The shell creates child.pid before it writes it: wait for the whole line, not the file.
      const pidText = await ctx.eventually("child.pid", async () => {
        const text = await ctx.read(name, cfg, "child.pid");
        return text?.endsWith("\n") ? text.trim() : undefined;
      });
      const pid = Number(pidText);
      assert.ok(pid > 0, `child pid ${pidText}`);
      assert.equal(await ctx.target.pidAlive!(name, pid), true, "grandchild alive before stop");
      await ctx.provider.stop(name);
      await ctx.eventually(
        "the grandchild to die",
        async () => !(await ctx.target.pidAlive!(name, pid)),
        5_000,
      );
    },
  },
  {
    id: "stop.exact-name",
    title: "stop: a session whose name starts with the stopped name survives",
    async run(ctx) {
      const { name } = await running(ctx);
      const longer = `${name}-tail`;
      await ctx.start(longer, await ctx.config(LONG));
      await ctx.provider.stop(name);
      assert.equal(await ctx.provider.isRunning(name), false);
      assert.equal(await ctx.provider.isRunning(longer), true, "the longer name must survive");
    },
  },
  {
    id: "stop.concurrent",
    title: "stop: three concurrent stops of distinct sessions all complete",
    async run(ctx) {
      const names = await Promise.all([0, 1, 2].map(async () => (await running(ctx)).name));
      await Promise.all(names.map((n) => ctx.provider.stop(n)));
      for (const n of names) assert.equal(await ctx.provider.isRunning(n), false);
    },
  },
  {
    id: "stop.self-exit",
    title: "isRunning: false (and not listed) once the program exits by itself; the name is reusable",
    requires: ["executes"],
    async run(ctx) {
      // The program ends when told (its SIGINT trap exits), never on a timer: a start slower
      // than a fixed lifetime (a loaded host) would make it die "during startup" instead.
      const { name, cfg } = await running(ctx, EXIT_ON_INT);
      await armed(ctx, name, cfg);
      await ctx.provider.interrupt(name);
      await ctx.eventually("the program to exit", async () => !(await ctx.provider.isRunning(name)), 15_000);
      await assertGone(ctx, name);
      await ctx.start(name, await ctx.config(LONG));
      assert.equal(await ctx.provider.isRunning(name), true);
    },
  },
  {
    id: "exit.status",
    title: "lastExit: reports the exit code of a program that ended",
    requires: ["executes", "exitStatus", "copyTo"],
    async run(ctx) {
      // The program ends when told (a file copied into its work dir), never on a timer: a
      // start slower than a fixed lifetime (a pod under load) must not make it die "during
      // startup".
      const { name } = await running(ctx, "until [ -e gc-exit-now ]; do sleep 0.1; done; exit 7");
      const p = ctx.provider;
      assert.ok(supportsExitStatus(p), "exitStatus capability without lastExit()");
      const go = join(await ctx.localDir(), "gc-exit-now");
      await writeFile(go, "");
      await p.copyTo(name, go, "gc-exit-now");
      const st = await ctx.eventually("an exit status", async () => p.lastExit(name), 15_000);
      assert.equal(st.code, 7);
      assert.equal(await p.lastExit(ctx.newName("missing")), undefined);
    },
  },
];
