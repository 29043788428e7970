/**
 * Provider conformance cases, as data: activity, copyTo, runLive, waitForIdle, attach,
 * capabilities, and exec into the session (timeouts and aborts kill the command, keep its
 * output). One group of `PROVIDER_CASES` (../provider-cases.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { capturedOutputOf, isGcError } from "../../internal/base/errors.js";
import {
  supportsExecCommand,
  supportsExitStatus,
  supportsIdleWait,
  supportsInteraction,
} from "../../internal/runtime/provider.js";
import type { ConformanceCase } from "./case.js";
import { fileEquals, rejectsWith, running, treeGone, treePids } from "./checks.js";
import { CUT_ERR, CUT_OUT, EXEC_PRINT, EXEC_TREE, LONG, PID_LONG } from "./programs.js";

export const OBSERVATION_CASES: ConformanceCase[] = [
  {
    id: "activity.moves",
    title: "getLastActivity: moves forward after output",
    requires: ["executes", "activity"],
    protocol: 2,
    async run(ctx) {
      const { name } = await running(ctx, "exec cat");
      const t1 = await ctx.eventually("a first activity time", () => ctx.provider.getLastActivity(name));
      await sleep(ctx.ms(1_100));
      await ctx.provider.nudge(name, "make some output");
      await ctx.eventually("activity to move forward", async () => {
        const t2 = await ctx.provider.getLastActivity(name);
        return t2 !== undefined && t2.getTime() > t1.getTime();
      });
    },
  },
  {
    id: "activity.missing",
    title: "getLastActivity: undefined for a missing session",
    async run(ctx) {
      assert.equal(await ctx.provider.getLastActivity(ctx.newName("missing")), undefined);
    },
  },
  {
    id: "copyTo.file",
    title: "copyTo: places a file under the work dir",
    requires: ["copyTo"],
    async run(ctx) {
      const dir = await ctx.localDir();
      const src = join(dir, "src.txt");
      await writeFile(src, "copied content ✓\n");
      const { name, cfg } = await running(ctx);
      await ctx.provider.copyTo(name, src, "sub/dst.txt");
      assert.equal(await ctx.read(name, cfg, "sub/dst.txt"), "copied content ✓\n");
    },
  },
  {
    id: "copyTo.dir",
    title: "copyTo: copies a directory tree",
    requires: ["copyTo"],
    async run(ctx) {
      const dir = await ctx.localDir();
      await mkdir(join(dir, "tree", "inner"), { recursive: true });
      await writeFile(join(dir, "tree", "a.txt"), "A");
      await writeFile(join(dir, "tree", "inner", "b.txt"), "B");
      const { name, cfg } = await running(ctx);
      await ctx.provider.copyTo(name, join(dir, "tree"), "copied");
      assert.equal(await ctx.read(name, cfg, "copied/a.txt"), "A");
      assert.equal(await ctx.read(name, cfg, "copied/inner/b.txt"), "B");
    },
  },
  {
    id: "copyTo.missing",
    title: "copyTo: resolves when the source or the session is missing",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.copyTo(name, "/nonexistent-path-for-gc-conformance", "x");
      await ctx.provider.copyTo(ctx.newName("missing"), "/etc/hostname", "x");
    },
  },
  {
    id: "runLive.no-restart",
    title: "runLive: runs session_live without restarting the program",
    requires: ["executes", "runLive"],
    protocol: 2,
    async run(ctx) {
      const { name, cfg } = await running(ctx, PID_LONG);
      // A complete pid line: the shell creates pid.out before it writes it, and reading the
      // empty file in between used to pass "" on as the pid ("the program was restarted").
      const pid = await ctx.eventually("pid.out", async () => {
        const text = await ctx.read(name, cfg, "pid.out");
        return text?.endsWith("\n") ? text.trim() : undefined;
      });
      await ctx.provider.runLive(name, { ...cfg, sessionLive: ["echo again >> live.out"] });
      await fileEquals(ctx, name, cfg, "live.out", "again\n");
      assert.equal((await ctx.read(name, cfg, "pid.out"))?.trim(), pid, "the program was restarted");
      assert.equal(await ctx.provider.isRunning(name), true);
      if (ctx.target.pidAlive) assert.equal(await ctx.target.pidAlive(name, Number(pid)), true);
    },
  },
  {
    id: "runLive.missing",
    title: "runLive: resolves for a missing session",
    async run(ctx) {
      const cfg = await ctx.config(LONG, { sessionLive: ["true"] });
      await ctx.provider.runLive(ctx.newName("missing"), cfg);
    },
  },
  {
    id: "waitForIdle.bounded",
    title: "waitForIdle: a busy program returns within its bound",
    requires: ["executes", "idleWait"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsIdleWait(p), "idleWait capability without waitForIdle()");
      const { name } = await running(ctx, "while :; do echo busy; sleep 0.1; done");
      const t0 = Date.now();
      const r = await p.waitForIdle(name, 1_500);
      const took = Date.now() - t0;
      assert.ok(r === "timeout" || r === "idle", `result ${r}`);
      assert.ok(took < 1_500 + ctx.ms(5_000), `waitForIdle(1500) took ${took} ms`);
    },
  },
  {
    id: "waitForIdle.quiet",
    title: "waitForIdle: a quiet program is idle",
    requires: ["executes", "idleWait"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsIdleWait(p));
      const { name } = await running(ctx, "printf 'idle> '; exec cat", { readyPromptPrefix: "idle> " });
      assert.equal(await p.waitForIdle(name, ctx.ms(15_000)), "idle");
    },
  },
  {
    id: "waitForIdle.missing",
    title: "waitForIdle: gone for a missing session",
    requires: ["idleWait"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsIdleWait(p));
      assert.equal(await p.waitForIdle(ctx.newName("missing"), 1_000), "gone");
    },
  },
  {
    id: "isAttached.nobody",
    title: "isAttached: false when nobody is attached and for a missing session",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(await ctx.provider.isAttached(name), false);
      assert.equal(await ctx.provider.isAttached(ctx.newName("missing")), false);
    },
  },
  {
    id: "attach.unsupported",
    title: "attach: rejects with UnsupportedError when the provider cannot attach",
    async run(ctx) {
      if (ctx.provider.capabilities().attach) return; // exercised by the provider's own pty test
      const { name } = await running(ctx);
      await rejectsWith(ctx.provider.attach(name), "GC_UNSUPPORTED", "attach");
    },
  },
  {
    id: "capabilities.shape",
    title: "capabilities: every flag is a boolean and optional interfaces match them",
    async run(ctx) {
      const caps = ctx.provider.capabilities();
      for (const [k, v] of Object.entries(caps)) assert.equal(typeof v, "boolean", k);
      if (caps.idleWait) assert.ok(supportsIdleWait(ctx.provider), "idleWait without waitForIdle");
      if (caps.exitStatus) assert.ok(supportsExitStatus(ctx.provider), "exitStatus without lastExit");
      if (caps.exec) assert.ok(supportsExecCommand(ctx.provider), "exec without execCommand");
      if (caps.interaction)
        assert.ok(supportsInteraction(ctx.provider), "interaction without pending/respond");
    },
  },
  {
    id: "exec.command",
    title: "execCommand: runs argv in the session's work dir and returns exit code and output",
    requires: ["executes", "exec"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsExecCommand(p));
      const { name, cfg } = await running(ctx);
      const r = await p.execCommand(name, ["sh", "-c", 'pwd; printf "%s" "$1" >&2; exit 3', "x", "a'b $(c)"]);
      assert.equal(r.exitCode, 3);
      assert.equal(r.stdout.trim(), cfg.workDir);
      assert.equal(r.stderr, "a'b $(c)");
      await rejectsWith(
        p.execCommand(ctx.newName("missing"), ["true"]),
        "GC_SESSION_NOT_FOUND",
        "execCommand",
      );
    },
  },
  {
    id: "exec.timeout-kills",
    title: "execCommand: past timeoutMs it rejects with GC_TIMEOUT and the command and its child are killed",
    requires: ["executes", "exec"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsExecCommand(p));
      const { name } = await running(ctx);
      const file = "exec-timeout.pids";
      await rejectsWith(
        p.execCommand(name, ["sh", "-c", EXEC_TREE, "gc-tree", file], { timeoutMs: ctx.ms(5_000) }),
        "GC_TIMEOUT",
        "execCommand",
      );
      const pids = await treePids(p, name, file);
      assert.ok(pids, `the command wrote no pids to ${file} before its timeout`);
      await treeGone(ctx, p, name, pids);
    },
  },
  {
    id: "exec.abort-kills",
    title:
      "execCommand: an abort rejects with the signal's reason and kills the command and its child (SIGTERM ignored)",
    requires: ["executes", "exec"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsExecCommand(p));
      const { name } = await running(ctx);
      const file = "exec-abort.pids";
      const ac = new AbortController();
      const reason = new Error("conformance-abort");
      const outcome = p
        .execCommand(name, ["sh", "-c", EXEC_TREE, "gc-tree", file, "stubborn"], {
          signal: ac.signal,
          timeoutMs: 600_000,
        })
        .then(
          (r) => ({ resolved: r }),
          (e: unknown) => ({ rejected: e }),
        );
      ctx.defer(() => ac.abort(reason));
      const pids = await ctx.eventually(`the command to write ${file}`, () => treePids(p, name, file));
      ac.abort(reason);
      const o = await outcome;
      assert.ok(
        "rejected" in o && o.rejected === reason,
        `execCommand must reject with the reason: ${String(Object.values(o)[0])}`,
      );
      await treeGone(ctx, p, name, pids);
    },
  },
  {
    id: "exec.timeout-keeps-output",
    title:
      "execCommand: the GC_TIMEOUT error carries the stdout and stderr printed before the timeout, verbatim",
    requires: ["executes", "exec"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsExecCommand(p));
      const { name } = await running(ctx);
      const file = "exec-cut-timeout.ready";
      let err: unknown;
      try {
        await p.execCommand(name, ["sh", "-c", EXEC_PRINT, "gc-print", CUT_OUT, CUT_ERR, file], {
          timeoutMs: ctx.ms(5_000),
        });
      } catch (e) {
        err = e;
      }
      assert.ok(isGcError(err, "GC_TIMEOUT"), `execCommand: expected GC_TIMEOUT, got ${String(err)}`);
      const printed = await p.execCommand(name, ["test", "-e", file]);
      assert.equal(printed.exitCode, 0, `the command had not printed (no ${file}) before its timeout`);
      assert.deepEqual(capturedOutputOf(err), { stdout: CUT_OUT, stderr: CUT_ERR });
    },
  },
  {
    id: "exec.abort-keeps-output",
    title:
      "execCommand: the abort reason it rejects with carries the stdout and stderr printed before the abort",
    requires: ["executes", "exec"],
    async run(ctx) {
      const p = ctx.provider;
      assert.ok(supportsExecCommand(p));
      const { name } = await running(ctx);
      const file = "exec-cut-abort.ready";
      const ac = new AbortController();
      const reason = new Error("conformance-abort");
      const outcome = p
        .execCommand(name, ["sh", "-c", EXEC_PRINT, "gc-print", CUT_OUT, CUT_ERR, file], {
          signal: ac.signal,
          timeoutMs: 600_000,
        })
        .then(
          (r) => ({ resolved: r }),
          (e: unknown) => ({ rejected: e }),
        );
      ctx.defer(() => ac.abort(reason));
      await ctx.eventually(
        `the command to print and create ${file}`,
        async () => (await p.execCommand(name, ["test", "-e", file])).exitCode === 0,
      );
      ac.abort(reason);
      const o = await outcome;
      assert.ok(
        "rejected" in o && o.rejected === reason,
        `execCommand must reject with the reason: ${String(Object.values(o)[0])}`,
      );
      assert.deepEqual(capturedOutputOf(reason), { stdout: CUT_OUT, stderr: CUT_ERR });
    },
  },
];
