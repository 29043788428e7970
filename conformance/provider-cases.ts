/**
 * The provider conformance cases, as data. Every provider (including a user's exec script)
 * must pass every case its capabilities admit. Session programs are POSIX sh so they run in
 * minimal containers too. Far stricter than the reference suite: errors are checked by
 * class/code, and effects are checked where the program can observe them.
 */
import assert from "node:assert/strict";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { capturedOutputOf, type GcErrorCode, isGcError } from "../internal/base/errors.js";
import {
  type CommandProvider,
  type StartConfig,
  supportsExecCommand,
  supportsExitStatus,
  supportsIdleWait,
  supportsInteraction,
} from "../internal/runtime/provider.js";
import { type CaseContext, CaseSkip, type ConformanceCase } from "./harness.js";

/** A program that runs until stopped and is named `sleep`. */
export const LONG = "exec sleep 300";
/** Reads its terminal line by line into `nudge.out`. */
const READER = "exec cat > nudge.out";
/**
 * Asks for bracketed paste, then appends each line it reads (a canonical-mode tty: one read
 * per Enter) to nudge.out, so where the paste brackets fall shows how a nudge was typed.
 */
const LINE_READER = `printf '\\033[?2004h'; while printf '> '; IFS= read -r l; do printf '%s\\n' "$l" >> nudge.out; done`;
/** Writes its pid, then becomes `sleep` (same pid). */
const PID_LONG = "echo $$ > pid.out; exec sleep 300";
/**
 * `sh -c EXEC_TREE gc-tree FILE [stubborn]`: starts a child `sleep`, writes its own pid and
 * the child's to FILE, and waits. With `stubborn` both ignore SIGTERM, so only SIGKILL ends them.
 */
export const EXEC_TREE = `[ "$2" = stubborn ] && trap '' TERM; sleep 1000 & echo "$$ $!" > "$1"; wait`;
/**
 * `sh -c EXEC_PRINT gc-print OUT ERR FILE`: prints OUT on stdout and ERR on stderr, then
 * creates FILE and runs until killed.
 */
export const EXEC_PRINT = `printf '%s' "$1"; printf '%s' "$2" >&2; : > "$3"; exec sleep 1000`;
/** What {@link EXEC_PRINT} prints before it is cut: quotes, `$(…)`, backquotes, unicode, lines. */
const CUT_OUT = "out: a'b\"c $(touch pwned) `id` ; | & ü ✓ 日本\nsecond line\n";
const CUT_ERR = "err: $HOME \\ 🙂 no newline";
/** `sh -c EXEC_ALIVE gc-alive PID…`: exit 0 when one of the pids is a live (not zombie) process, else 1. */
export const EXEC_ALIVE =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: POSIX sh parameter expansion
  'for p; do s=$(cat "/proc/$p/stat" 2>/dev/null) || continue; case "${s##*) }" in Z*) continue;; esac; exit 0; done; exit 1';
/** Records SIGINTs and keeps running; writes `armed.out` once its trap is set. */
const INT_TRAP = "trap 'echo INT >> int.out' INT; echo armed > armed.out; while :; do sleep 1; done";
/**
 * A full-screen program's way with keys: the terminal in raw mode (no signals from the line
 * discipline), `armed.out` written, then the first byte typed saved to `key.out`.
 */
const RAW_KEYS =
  "stty raw -echo; echo armed > armed.out; dd bs=1 count=1 2>/dev/null > key.out; exec sleep 300";
/** Runs until its first SIGINT, then exits 0 by itself; writes `armed.out` once its trap is set. */
const EXIT_ON_INT = "trap 'exit 0' INT; echo armed > armed.out; while :; do sleep 1; done";

async function rejectsWith(p: Promise<unknown>, code: GcErrorCode, what: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (isGcError(e, code)) return;
    throw new assert.AssertionError({ message: `${what}: expected ${code}, got ${String(e)}` });
  }
  throw new assert.AssertionError({ message: `${what}: expected rejection with ${code}, but it resolved` });
}

async function assertGone(ctx: CaseContext, name: string): Promise<void> {
  assert.equal(await ctx.provider.isRunning(name), false, `${name} must not be running`);
  const listed = await ctx.provider.listRunning(ctx.target.namePrefix);
  assert.ok(!listed.includes(name), `${name} must not be listed`);
}

/**
 * Waits until the program of `name` wrote `armed.out` ({@link INT_TRAP}, {@link EXIT_ON_INT}):
 * its SIGINT trap is set. A program still starting (a loaded host) would otherwise die of a
 * SIGINT sent before its trap exists.
 */
async function armed(ctx: CaseContext, name: string, cfg: StartConfig): Promise<void> {
  await fileEquals(ctx, name, cfg, "armed.out", "armed\n");
}

async function running(ctx: CaseContext, command = LONG, extra?: Partial<StartConfig>) {
  const name = ctx.newName();
  const cfg = await ctx.config(command, extra);
  await ctx.start(name, cfg);
  return { name, cfg };
}

async function fileEquals(ctx: CaseContext, name: string, cfg: StartConfig, rel: string, want: string) {
  let last: string | undefined;
  try {
    await ctx.eventually(`${rel} to equal the expected text`, async () => {
      last = await ctx.read(name, cfg, rel);
      return last === want;
    });
  } catch (e) {
    if (e instanceof CaseSkip) throw e;
    const show = (s: string | undefined) =>
      s === undefined ? "(absent)" : JSON.stringify(s.length > 200 ? `${s.slice(0, 200)}…(${s.length})` : s);
    throw new assert.AssertionError({
      message: `${rel}: want ${show(want)}, got ${show(last)} (${String(e)})`,
    });
  }
}

/** The two pids an {@link EXEC_TREE} command wrote to `file` (read with a second exec), or `undefined`. */
async function treePids(p: CommandProvider, name: string, file: string): Promise<string[] | undefined> {
  const r = await p.execCommand(name, ["cat", file]);
  const pids = r.stdout.trim().split(" ");
  return r.exitCode === 0 && pids.length === 2 && pids.every((x) => /^[1-9][0-9]*$/.test(x))
    ? pids
    : undefined;
}

/** Polls (with a second exec) until none of `pids` is a live process in the session's environment. */
async function treeGone(ctx: CaseContext, p: CommandProvider, name: string, pids: readonly string[]) {
  await ctx.eventually(`the command and its child (${pids.join(" ")}) to be gone`, async () => {
    const r = await p.execCommand(name, ["sh", "-c", EXEC_ALIVE, "gc-alive", ...pids]);
    return r.exitCode === 1;
  });
}

const BIG_LINE = "0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ_αβγδ".repeat(14);
const BIG_TEXT = Array.from({ length: 100 }, (_, i) =>
  `${String(i).padStart(3, "0")} ${BIG_LINE}`.slice(0, 1000),
).join("\n");

/** Hostile and awkward nudge texts: each must arrive byte for byte. */
export const NUDGE_TEXTS: readonly (readonly [string, string])[] = [
  ["plain", "hello from gc"],
  ["unicode", "héllo wörld — 日本語 🦀 e\u0301 \u{1F600}"],
  ["quotes", `it's "quoted" and \`backticked\``],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  ["shell", "a; b && c | d > e $(touch pwned) `touch pwned2` $HOME ${PATH}"],
  ["backslash", "C:\\path\\to\\file \\n \\t \\\\ end\\"],
  ["tmux-format", "#{session_name} #(touch pwned3) ## #[fg=red] %1"],
  ["key-words", "C-c Enter Escape C-d Up"],
  ["multiline", "line one\nline two\n\n  line four"],
  ["100k", BIG_TEXT],
];

const INVALID_NAMES = ["", "a b", "a;b", "$(x)", "-rf", "a:b", "../x", "x\ny", "é", "a'b", "x".repeat(200)];

const HOSTILE_META = [
  "line1\nline2\n",
  `quotes ' " \` and ; && | $(rm -rf /) #{session_name}`,
  "ünïcödé 🦀 \u{10FFFF}",
  "\t tabs and trailing spaces   ",
  "x".repeat(4096),
];

const lifecycle: ConformanceCase[] = [
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

const stopping: ConformanceCase[] = [
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

const discovery: ConformanceCase[] = [
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

const meta: ConformanceCase[] = [
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

function nudgeCase(label: string, text: string): ConformanceCase {
  return {
    id: `nudge.${label}`,
    title: `nudge: the program receives ${label} text exactly`,
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      await ctx.provider.nudge(name, text);
      await fileEquals(ctx, name, cfg, "nudge.out", `${text}\n`);
      for (const f of ["pwned", "pwned2", "pwned3"]) {
        assert.equal(await ctx.read(name, cfg, f), undefined, `${f}: text was interpreted`);
      }
    },
  };
}

const io: ConformanceCase[] = [
  ...NUDGE_TEXTS.map(([label, text]) => nudgeCase(label, text)),
  {
    id: "nudge.blocks",
    title: "nudge: content blocks are flattened (text verbatim, files as [File: name])",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      await ctx.provider.nudge(name, [
        { type: "text", text: "look at" },
        { type: "file_path", path: "/tmp/some/report.txt" },
      ]);
      await fileEquals(ctx, name, cfg, "nudge.out", "look at\n[File: report.txt]\n");
    },
  },
  {
    id: "nudge.sequence",
    title: "nudge: consecutive nudges arrive in order",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      for (const t of ["one", "two", "three"]) await ctx.provider.nudge(name, t);
      await fileEquals(ctx, name, cfg, "nudge.out", "one\ntwo\nthree\n");
    },
  },
  {
    id: "nudge.multiline-lines",
    title: "nudge: multiline `lines` types and submits each line on its own (each its own paste)",
    // Typing rules apply where a terminal is typed into (one can attach to it), not to a
    // protocol prompt (acp).
    requires: ["executes", "idleWait", "attach"],
    async run(ctx) {
      const B = "\u001b[200~";
      const E = "\u001b[201~";
      const { name, cfg } = await running(ctx, LINE_READER);
      await ctx.eventually("the reader's prompt", async () =>
        (await ctx.provider.peek(name, 5)).includes(">"),
      );
      await ctx.provider.nudge(name, "one\ntwo", { multiline: "lines" });
      await fileEquals(ctx, name, cfg, "nudge.out", `${B}one${E}\n${B}two${E}\n`);
    },
  },
  {
    id: "nudge.missing",
    title: "nudge: resolves for a missing session",
    async run(ctx) {
      await ctx.provider.nudge(ctx.newName("missing"), "hello");
    },
  },
  {
    id: "nudge.running",
    title: "nudge: resolves for a running session",
    async run(ctx) {
      const { name } = await running(ctx, READER);
      await ctx.provider.nudge(name, "hello");
    },
  },
  {
    id: "sendKeys.ctrl-c",
    title: "sendKeys: C-c interrupts the foreground program",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, INT_TRAP);
      await armed(ctx, name, cfg);
      await ctx.provider.sendKeys(name, ["C-c"]);
      await ctx.eventually("int.out", async () => (await ctx.read(name, cfg, "int.out"))?.includes("INT"));
      assert.equal(await ctx.provider.isRunning(name), true, "the trapping program keeps running");
    },
  },
  {
    id: "sendKeys.enter",
    title: "sendKeys: Enter submits an empty line and nothing more",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      await ctx.provider.sendKeys(name, ["Enter"]);
      await fileEquals(ctx, name, cfg, "nudge.out", "\n");
    },
  },
  {
    id: "sendKeys.missing",
    title: "sendKeys: resolves for a missing session",
    async run(ctx) {
      await ctx.provider.sendKeys(ctx.newName("missing"), ["Enter"]);
    },
  },
  {
    id: "interrupt.sigint",
    title: "interrupt: delivers SIGINT to the program",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, INT_TRAP);
      await armed(ctx, name, cfg);
      await ctx.provider.interrupt(name);
      await ctx.eventually("int.out", async () => (await ctx.read(name, cfg, "int.out"))?.includes("INT"));
    },
  },
  {
    id: "interrupt.raw-key",
    title:
      "interrupt: a program reading raw keys gets Ctrl-C as its key (byte 03), not a signal, and keeps running",
    requires: ["executes", "attach"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, RAW_KEYS);
      await armed(ctx, name, cfg);
      await ctx.provider.interrupt(name);
      await ctx.eventually(
        "key.out holds Ctrl-C",
        async () => (await ctx.read(name, cfg, "key.out")) === "\x03",
      );
      assert.equal(await ctx.provider.isRunning(name), true, "the program was killed");
    },
  },
  {
    id: "interrupt.missing",
    title: "interrupt: resolves for a missing session",
    async run(ctx) {
      await ctx.provider.interrupt(ctx.newName("missing"));
    },
  },
  {
    id: "interrupt.concurrent",
    title: "interrupt: concurrent interrupts of three sessions resolve",
    async run(ctx) {
      const names = await Promise.all([0, 1, 2].map(async () => (await running(ctx)).name));
      await Promise.all(names.map((n) => ctx.provider.interrupt(n)));
    },
  },
  {
    id: "peek.marker",
    title: "peek: shows text the program printed",
    requires: ["executes"],
    async run(ctx) {
      const marker = `GC-MARKER-${Math.random().toString(36).slice(2)}`;
      const { name } = await running(ctx, `echo ${marker}; exec sleep 300`);
      await ctx.eventually("the marker on screen", async () =>
        (await ctx.provider.peek(name, 50)).includes(marker),
      );
    },
  },
  {
    id: "peek.lines",
    title: "peek: the line limit holds and the newest lines come last; 0 means all",
    requires: ["executes"],
    async run(ctx) {
      const { name } = await running(
        ctx,
        "i=1; while [ $i -le 120 ]; do echo line-$i; i=$((i+1)); done; exec sleep 300",
      );
      await ctx.eventually("line-120", async () => (await ctx.provider.peek(name, 5)).includes("line-120"));
      const five = await ctx.provider.peek(name, 5);
      const lines = five.split("\n");
      assert.ok(lines.length <= 5, `peek(5) returned ${lines.length} lines: ${JSON.stringify(five)}`);
      assert.ok(!five.includes("line-110"), "peek(5) returned old lines");
      const all = await ctx.provider.peek(name, 0);
      assert.ok(all.includes("line-1\n") && all.includes("line-120"), "peek(0) must include all scrollback");
    },
  },
  {
    id: "peek.missing",
    title: "peek: rejects with SessionNotFoundError for a missing session",
    async run(ctx) {
      await rejectsWith(ctx.provider.peek(ctx.newName("missing"), 10), "GC_SESSION_NOT_FOUND", "peek");
    },
  },
  {
    id: "peek.running",
    title: "peek: resolves to a string for a running session",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(typeof (await ctx.provider.peek(name, 10)), "string");
    },
  },
  {
    id: "clearScrollback.resolves",
    title: "clearScrollback: resolves for running and missing sessions",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.clearScrollback(name);
      await ctx.provider.clearScrollback(ctx.newName("missing"));
      assert.equal(await ctx.provider.isRunning(name), true);
    },
  },
];

const observation: ConformanceCase[] = [
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

/** Every provider conformance case, in report order. */
export const PROVIDER_CASES: readonly ConformanceCase[] = [
  ...lifecycle,
  ...stopping,
  ...discovery,
  ...meta,
  ...io,
  ...observation,
];
