/**
 * End-to-end, operator-facing behaviour of the built `gc`: two cities with the same name in
 * two directories coexist (tmux and subprocess), closed pipes are quiet on a 20-session city,
 * usage errors suggest the right command or flag (as JSON with --json), help/version/
 * completion, `gc start`/`gc reconcile` exit 1 when a session failed to start, and every
 * read command, nudge, attach and stop work on the last good config while the file is not;
 * drift of a map per key; `gc nudge S -` strips one newline; work_dir parents checked.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pty from "@lydell/node-pty";
import { describe, expect, it, onTestFinished } from "vitest";
import { readBuildId } from "../../internal/build/build-id.js";
import { defaultSocketName } from "../../internal/runtime/identity.js";
import {
  GC_BIN,
  type GcResult,
  makeCity,
  runGc,
  storedCityId,
  type TestCity,
  until,
} from "../support/city.js";
import { has } from "../support/needs.js";

const hasTmux = has("tmux");

interface StatusRow {
  name: string;
  state: string;
  running: boolean;
  drift: string;
}

async function sessions(city: TestCity): Promise<StatusRow[]> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { sessions: StatusRow[] }).sessions;
}

const pidOf = (city: TestCity) => readFileSync(join(city.dir, "alpha", "pid"), "utf8").trim();

let seq = 0;

/** A city file named `name` whose one agent records its pid; `greeting` is a core field. */
function sameNamed(name: string, provider: string, greeting: string): string {
  return `workspace:
  name: ${name}
session:
  provider: ${provider}
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "echo $$$$ > pid; exec sleep 100000"
    work_dir: ./alpha
    pre_start: ["mkdir -p ./alpha"]
    env:
      GREETING: ${greeting}
`;
}

function expectOk(r: GcResult, what: string): void {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.stderr}`);
}

describe.each([
  { provider: "tmux", skip: !hasTmux },
  { provider: "subprocess", skip: false },
])("two cities with the same name ($provider)", ({ provider, skip }) => {
  it.skipIf(skip)(
    "identity: start both, drift one, stop one — the other is untouched",
    { timeout: 180_000 },
    async () => {
      const name = `same${process.pid}x${++seq}`;
      const a = makeCity(sameNamed(name, provider, "hello"));
      const b = makeCity(sameNamed(name, provider, "hello"));
      // makeCity tears down the socket of its own unique name; these cities share `name`.
      onTestFinished(() => {
        for (const c of [a, b]) {
          const socket = defaultSocketName(name, storedCityId(c.dir));
          spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
          rmSync(join(`/tmp/tmux-${process.getuid?.() ?? 0}`, socket), { force: true });
        }
      });
      // Start both, each with its background controller.
      expectOk(await a.gc(["start"]), "gc start a");
      expectOk(await b.gc(["start"]), "gc start b");
      expect(storedCityId(a.dir)).toBeDefined();
      expect(storedCityId(a.dir)).not.toBe(storedCityId(b.dir));
      for (const c of [a, b]) {
        expect(await sessions(c)).toMatchObject([
          { name: "alpha", state: "running", running: true, drift: "none" },
        ]);
      }
      const pidB = pidOf(b);
      const pidA = pidOf(a);
      expect(pidA).not.toBe(pidB);
      if (provider === "tmux") {
        // Two servers: the socket names carry the city's identity.
        const sa = defaultSocketName(name, storedCityId(a.dir));
        const sb = defaultSocketName(name, storedCityId(b.dir));
        expect(sa).not.toBe(sb);
        for (const s of [sa, sb]) {
          const ls = spawnSync("tmux", ["-L", s, "list-sessions", "-F", "#{session_name}"], {
            encoding: "utf8",
          });
          expect(ls.stdout.split("\n")).toContain("alpha");
        }
      }

      // Drift a: only a's session restarts.
      a.write(sameNamed(name, provider, "bonjour"));
      const drift = await a.gc(["reconcile"]);
      expectOk(drift, "gc reconcile a");
      // The controller may have restarted it already on the file change; either way it restarts.
      await until("a's alpha restarted", async () => {
        const [row] = await sessions(a);
        return row?.running && row.drift === "none" && pidOf(a) !== pidA;
      });
      const rb = await b.gc(["reconcile"]);
      expectOk(rb, "gc reconcile b");
      expect(rb.stdout).toContain("1 desired: in sync");
      expect(pidOf(b)).toBe(pidB);

      // Stop a: b keeps its session, same process, in sync.
      const stop = await a.gc(["stop"]);
      expectOk(stop, "gc stop a");
      expect((await sessions(a)).filter((s) => s.running)).toEqual([]);
      expect(await sessions(b)).toMatchObject([
        { name: "alpha", state: "running", running: true, drift: "none" },
      ]);
      expect(pidOf(b)).toBe(pidB);
      expect(process.kill(Number(pidB), 0)).toBe(true);
      const again = await b.gc(["reconcile"]);
      expectOk(again, "gc reconcile b after a stopped");
      expect(again.stdout).toContain("1 desired: in sync");
    },
  );
});

/** Runs `gc ARGS | head -1` through bash with pipefail; stderr of gc goes to its own pipe. */
function pipeToHead(args: string[]): Promise<GcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "bash",
      ["-o", "pipefail", "-c", '"$0" "$@" | head -1', process.execPath, GC_BIN, ...args],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs gc with its stdout pipe closed before it writes anything: every write is EPIPE. */
function closedStdout(args: string[]): Promise<GcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [GC_BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: "", stderr }));
  });
}

describe.skipIf(!hasTmux)("closed pipes and a 20-session city (tmux)", () => {
  it("pipes: `gc status | head -1` exits 0 with nothing on stderr; read commands end quietly on EPIPE", {
    timeout: 240_000,
  }, async () => {
    const agents = Array.from(
      { length: 20 },
      (_, i) => `  - name: a${i}\n    start_command: "exec sleep 100000"\n`,
    ).join("");
    const city = makeCity(
      `workspace:\n  name: @NAME@\nsession:\n  provider: tmux\ndaemon:\n  interval: 1h\nagents:\n${agents}`,
    );
    expectOk(await city.gc(["start", "--once"], { timeoutMs: 200_000 }), "gc start --once");
    const head = await pipeToHead(["--city", city.dir, "status"]);
    expect(head.stderr).toBe("");
    expect(head.code).toBe(0);
    expect(head.stdout).toMatch(/^city /);
    // A full `gc status` of 20 sessions prints no warning either (one abort listener per signal).
    const full = await city.gc(["status"]);
    expect(full.stderr).toBe("");
    expect(full.stdout.split("\n").filter((l) => /^a\d+ /.test(l))).toHaveLength(20);
    for (const args of [["status"], ["drift"], ["session", "list"], ["config", "show"]]) {
      const r = await closedStdout(["--city", city.dir, ...args]);
      expect({ args, stderr: r.stderr, code: r.code }).toEqual({ args, stderr: "", code: 0 });
    }
  });
});

describe("CLI usage, help and errors", () => {
  it("cli: `gc stauts` suggests status (exit 2); unknown flags suggest the right one", async () => {
    const r = await runGc(["stauts"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'stauts' (did you mean status?)");
    const f = await runGc(["status", "--jsn"]);
    expect(f.code).toBe(2);
    expect(f.stderr).toContain("unknown option '--jsn' (did you mean --json?)");
    const h = await runGc(["help", "stauts"]);
    expect(h.code).toBe(2);
    expect(h.stderr).toContain("did you mean status?");
    const w = await runGc(["wait", "alpha", "idle"]);
    expect(w.code).toBe(2);
    expect(w.stderr).toContain("gc wait takes one session (a condition is a flag: --idle)");
    // What gc status shows but is not a lifecycle state is named, with what to wait on.
    const n = await runGc(["wait", "alpha", "--state", "new"]);
    expect(n.code).toBe(2);
    expect(n.stderr).toContain('--state: "new" is how gc status shows a session never started');
    const ttl = await runGc(["nudge", "alpha", "hi", "--queue", "--ttl", "0"]);
    expect(ttl.code).toBe(2);
    expect(ttl.stderr).toContain("--ttl: a queued nudge needs a time to live above 0");
  });

  it("cli: `gc status --jsn --json` prints a JSON error on stderr with the same exit code", async () => {
    const r = await runGc(["status", "--jsn", "--json"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(JSON.parse(r.stderr)).toEqual({
      error: { code: "GC_USAGE", message: "unknown option '--jsn' (did you mean --json?)" },
    });
    const missing = await runGc(["--json", "--city", "/nonexistent/city/dir", "status"]);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stderr).error.code).toBe("GC_CONFIG");
  });

  it("cli: help, help CMD, -h, -v/--version from package.json with the build id of dist/", async () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    const build = readBuildId(fileURLToPath(new URL("../../dist/", import.meta.url)));
    expect(build).toMatch(/^[0-9a-f]{12}$/);
    for (const flag of ["-v", "--version"]) {
      const v = await runGc([flag]);
      expect(v).toMatchObject({ code: 0, stdout: `${pkg.version} (build ${build})\n` });
      const j = await runGc(["--json", flag]);
      expect(j).toMatchObject({ code: 0, stdout: `${JSON.stringify({ version: pkg.version, build })}\n` });
    }
    const help = await runGc(["help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}status +one row per session$/m);
    for (const args of [
      ["help", "status"],
      ["status", "--help"],
      ["status", "-h"],
    ]) {
      const r = await runGc(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: gc status/);
    }
    const none = await runGc([]);
    expect(none.code).toBe(2);
  });

  it("cli: `gc completion bash|zsh|fish` prints scripts naming every command and its flags", async () => {
    const bash = await runGc(["completion", "bash"]);
    expect(bash.code).toBe(0);
    expect(spawnSync("bash", ["-n"], { input: bash.stdout }).status).toBe(0);
    expect(bash.stdout).toContain("status) opts=");
    expect(bash.stdout).toContain("--dry-run");
    // The completion works: completing `gc sta` offers start and status.
    const probe = spawnSync(
      "bash",
      ["-c", `${bash.stdout}\nCOMP_WORDS=(gc sta); COMP_CWORD=1; _gc; echo "\${COMPREPLY[@]}"`],
      { encoding: "utf8" },
    );
    expect(probe.stdout.trim().split(" ").sort()).toEqual(["start", "status"]);
    const zsh = await runGc(["completion", "zsh"]);
    expect(zsh.stdout).toMatch(/^#compdef gc/);
    const fish = await runGc(["completion", "fish"]);
    expect(fish.stdout).toContain("complete -c gc -n __fish_use_subcommand -a status");
    expect((await runGc(["completion", "tcsh"])).code).toBe(2);
  });

  it("exec: gc's own failures exit 125, never a code the command could mean", async () => {
    const city = makeCity("workspace:\n  name: @NAME@\nsession:\n  provider: subprocess\nagents: []\n");
    const r = await city.gc(["exec", "nosuch", "--", "true"]);
    expect(r.code).toBe(125);
    expect(r.stderr).toContain("nosuch");
  });
});

describe("gc start exit code", () => {
  it("start: a city with an agent that fails to start exits 1 (background and --once); so does gc reconcile", {
    timeout: 120_000,
  }, async () => {
    const yaml = `workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: good
    start_command: "exec sleep 100000"
  - name: bad
    start_command: "exec sleep 100000"
    pre_start: ["exit 7"]
`;
    const once = await makeCity(yaml).gc(["start", "--once"]);
    expect(once.code).toBe(1);
    expect(once.stderr).toMatch(/start bad failed/);
    // The background controller keeps running (and retrying), but the first pass failed.
    const bg = await makeCity(yaml).gc(["start"]);
    expect(bg.stderr).toMatch(/start bad failed/);
    expect(bg.code).toBe(1);
    // gc reconcile as a city's first pass (no controller): the same failed start exits 1.
    const rec = makeCity(yaml);
    const first = await rec.gc(["reconcile"]);
    expect(first.stderr).toMatch(/start bad failed/);
    expect(first.stdout).toContain("2 desired: 2 start; 1 failed");
    expect(first.code).toBe(1);
    expect(await sessions(rec)).toMatchObject([
      { name: "good", running: true },
      { name: "bad", running: false },
    ]);
  });
});

/**
 * Runs `gc attach alpha` in a real pty, waits for `text` (already on the session's screen)
 * to be drawn there, detaches with Ctrl-\\ and expects exit 0.
 */
async function attachThenDetach(city: TestCity, text: string): Promise<void> {
  const term = pty.spawn(process.execPath, [GC_BIN, "--city", city.dir, "attach", "alpha"], {
    name: "xterm-256color",
    cols: 100,
    rows: 30,
    cwd: city.dir,
    env: { ...(process.env as Record<string, string>), TMUX: "", TERM: "xterm-256color", NO_COLOR: "1" },
  });
  let screen = "";
  term.onData((d) => {
    screen += d;
  });
  const detached = new Promise<{ exitCode: number }>((resolve) => term.onExit(resolve));
  try {
    await until("the session's screen in the attached terminal", async () => screen.includes(text));
    expect(screen).toContain("gc: using the last good config: ");
    term.write("\x1c");
    expect((await detached).exitCode, screen).toBe(0);
  } finally {
    term.kill("SIGKILL");
  }
}

describe("last good config", () => {
  it("last-good: read commands, nudge, attach and stop keep working while the file is invalid or lacks a variable here, saying so in one line", {
    timeout: 180_000,
  }, async () => {
    const good = `workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "exec sleep 100000"
    env:
      TOKEN_HINT: \${GC_TEST_VAR_${process.pid}}
`;
    const city = makeCity(good);
    const withVar = { [`GC_TEST_VAR_${process.pid}`]: "x" };
    expectOk(await city.gc(["start", "--once"], { env: withVar }), "gc start --once");

    // 1. An invalid edit: observing and operating use the last good config.
    city.write(good.replace("start_command:", "start_comand:"));
    for (const args of [
      ["status"],
      ["peek", "alpha", "-n", "1"],
      ["drift"],
      ["session", "list"],
      ["wait", "alpha", "--state", "running", "--timeout", "30s"],
    ]) {
      const r = await city.gc(args, { env: withVar });
      expect({ args, code: r.code }).toEqual({ args, code: 0 });
      const lines = r.stderr.split("\n").filter((l) => l !== "");
      // One line about the config (gc wait also reports its own outcome on stderr).
      expect({ args, n: lines.filter((l) => /config|city\.yaml/.test(l)).length }).toEqual({ args, n: 1 });
      expect(lines[0]).toMatch(/^gc: using the last good config: .*city\.yaml:\d+:\d+: agents\[0\]/);
    }
    // nudge and attach reach the session through the last good config too.
    const nudge = await city.gc(["nudge", "alpha", "hello-last-good"], { env: withVar });
    expect(nudge.code, nudge.stderr).toBe(0);
    expect(nudge.stderr).toMatch(/^gc: using the last good config: [^\n]*\n$/);
    await attachThenDetach(city, "hello-last-good");
    // Applying the file is refused: nothing changes.
    expect((await city.gc(["start", "--once"], { env: withVar })).code).toBe(2);
    expect((await city.gc(["reconcile"], { env: withVar })).code).toBe(2);

    // 2. A valid file, but this shell lacks the variable it interpolates.
    city.write(good);
    const st = await city.gc(["status", "--json"]);
    expect(st.code).toBe(0);
    expect(JSON.parse(st.stdout).sessions).toMatchObject([{ name: "alpha", running: true }]);
    const plain = await city.gc(["status"]);
    expect(plain.code).toBe(0);
    expect(plain.stderr.trim()).toMatch(/^gc: using the last good config: .*GC_TEST_VAR_\d+ is not set/);
    // Drift resolved with the variable read as empty would be a false "restart": unknown.
    const blind = await city.gc(["drift"]);
    expect(blind.code).toBe(0);
    expect(blind.stdout).toContain("alpha: unknown: this shell lacks variables the city file interpolates");
    expect((await city.gc(["drift"], { env: withVar })).stdout).toContain("alpha: in sync");
    const stop = await city.gc(["stop"]);
    expect(stop.code).toBe(0);
    const after = await city.gc(["status", "--json"]);
    expect(JSON.parse(after.stdout).sessions.filter((s: StatusRow) => s.running)).toEqual([]);

    // 3. gc stop while the file is invalid stops what the last good config started.
    expectOk(await city.gc(["start", "--once"], { env: withVar }), "gc start --once again");
    city.write(good.replace("start_command:", "start_comand:"));
    const stopInvalid = await city.gc(["stop"], { env: withVar });
    expect(stopInvalid.code, stopInvalid.stderr).toBe(0);
    expect(stopInvalid.stderr).toMatch(/^gc: using the last good config: [^\n]*\n$/);
    expect(stopInvalid.stdout).toContain("stopped 1 session: alpha");
    const none = await city.gc(["status", "--json"], { env: withVar });
    expect(JSON.parse(none.stdout).sessions.filter((s: StatusRow) => s.running)).toEqual([]);
  });
});

describe("gc drift of a map", () => {
  it("drift: a changed env value prints `env.GREETING: hello → bonjour`, not the whole map", {
    timeout: 120_000,
  }, async () => {
    const yaml = (greeting: string) => `workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "exec sleep 100000"
    env:
      GREETING: ${greeting}
      KEEP: same value
`;
    const city = makeCity(yaml("hello"));
    expectOk(await city.gc(["start", "--once"]), "gc start --once");
    city.write(yaml("bonjour"));
    const drift = await city.gc(["drift"]);
    expectOk(drift, "gc drift");
    expect(drift.stdout.split("\n")).toEqual([
      "alpha: core drift (restart)",
      "  env.GREETING: hello → bonjour",
      "",
    ]);
    const json = await city.gc(["drift", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        session: "alpha",
        drift: "core",
        fields: [{ field: "env.GREETING", from: "hello", to: "bonjour", effect: "restart" }],
        view: "local",
        callerEnvDiffers: false,
      },
    ]);
  });
});

describe("gc nudge -", () => {
  it("stdin: `echo text | gc nudge S -` delivers the text with one Enter (its trailing newline stripped)", {
    timeout: 120_000,
  }, async () => {
    // The agent prints each line it reads: an extra Enter would show as got[].
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: 'stty -echo; while IFS= read -r l; do echo "got[$l]"; done'
`);
    expectOk(await city.gc(["start", "--once"]), "gc start --once");
    expectOk(await city.gc(["nudge", "alpha", "-"], { input: "hello\n" }), "gc nudge alpha -");
    // Input is read in order: once the marker's line is printed, anything the first nudge
    // sent is on the screen before it.
    expectOk(await city.gc(["nudge", "alpha", "marker"]), "gc nudge alpha marker");
    const screen = await until("the marker line", async () => {
      const r = await city.gc(["peek", "alpha"]);
      return r.stdout.includes("got[marker]") && r.stdout;
    });
    expect(screen.split("\n").filter((l) => l.startsWith("got["))).toEqual(["got[hello]", "got[marker]"]);
  });
});

describe("work_dir outside the city", () => {
  it("work_dir: a missing parent is refused at validate time; create_work_dir: true creates it", {
    timeout: 120_000,
  }, async () => {
    const root = join(tmpdir(), `gc-wd-${process.pid}-${++seq}`);
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    const yaml = (opt: string) => `workspace:
  name: @NAME@
session:
  provider: subprocess
agents:
  - name: alpha
    start_command: "exec sleep 100000"
    work_dir: ${root}/deep/dir
${opt}`;
    const city = makeCity(yaml(""));
    const validate = await city.gc(["config", "validate"]);
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain("create_work_dir: true");
    expect((await city.gc(["start", "--once"])).code).toBe(2);
    expect(existsSync(root)).toBe(false);
    city.write(yaml("    create_work_dir: true\n"));
    expectOk(await city.gc(["start", "--once"]), "gc start --once");
    expect(existsSync(join(root, "deep", "dir"))).toBe(true);
  });
});
