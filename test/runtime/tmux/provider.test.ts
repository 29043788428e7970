import { access, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { DialogRefusedError } from "../../../internal/runtime/screen/keys.js";
import type { TmuxProvider } from "../../../internal/runtime/tmux/index.js";
import { serverListening } from "../../../internal/runtime/tmux/server.js";
import { until } from "../../support/until.js";
import { fakeAgent, HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

const HOSTILE_NAMES = [
  "a;b",
  "$(touch x)",
  "a b",
  "#{session_name}",
  "a:b",
  "-t",
  "x\ny",
  "é",
  "a'b",
  "_gc_keeper",
  "",
];

describe.skipIf(!HAS_TMUX)("TmuxProvider", () => {
  let fx: TmuxFixture;
  let p: TmuxProvider;
  const cfg = async (command: string, extra: Partial<StartConfig> = {}): Promise<StartConfig> => ({
    command,
    workDir: await fx.dir(),
    env: {},
    ...extra,
  });
  beforeEach(async () => {
    fx = await tmuxFixture();
    p = fx.provider({ nudgeConfirmMs: 400, nudgeIdleWaitMs: 2_000, dialogTimeoutMs: 3_000 });
  });
  afterEach(async () => {
    await fx.cleanup();
  });

  it("names: hostile names are rejected by every method before tmux is even contacted", async () => {
    const c = await cfg("exec sleep 300");
    const calls: ((n: string) => Promise<unknown>)[] = [
      (n) => p.start(n, c),
      (n) => p.stop(n),
      (n) => p.interrupt(n),
      (n) => p.isRunning(n),
      (n) => p.processAlive(n, ["sleep"]),
      (n) => p.nudge(n, "x"),
      (n) => p.nudgeNow(n, "x"),
      (n) => p.sendKeys(n, ["Enter"]),
      (n) => p.peek(n, 5),
      (n) => p.setMeta(n, "k", "v"),
      (n) => p.getMeta(n, "k"),
      (n) => p.removeMeta(n, "k"),
      (n) => p.getLastActivity(n),
      (n) => p.clearScrollback(n),
      (n) => p.copyTo(n, "/etc/hostname", "x"),
      (n) => p.runLive(n, c),
      (n) => p.attach(n),
      (n) => p.isAttached(n),
      (n) => p.waitForIdle(n, 100),
      (n) => p.watchOutput(n),
      (n) => p.pending(n),
      (n) => p.respond(n, { action: "approve" }),
      (n) => p.lastExit(n),
      (n) => p.execCommand(n, ["true"]),
    ];
    for (const bad of HOSTILE_NAMES) {
      for (const call of calls) {
        const e = await call(bad).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(isGcError(e, "GC_INVALID_NAME"), `${JSON.stringify(bad)}: ${String(e)}`).toBe(true);
      }
    }
    expect(p.control.pid).toBeUndefined();
  });

  it("names: dotted names map reversibly, so a.b and a_b are two sessions", async () => {
    await p.start("w.1", await cfg("exec sleep 300"));
    await p.start("w_1", await cfg("exec sleep 300"));
    expect(await p.listRunning("w")).toEqual(["w.1", "w_1"]);
    const raw = await fx.tmux("list-sessions", "-F", "#{session_name}");
    expect(raw.stdout.split("\n")).toEqual(expect.arrayContaining(["w+1", "w_1"]));
    await p.stop("w.1");
    expect(await p.isRunning("w_1")).toBe(true);
  });

  it("setMeta: hostile values round-trip exactly and nothing is executed", async () => {
    const dir = await fx.dir();
    await p.start("meta", await cfg("exec sleep 300"));
    const values = [
      `$(touch ${dir}/pwned1)`,
      `#(touch ${dir}/pwned2) #{session_name} ##`,
      `\`touch ${dir}/pwned3\`; kill-server; ' " \\`,
      "multi\nline\r\nvalue\n\n",
      "\x01\x02\x1b[31mred\x7f",
      "日本語 🦀 \u{10FFFF} e\u0301",
      "~/not-home $HOME",
      "",
    ];
    for (const [i, v] of values.entries()) {
      await p.setMeta("meta", `k${i}`, v);
      expect(await p.getMeta("meta", `k${i}`)).toBe(v);
    }
    expect((await readdir(dir)).filter((f) => f.startsWith("pwned"))).toEqual([]);
    expect(await p.isRunning("meta")).toBe(true);
  });

  it("nudge: hostile text arrives verbatim and nothing is executed", async () => {
    const dir = await fx.dir();
    const c = await cfg("exec cat > nudge.out");
    await p.start("nud", c);
    const text = `a;b $(touch ${dir}/pwned) #(touch ${dir}/pwned2) \`x\` '"\\ ~/h $HOME #{pane_id} 🦀 ; kill-server`;
    await p.nudge("nud", text);
    await until(
      "nudge.out",
      async () => (await readFile(join(c.workDir, "nudge.out"), "utf8")) === `${text}\n`,
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("nudge: a program that shows nothing rejects with NudgeNotDeliveredError, never a silent success", async () => {
    await p.start("deaf", await cfg("stty raw -echo; exec sleep 300"));
    // stty has run once the shell became `sleep`.
    await expect.poll(() => p.processAlive("deaf", ["sleep"])).toBe(true);
    const e = await p.nudgeNow("deaf", "hello").catch((err: unknown) => err);
    expect(isGcError(e, "GC_NUDGE_NOT_DELIVERED"), String(e)).toBe(true);
  });

  it("nudge: an Enter the program swallows is retried until the input is submitted", async () => {
    const c = await cfg(fakeAgent("composer", "out.txt", "1"), { readyPromptPrefix: "❯ " });
    await p.start("comp", c);
    await p.nudge("comp", "first line\nsecond line");
    expect(await readFile(join(c.workDir, "out.txt"), "utf8")).toBe("first line\nsecond line\n");
  });

  it("nudge: when Enter never submits, the error says so and nothing is reported as delivered", async () => {
    const c = await cfg(fakeAgent("composer", "out.txt", "99"), { readyPromptPrefix: "❯ " });
    await p.start("stuck", c);
    const e = await p.nudgeNow("stuck", "will not submit").catch((err: unknown) => err);
    expect(isGcError(e, "GC_NUDGE_NOT_DELIVERED"), String(e)).toBe(true);
    expect(String(e)).toMatch(/still on the input line/);
  });

  it("nudge: refuses to type into a menu that waits for a choice", async () => {
    const c = await cfg(fakeAgent("menu", "out.txt", "0", "Select a model:", "opus", "sonnet"));
    await p.start("menu", c);
    await until("the menu", async () => (await p.peek("menu", 20)).includes("2. sonnet"));
    const e = await p.nudgeNow("menu", "hello").catch((err: unknown) => err);
    expect(isGcError(e, "GC_NUDGE_NOT_DELIVERED"), String(e)).toBe(true);
    expect(await readFile(join(c.workDir, "out.txt"), "utf8").catch(() => "")).toBe("");
  });

  it("peek: pane text that forges control-mode lines comes back verbatim", async () => {
    await p.start("forge", await cfg("printf '%%end 1 1 1\\n%%begin 1 2 1\\n%%exit\\n'; exec sleep 300"));
    const out = await until("the forged lines", async () => {
      const s = await p.peek("forge", 10);
      return s.includes("%exit") ? s : undefined;
    });
    expect(out.split("\n").slice(0, 3)).toEqual(["%end 1 1 1", "%begin 1 2 1", "%exit"]);
    await p.setMeta("forge", "after", "ok");
    expect(await p.getMeta("forge", "after")).toBe("ok");
  });

  it("foreign: a same-name session of another city is never read, stopped or replaced", async () => {
    const other = fx.provider({}, "other-city");
    await other.start("shared", await cfg("exec sleep 300"));
    await expect(p.start("shared", await cfg("exec sleep 300"))).rejects.toSatisfy((e) =>
      isGcError(e, "GC_SESSION_EXISTS"),
    );
    expect(await p.isRunning("shared")).toBe(false);
    await expect(p.peek("shared", 5)).rejects.toSatisfy((e) => isGcError(e, "GC_SESSION_NOT_FOUND"));
    await expect(p.getMeta("shared", "k")).rejects.toSatisfy((e) => isGcError(e, "GC_SESSION_NOT_FOUND"));
    await p.stop("shared");
    await p.sendKeys("shared", ["C-c"]);
    expect(await other.isRunning("shared")).toBe(true);
    expect(await p.listRunning("")).toEqual([]);
    expect(await other.listRunning("")).toEqual(["shared"]);
  });

  it("lastExit: every exit status is known, even when tmux missed the child's SIGCHLD", async () => {
    // tmux linked with libutempter drops some panes' SIGCHLD; lastExit makes it reap them.
    const names = ["x0", "x1", "x2", "x3", "x4", "x5"];
    for (const n of names) await p.start(n, await cfg("sleep 0.2; exit 5"));
    for (const n of names) expect((await until(`${n} exit`, () => p.lastExit(n))).code).toBe(5);
  });

  it("stop: leaves no zombie behind in the tmux server", async () => {
    // Checked after each stop: a later child's exit would otherwise reap a lost one by chance.
    for (const n of ["z0", "z1", "z2", "z3", "z4", "z5"]) {
      const c = await cfg("echo $$ > pid.out; exec sleep 300");
      await p.start(n, c);
      // The shell creates pid.out before it writes it: wait for the whole line.
      const pid = await until("pid.out", async () => {
        const text = await readFile(join(c.workDir, "pid.out"), "utf8");
        return text.endsWith("\n") ? Number(text) : undefined;
      });
      await p.stop(n);
      const gone = async () =>
        !(await access(`/proc/${pid}`).then(
          () => true,
          () => false,
        ));
      await until(`pid ${pid} of ${n} reaped`, gone, 3_000);
    }
  });

  it("lastExit: a dead session keeps its exit status until the next start cleans it up", async () => {
    const c = await cfg("sleep 0.3; exit 4");
    await p.start("dies", c);
    const st = await until("an exit status", () => p.lastExit("dies"));
    expect(st.code).toBe(4);
    expect(await p.isRunning("dies")).toBe(false);
    expect((await p.snapshot("dies"))[0]).toMatchObject({ name: "dies", running: false });
    await p.start("dies", await cfg("exec sleep 300"));
    expect(await p.isRunning("dies")).toBe(true);
    expect(await p.lastExit("dies")).toBeUndefined();
  });

  it("lastExit: a program killed by a signal has no exit code", async () => {
    await p.start("killed", await cfg("sleep 0.3; kill -TERM $$"));
    const st = await until("an exit status", () => p.lastExit("killed"));
    expect(st.code).toBeNull();
    expect(st.signal).toBe("SIGTERM");
  });

  it("start: a startup dialog with 'No, exit' pre-selected is answered with the safe option", async () => {
    const c = await cfg(
      fakeAgent(
        "menu",
        "chosen.txt",
        "1",
        "Do you trust the files in this folder?",
        "Yes, proceed",
        "No, exit",
      ),
      { readyPromptPrefix: "READY> " },
    );
    await p.start("trust", c);
    expect(await readFile(join(c.workDir, "chosen.txt"), "utf8")).toBe("Yes, proceed\n");
    expect(await p.isRunning("trust")).toBe(true);
  });

  it("start: emits_permission_warning without a prompt prefix still answers the bypass warning", async () => {
    const c = await cfg(
      fakeAgent("menu", "chosen.txt", "0", "WARNING: Bypass Permissions mode", "No, exit", "Yes, I accept"),
      { emitsPermissionWarning: true },
    );
    await p.start("bypass", c);
    expect(await readFile(join(c.workDir, "chosen.txt"), "utf8")).toBe("Yes, I accept\n");
  });

  it("start: an unfamiliar dialog layout (no exit option) is refused without a key press and leaves nothing", async () => {
    // Options that are neither accept nor exit are tolerated (issue 16); a known question
    // whose exit option cannot be identified is not.
    const c = await cfg(
      fakeAgent(
        "menu",
        "chosen.txt",
        "0",
        "Do you trust the files in this folder?",
        "Yes, proceed",
        "Maybe later",
        "Open settings",
      ),
      { readyPromptPrefix: "READY> " },
    );
    const e = await p.start("odd", c).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(DialogRefusedError);
    expect(await p.isRunning("odd")).toBe(false);
    expect(await p.listRunning("")).toEqual([]);
    expect(await readFile(join(c.workDir, "chosen.txt"), "utf8").catch(() => "none")).toBe("none");
  });

  it("pending/respond: an approval prompt is reported, never idle, and answered by role", async () => {
    const c = await cfg(
      fakeAgent(
        "menu",
        "answer.txt",
        "0",
        "● Bash(rm -rf build)\n\nBash command\n  rm -rf build\nDo you want to proceed?",
        "Yes",
        "Yes, and don't ask again for rm commands",
        "No, and tell Claude what to do differently (esc)",
      ),
    );
    await p.start("approve", c);
    const pending = await until("a pending approval", () => p.pending("approve"));
    expect(pending.kind).toBe("approval");
    expect(pending.options).toHaveLength(3);
    // The batch read agrees (one list-panes -a + one command list), also when read again
    // from its activity cache; names not running are simply absent.
    for (let i = 0; i < 2; i++) {
      const all = await p.pendingAll(["approve", "missing"]);
      expect([...all.keys()]).toEqual(["approve"]);
      expect(all.get("approve")?.requestId).toBe(pending.requestId);
    }
    expect(await p.waitForIdle("approve", 1_500)).toBe("timeout");
    await expect(p.respond("approve", { requestId: "scr-stale", action: "deny" })).rejects.toThrow(/changed/);
    await p.respond("approve", { requestId: pending.requestId, action: "deny" });
    expect(await readFile(join(c.workDir, "answer.txt"), "utf8")).toBe(
      "No, and tell Claude what to do differently (esc)\n",
    );
    expect(await p.pending("approve")).toBeUndefined();
    // The answer changed the screen (new activity): the cached prompt is not reported again.
    await until("the batch read sees the answer", async () => (await p.pendingAll(["approve"])).size === 0);
  });

  it("recovery: a remembered session id never reaches another session on a restarted server", async () => {
    await p.start("a", await cfg("exec sleep 300"));
    await p.setMeta("a", "k", "v"); // the provider now remembers a's session id
    const oldId = (await fx.tmux("display-message", "-p", "-t", "=a:", "#{session_id}")).stdout.trim();
    expect((await fx.tmux("kill-server")).exitCode).toBe(0);
    const other = fx.provider({}, "other-city");
    const c = await cfg("exec cat > out.txt");
    await other.start("b", c);
    const newId = (await fx.tmux("display-message", "-p", "-t", "=b:", "#{session_id}")).stdout.trim();
    expect(newId).toBe(oldId); // ids restart with the server: the same id names another session
    await p.sendKeys("a", ["typed-into-the-wrong-session", "Enter"]);
    await expect(p.setMeta("a", "k", "w")).rejects.toSatisfy((e) => isGcError(e, "GC_SESSION_NOT_FOUND"));
    await expect(p.peek("a", 5)).rejects.toSatisfy((e) => isGcError(e, "GC_SESSION_NOT_FOUND"));
    // A marker typed into b after those keys (their command was answered first): b's input
    // holds the marker alone.
    await other.sendKeys("b", ["marker", "Enter"]);
    await until("the marker in b's input", async () =>
      (await readFile(join(c.workDir, "out.txt"), "utf8").catch(() => "")).includes("marker"),
    );
    expect(await readFile(join(c.workDir, "out.txt"), "utf8")).toBe("marker\n");
    expect(await other.getMeta("b", "k")).toBeUndefined();
  });

  it("recovery: after the server is killed, nothing is reported running and start works again", async () => {
    await p.start("before", await cfg("exec sleep 300"));
    expect((await fx.tmux("kill-server")).exitCode).toBe(0);
    expect(await p.isRunning("before")).toBe(false);
    expect(await p.listRunning("")).toEqual([]);
    await p.start("after", await cfg("exec sleep 300"));
    expect(await p.listRunning("")).toEqual(["after"]);
  });

  it("prepare: starts the city's server and creates no session; idempotent; a start then uses it", async () => {
    const path = p.control.socketPath;
    expect(await serverListening(path)).toBe(false);
    await p.prepare();
    expect(await serverListening(path)).toBe(true);
    const server = (await fx.tmux("display-message", "-p", "#{pid}")).stdout.trim();
    expect(await p.listRunning("")).toEqual([]);
    await p.prepare();
    await p.start("after", await cfg("exec sleep 300"));
    expect(await p.listRunning("")).toEqual(["after"]);
    expect((await fx.tmux("display-message", "-p", "#{pid}")).stdout.trim()).toBe(server);
  });

  it("shutdown: stops our sessions, ends the server and removes its socket; reads do not revive it", async () => {
    await p.start("one", await cfg("exec sleep 300"));
    await p.start("two", await cfg("sleep 0.2; exit 0"));
    await until("a dead session", async () => (await p.snapshot("two"))[0]?.running === false);
    const path = p.control.socketPath;
    await p.shutdown();
    expect(await serverListening(path)).toBe(false);
    await expect(access(path)).rejects.toThrow();
    expect(await p.listRunning("")).toEqual([]);
    expect(await p.isRunning("one")).toBe(false);
    await expect(p.peek("one", 5)).rejects.toSatisfy((e) => isGcError(e, "GC_SESSION_NOT_FOUND"));
    await expect(access(path)).rejects.toThrow();
    await p.shutdown(); // idempotent
  });

  it("shutdown: a foreign session keeps the server (and itself) alive", async () => {
    const other = fx.provider({}, "other-city");
    await other.start("theirs", await cfg("exec sleep 300"));
    await p.start("ours", await cfg("exec sleep 300"));
    await p.shutdown();
    expect(await p.listRunning("")).toEqual([]);
    expect(await other.listRunning("")).toEqual(["theirs"]);
  });

  it("snapshot: one observation with running, attached and activity for every session", async () => {
    await Promise.all(
      ["s1", "s2", "s3"].map(async (n) => p.start(n, await cfg(`echo ${n}; exec sleep 300`))),
    );
    const snap = await p.snapshot("s");
    expect(snap.map((s) => s.name).sort()).toEqual(["s1", "s2", "s3"]);
    for (const s of snap) {
      expect(s.running).toBe(true);
      expect(s.attached).toBe(false);
      expect(s.lastActivity).toBeInstanceOf(Date);
    }
  });

  it("snapshotWithLooks: the snapshot and a look at every running session, from ONE list-panes", async () => {
    await Promise.all(
      ["s1", "s2"].map(async (n) => p.start(n, await cfg(`echo screen-of-${n}; exec sleep 300`))),
    );
    await p.start("s3", await cfg("echo bye; exec sleep 300"));
    await p.stop("s3");
    await until("both screens", async () =>
      (await p.peek("s2", 5)).includes("screen-of-s2") && (await p.peek("s1", 5)).includes("screen-of-s1")
        ? true
        : undefined,
    );
    const control = p.control;
    const sent: string[] = [];
    const command = control.command.bind(control);
    control.command = (argv, opts) => {
      sent.push(argv[0]!);
      return command(argv, opts);
    };
    const both = await p.snapshotWithLooks("s");
    expect(sent.filter((c) => c === "list-panes")).toHaveLength(1);
    expect(both.sessions).toEqual(await p.snapshot("s"));
    expect([...both.looks.keys()].sort()).toEqual(["s1", "s2"]);
    const looks = await p.look(["s1", "s2"]);
    for (const n of ["s1", "s2"]) {
      expect(both.looks.get(n)?.screen).toContain(`screen-of-${n}`);
      expect(both.looks.get(n)).toEqual(looks.get(n));
    }
  });

  it("execCommand: runs with the declared env in the work dir; a missing program is exit 127", async () => {
    const c = await cfg("exec sleep 300", { env: { GC_EXEC_VAR: "v'a\"l $(x)" } });
    await p.start("exec", c);
    const r = await p.execCommand("exec", [
      "sh",
      "-c",
      'printf "%s|%s|%s" "$GC_EXEC_VAR" "$GC_SESSION" "$PWD"',
    ]);
    expect(r).toEqual({ exitCode: 0, stdout: `v'a"l $(x)|exec|${c.workDir}`, stderr: "" });
    expect((await p.execCommand("exec", ["/nonexistent/program"])).exitCode).toBe(127);
  });

  it("start: ownership tags are set in the creating command list; no env value is a tmux option", async () => {
    const secret = `s3cr3t-${Math.random().toString(36).slice(2)}`;
    const multi = "line1\nline2=x";
    const c = await cfg("exec sleep 300", {
      env: { API_TOKEN: secret, DB_URL: `pg://u:${secret}@h`, MULTI: multi },
    });
    await p.start("owned", c);
    const opts = await fx.tmux("show-options", "-t", "=owned:");
    expect(opts.stdout).toMatch(/@gc_city /);
    expect(opts.stdout).toMatch(/@gc_name owned/);
    const all = await fx.tmux("show-options", "-g");
    expect(`${opts.stdout}${all.stdout}`).not.toContain(secret);
    expect(`${opts.stdout}`).not.toContain(Buffer.from(secret).toString("hex"));
    // gc exec still sees every declared value (read from the session environment).
    const r = await p.execCommand("owned", ["sh", "-c", 'printf "%s|%s|%s" "$API_TOKEN" "$DB_URL" "$MULTI"']);
    expect(r.stdout).toBe(`${secret}|pg://u:${secret}@h|${multi}`);
  });

  it("start: a program that exits before start returns is SessionDiedDuringStartupError with its status", async () => {
    const e = await p.start("quick", await cfg("echo bye; exit 4")).then(
      () => undefined,
      (err: unknown) => err,
    );
    // Without readiness hints the exit may land just after start returns; then it is a dead session.
    if (e === undefined) {
      expect((await until("an exit status", () => p.lastExit("quick"))).code).toBe(4);
    } else {
      expect(isGcError(e, "GC_DIED_DURING_STARTUP"), String(e)).toBe(true);
      expect(String(e)).toMatch(/exit status 4/);
      expect(await p.lastExit("quick")).toBeUndefined();
    }
  });

  it("start: a program that prints and exits at once is reported with its last output, or honestly without", async () => {
    // tmux 3.3 closes a pane's pty as soon as the exit reaches it, dropping output the kernel
    // had not handed over yet: in a loop some starts lose the line. Each failure must either
    // quote it or say that output may have been lost, never just fall silent about it.
    const c = await cfg('echo "about to fail with X"; exit 3', { readyPromptPrefix: "never shown> " });
    let quoted = 0;
    for (let i = 0; i < 30; i++) {
      const e = await p.start(`dies${i}`, c).catch((err: unknown) => err);
      expect(isGcError(e, "GC_DIED_DURING_STARTUP"), String(e)).toBe(true);
      const said = String(e);
      expect(said).toMatch(
        /exit status 3; (last output: about to fail with X$|no output captured \(tmux can discard)/,
      );
      if (said.includes("last output")) quoted++;
      await p.stop(`dies${i}`);
    }
    expect(quoted).toBeGreaterThan(0);
  });

  it("start: a failing session_setup is a HookFailedError and the session is gone", async () => {
    const c = await cfg("exec sleep 300", { sessionSetup: ["echo broken >&2; exit 3"] });
    const e = await p.start("setup", c).catch((err: unknown) => err);
    expect(isGcError(e, "GC_HOOK_FAILED"), String(e)).toBe(true);
    expect(String(e)).toMatch(/broken/);
    expect(await p.listRunning("")).toEqual([]);
  });
});
