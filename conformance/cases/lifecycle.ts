/**
 * Provider conformance cases, as data: start: running, names, concurrency, abort, env and work
 * dir, prompt, readiness, hooks, staged files, timeouts, restart. One group of `PROVIDER_CASES`
 * (../provider-cases.ts), kept as one table.
 */
import assert from "node:assert/strict";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isGcError } from "../../internal/base/errors.js";
import type { ConformanceCase } from "./case.js";
import { assertGone, fileEquals, rejectsWith, running } from "./checks.js";
import { INVALID_NAMES, LONG, READER } from "./programs.js";

export const LIFECYCLE_CASES: ConformanceCase[] = [
  {
    id: "start.running",
    title: "start: the session is running afterwards",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(await ctx.provider.isRunning(name), true);
      assert.ok((await ctx.provider.listRunning(name)).includes(name));
    },
  },
  {
    id: "start.duplicate",
    title: "start: a duplicate rejects with SessionExistsError and the first survives",
    async run(ctx) {
      const { name, cfg } = await running(ctx);
      await rejectsWith(ctx.provider.start(name, cfg), "GC_SESSION_EXISTS", "second start");
      assert.equal(await ctx.provider.isRunning(name), true);
    },
  },
  {
    id: "start.duplicate-before-hooks",
    title: "start: a duplicate with a pre_start hook rejects with SessionExistsError before the hook runs",
    requires: ["executes"],
    async run(ctx) {
      const { name } = await running(ctx);
      const cfg = await ctx.config(LONG, { preStart: ["echo ran > pre-start.out"] });
      await rejectsWith(ctx.provider.start(name, cfg), "GC_SESSION_EXISTS", "second start");
      assert.equal(
        await ctx.read(name, cfg, "pre-start.out"),
        undefined,
        "pre_start ran beside the live session",
      );
      assert.equal(await ctx.provider.isRunning(name), true);
    },
  },
  {
    id: "start.same-name-race",
    title: "start: two concurrent starts of one name — exactly one wins",
    async run(ctx) {
      const name = ctx.newName();
      const cfg = await ctx.config(LONG);
      ctx.defer(() => ctx.provider.stop(name));
      const results = await Promise.allSettled([
        ctx.provider.start(name, cfg),
        ctx.provider.start(name, cfg),
      ]);
      const ok = results.filter((r) => r.status === "fulfilled").length;
      assert.equal(ok, 1, `exactly one start must win, got ${ok}`);
      const lost = results.find((r) => r.status === "rejected");
      assert.ok(lost && isGcError(lost.reason, "GC_SESSION_EXISTS"), `loser: ${String(lost?.reason)}`);
      assert.deepEqual(
        (await ctx.provider.listRunning(name)).filter((n) => n === name),
        [name],
      );
    },
  },
  {
    id: "start.name-prefix",
    title: "a name that is a prefix of a running session's name (w-2 / w-20) is its own, absent session",
    async run(ctx) {
      const short = ctx.newName();
      const long = `${short}0`;
      const cfg = await ctx.config(LONG);
      await ctx.start(long, cfg);
      await ctx.provider.setMeta(long, "conf-key", "long");
      assert.equal(await ctx.provider.isRunning(short), false, `${short} is not ${long}`);
      await rejectsWith(ctx.provider.getMeta(short, "conf-key"), "GC_SESSION_NOT_FOUND", "getMeta");
      await rejectsWith(ctx.provider.peek(short, 5), "GC_SESSION_NOT_FOUND", "peek");
      await ctx.provider.stop(short);
      assert.equal(await ctx.provider.isRunning(long), true, `stopping ${short} must leave ${long}`);
      await ctx.start(short, await ctx.config(LONG));
      assert.equal(await ctx.provider.isRunning(short), true);
      assert.equal(await ctx.provider.getMeta(short, "conf-key"), undefined);
      const listed = await ctx.provider.listRunning(short);
      assert.ok(listed.includes(short) && listed.includes(long), `both listed: ${listed.join(" ")}`);
    },
  },
  {
    id: "start.concurrent-8",
    title: "start: 8 concurrent distinct starts all run",
    async run(ctx) {
      const names = Array.from({ length: 8 }, () => ctx.newName());
      const cfgs = await Promise.all(names.map(() => ctx.config(LONG)));
      await Promise.all(names.map((n, i) => ctx.start(n, cfgs[i]!)));
      const listed = await ctx.provider.listRunning(ctx.target.namePrefix);
      for (const n of names) {
        assert.equal(await ctx.provider.isRunning(n), true, `${n} running`);
        assert.ok(listed.includes(n), `${n} listed`);
      }
    },
  },
  {
    id: "start.aborted",
    title: "start: an already-aborted signal rejects with its reason and leaves nothing",
    async run(ctx) {
      const name = ctx.newName();
      const cfg = await ctx.config(LONG);
      ctx.defer(() => ctx.provider.stop(name));
      const ac = new AbortController();
      const reason = new Error("conformance-abort");
      ac.abort(reason);
      await assert.rejects(ctx.provider.start(name, cfg, { signal: ac.signal }), (e) => e === reason);
      await assertGone(ctx, name);
    },
  },
  {
    id: "start.abort-during",
    title: "start: aborting during readiness rejects and leaves nothing",
    requires: ["executes"],
    async run(ctx) {
      const name = ctx.newName();
      const cfg = await ctx.config(LONG, { readyPromptPrefix: "NEVER-APPEARS> ", readyDelayMs: 30_000 });
      ctx.defer(() => ctx.provider.stop(name));
      const ac = new AbortController();
      const p = ctx.provider.start(name, cfg, { signal: ac.signal });
      await sleep(ctx.ms(500));
      ac.abort(new Error("conformance-abort-during"));
      await assert.rejects(p);
      await ctx.eventually(
        "the aborted session to be gone",
        async () => !(await ctx.provider.isRunning(name)),
      );
      await assertGone(ctx, name);
    },
  },
  {
    id: "start.invalid-names",
    title: "start: invalid or hostile names reject with InvalidNameError and create nothing",
    async run(ctx) {
      const cfg = await ctx.config(LONG);
      // Other cases may start sessions meanwhile, but only under the run's name prefix.
      const others = async () =>
        (await ctx.provider.listRunning("")).filter((n) => !n.startsWith(ctx.target.namePrefix)).sort();
      const before = await others();
      for (const bad of INVALID_NAMES) {
        await rejectsWith(ctx.provider.start(bad, cfg), "GC_INVALID_NAME", `start(${JSON.stringify(bad)})`);
      }
      assert.deepEqual(await others(), before, "an invalid name created (or mangled into) a session");
    },
  },
  {
    id: "start.env-workdir",
    title: "start: the program sees the declared env verbatim and runs in work_dir",
    requires: ["executes"],
    async run(ctx) {
      const value = `va'l"ue $(touch pwned) ; é \\ \`x\``;
      const { name, cfg } = await running(
        ctx,
        `printf '%s' "$GC_CONF_VAR" > env.out; pwd > pwd.out; printf '%s' "$GC_SESSION" > session.out; ${LONG}`,
        { env: { GC_CONF_VAR: value } },
      );
      await fileEquals(ctx, name, cfg, "env.out", value);
      await fileEquals(ctx, name, cfg, "pwd.out", `${cfg.workDir}\n`);
      await fileEquals(ctx, name, cfg, "session.out", name);
      assert.equal(await ctx.read(name, cfg, "pwned"), undefined, "env value was interpreted by a shell");
    },
  },
  {
    id: "start.prompt-argument",
    title: "start: the prompt arrives as one argument, never through a shell",
    requires: ["executes"],
    async run(ctx) {
      const prompt = `do "this"; $(touch pwned) 'now' \n second line #{session_name}`;
      const { name, cfg } = await running(
        ctx,
        `sh -c 'printf "%s" "$1" > prompt.out; exec sleep 300' gc-prompt`,
        {
          prompt,
        },
      );
      await fileEquals(ctx, name, cfg, "prompt.out", prompt);
      assert.equal(await ctx.read(name, cfg, "pwned"), undefined);
    },
  },
  {
    id: "start.prompt-flag",
    title: "start: prompt_flag is placed before the prompt",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(
        ctx,
        `sh -c 'printf "%s|%s" "$1" "$2" > prompt.out; exec sleep 300' gc-prompt`,
        { prompt: "the task", promptFlag: "--prompt" },
      );
      await fileEquals(ctx, name, cfg, "prompt.out", "--prompt|the task");
    },
  },
  {
    id: "start.ready-prompt",
    title: "start: resolves only after ready_prompt_prefix is on screen",
    requires: ["executes"],
    async run(ctx) {
      const { name } = await running(ctx, "sleep 1; printf 'RDY> '; exec cat", {
        readyPromptPrefix: "RDY> ",
      });
      const screen = await ctx.provider.peek(name, 0);
      assert.ok(screen.includes("RDY>"), `screen right after start: ${JSON.stringify(screen)}`);
    },
  },
  {
    id: "start.initial-nudge",
    title: "start: the configured nudge is delivered once the program is ready",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER, { nudge: "first nudge: begin" });
      await fileEquals(ctx, name, cfg, "nudge.out", "first nudge: begin\n");
    },
  },
  {
    id: "start.died",
    title:
      "start: a program that exits at once rejects with SessionDiedDuringStartupError and leaves nothing",
    requires: ["executes"],
    async run(ctx) {
      const name = ctx.newName();
      const cfg = await ctx.config("exit 3", { readyDelayMs: 1000 });
      ctx.defer(() => ctx.provider.stop(name));
      await rejectsWith(ctx.provider.start(name, cfg), "GC_DIED_DURING_STARTUP", "start of `exit 3`");
      await assertGone(ctx, name);
    },
  },
  {
    id: "start.pre-start-fails",
    title: "start: a failing pre_start aborts with HookFailedError and leaves nothing",
    requires: ["executes"],
    async run(ctx) {
      const name = ctx.newName();
      const cfg = await ctx.config("echo started > started.out; exec sleep 300", { preStart: ["exit 7"] });
      ctx.defer(() => ctx.provider.stop(name));
      await rejectsWith(ctx.provider.start(name, cfg), "GC_HOOK_FAILED", "start with failing pre_start");
      await assertGone(ctx, name);
      assert.equal(await ctx.read(name, cfg, "started.out"), undefined, "the program must never have run");
    },
  },
  {
    id: "start.overlay-copy-files",
    title: "start: overlay_dir contents and copy_files entries are in the work dir before the program runs",
    requires: ["executes"],
    async run(ctx) {
      const dir = await ctx.localDir();
      await mkdir(join(dir, "overlay", "sub"), { recursive: true });
      await writeFile(join(dir, "overlay", "a.txt"), "A");
      await writeFile(join(dir, "overlay", "sub", "b.txt"), "B");
      await writeFile(join(dir, "c.txt"), "C");
      await writeFile(join(dir, "d.txt"), "D");
      const { name, cfg } = await running(ctx, `cat a.txt sub/b.txt c.txt x/d2.txt > staged.out; ${LONG}`, {
        overlayDir: join(dir, "overlay"),
        copyFiles: [
          { src: join(dir, "c.txt"), relDst: "" },
          { src: join(dir, "d.txt"), relDst: "x/d2.txt" },
        ],
      });
      await fileEquals(ctx, name, cfg, "staged.out", "ABCD");
    },
  },
  {
    id: "start.copy-files-missing",
    title: "start: a missing copy_files source fails the start with GC_PROVIDER naming it; nothing runs",
    requires: ["executes"],
    async run(ctx) {
      const dir = await ctx.localDir();
      const name = ctx.newName();
      const missing = join(dir, "no-such-file.txt");
      const cfg = await ctx.config("echo started > started.out; exec sleep 300", {
        copyFiles: [{ src: missing, relDst: "" }],
      });
      ctx.defer(() => ctx.provider.stop(name));
      try {
        await ctx.provider.start(name, cfg);
        assert.fail("start with a missing copy_files source resolved");
      } catch (e) {
        assert.ok(isGcError(e, "GC_PROVIDER"), `expected GC_PROVIDER, got ${String(e)}`);
        assert.ok(String((e as Error).message).includes(missing), `the error names the source: ${String(e)}`);
      }
      await assertGone(ctx, name);
      assert.equal(await ctx.read(name, cfg, "started.out"), undefined, "the program must never have run");
    },
  },
  {
    id: "start.overlay-missing",
    title: "start: a missing overlay_dir fails the start with GC_PROVIDER; nothing runs",
    requires: ["executes"],
    async run(ctx) {
      const dir = await ctx.localDir();
      const name = ctx.newName();
      const cfg = await ctx.config("echo started > started.out; exec sleep 300", {
        overlayDir: join(dir, "no-such-dir"),
      });
      ctx.defer(() => ctx.provider.stop(name));
      await rejectsWith(ctx.provider.start(name, cfg), "GC_PROVIDER", "start with a missing overlay_dir");
      await assertGone(ctx, name);
      assert.equal(await ctx.read(name, cfg, "started.out"), undefined, "the program must never have run");
    },
  },
  {
    id: "start.env-not-inherited",
    title: "start: gc's own terminal variables (TMUX, COLUMNS, TERM_PROGRAM…) never reach the program",
    requires: ["executes"],
    async run(ctx) {
      const sentinel = { TMUX: "/tmp/gc-conf-not-inherited,1,0", COLUMNS: "7", TERM_PROGRAM: "gc-conf-term" };
      const saved = Object.fromEntries(Object.keys(sentinel).map((k) => [k, process.env[k]]));
      Object.assign(process.env, sentinel);
      ctx.defer(() => {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      });
      const { name, cfg } = await running(
        ctx,
        `printf '%s|%s|%s|%s' "$TMUX" "$COLUMNS" "$TERM_PROGRAM" "$GC_KEEP" > inh.out; ${LONG}`,
        { env: { GC_KEEP: "declared" } },
      );
      let seen = "";
      await ctx.eventually("inh.out to be written", async () => {
        seen = (await ctx.read(name, cfg, "inh.out")) ?? "";
        return seen.endsWith("|declared");
      });
      const [tmux, columns, termProgram] = seen.split("|");
      assert.notEqual(tmux, sentinel.TMUX, "TMUX was inherited");
      assert.notEqual(columns, sentinel.COLUMNS, "COLUMNS was inherited");
      assert.notEqual(termProgram, sentinel.TERM_PROGRAM, "TERM_PROGRAM was inherited");
    },
  },
  {
    id: "start.startup-timeout",
    title: "start: a start past startupTimeoutMs rejects with GC_TIMEOUT and leaves nothing",
    requires: ["executes"],
    async run(ctx) {
      const name = ctx.newName();
      const cfg = await ctx.config("echo started > started.out; exec sleep 300", {
        sessionSetup: ["sleep 60"],
        setupTimeoutMs: 120_000,
        startupTimeoutMs: 1_500,
      });
      ctx.defer(() => ctx.provider.stop(name));
      await rejectsWith(ctx.provider.start(name, cfg), "GC_TIMEOUT", "start past its deadline");
      await assertGone(ctx, name);
    },
  },
  {
    id: "start.hooks-order",
    title: "start: pre_start runs before the program; session_setup, setup script and session_live after",
    requires: ["executes"],
    async run(ctx) {
      const dir = await ctx.localDir();
      const script = join(dir, "setup.sh");
      await writeFile(script, '#!/bin/sh\nprintf "%s" "$GC_SESSION" > script.out\n');
      await chmod(script, 0o755);
      const { name, cfg } = await running(ctx, "cat pre.out > seen.out; exec sleep 300", {
        preStart: ["echo pre > pre.out"],
        sessionSetup: ["echo setup > setup.out"],
        sessionSetupScript: script,
        sessionLive: ["echo live >> live.out"],
      });
      await fileEquals(ctx, name, cfg, "seen.out", "pre\n");
      // start resolves only after setup, script and live ran: no polling for these.
      assert.equal(await ctx.read(name, cfg, "setup.out"), "setup\n");
      assert.equal(await ctx.read(name, cfg, "script.out"), name);
      assert.equal(await ctx.read(name, cfg, "live.out"), "live\n");
    },
  },
  {
    id: "start.restart-after-stop",
    title: "start: a name can be started again after stop",
    async run(ctx) {
      const { name, cfg } = await running(ctx);
      await ctx.provider.stop(name);
      await ctx.start(name, cfg);
      assert.equal(await ctx.provider.isRunning(name), true);
    },
  },
];
