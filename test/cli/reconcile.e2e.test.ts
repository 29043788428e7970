/**
 * End-to-end: the built `gc` against temporary cities on real tmux — start, drift (core and
 * live), a killed session, a killed tmux server, a SIGKILLed controller mid-start, crash-loop
 * quarantine, foreign sessions, and a stop that leaves nothing behind.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PARSE_CACHE_FILE } from "../../internal/config/parse-cache.js";
import { pidAlive } from "../../internal/proc/kill.js";
import { GC_BIN, makeCity, type TestCity, until } from "../support/city.js";
import { has } from "../support/needs.js";

const hasTmux = has("tmux");

interface StatusRow {
  name: string;
  state: string;
  running: boolean;
  drift: string;
  nextStart?: string[];
  restarts: number;
  reason: string;
}

async function status(
  city: TestCity,
): Promise<{ controller: { running: boolean; pid: number | null }; sessions: StatusRow[] }> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const pidOf = (city: TestCity, session: string) =>
  readFileSync(join(city.dir, session, "pid"), "utf8").trim();

function twoAgents(aCommand = "exec sleep 100000", live = "echo live-1 > live.txt"): string {
  return `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "echo $$$$ > pid; ${aCommand}"
    work_dir: ./alpha
    pre_start: ["mkdir -p ./alpha"]
  - name: beta
    start_command: "echo $$$$ > pid; exec sleep 100000"
    work_dir: ./beta
    pre_start: ["mkdir -p ./beta"]
    session_live: ["${live}"]
`;
}

describe.skipIf(!hasTmux)("gc start/stop/status/drift on tmux", { timeout: 120_000 }, () => {
  it("start --once: starts every session; status reports them running and in sync", async () => {
    const city = makeCity(twoAgents());
    const r = await city.gc(["start", "--once"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("2 desired: 2 start");
    const st = await status(city);
    expect(st.controller.running).toBe(false);
    expect(st.sessions.map((s) => [s.name, s.state, s.running, s.drift])).toEqual([
      ["alpha", "running", true, "none"],
      ["beta", "running", true, "none"],
    ]);
  });

  it("drift: a command edit restarts exactly that session; a session_live edit restarts none", async () => {
    const city = makeCity(twoAgents());
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    const [a1, b1] = await until(
      "pid files",
      () => existsSync(join(city.dir, "beta", "pid")) && [pidOf(city, "alpha"), pidOf(city, "beta")],
    );
    city.write(twoAgents("exec sleep 100001"));
    const drift = await city.gc(["drift", "alpha"]);
    expect(drift.stdout).toContain("core drift");
    expect(drift.stdout).toContain("command");
    expect(drift.stdout).toContain("sleep 100001");
    const dry = await city.gc(["reconcile", "--dry-run"]);
    expect(dry.stdout).toContain("would restart alpha");
    expect(dry.stdout).not.toContain("beta");
    expect((await city.gc(["reconcile"])).code).toBe(0);
    const a2 = await until("alpha restarted", () => pidOf(city, "alpha") !== a1 && pidOf(city, "alpha"));
    expect(a2).not.toBe(a1);
    expect(pidOf(city, "beta")).toBe(b1);
    // A drift restart is not a crash restart: RESTARTS stays 0, the event log has the restart.
    expect((await status(city)).sessions.find((s) => s.name === "alpha")?.restarts).toBe(0);
    const events = await city.gc(["session", "logs", "alpha", "--events", "--json"]);
    expect(events.stdout).toContain("reconcile.restart");

    city.write(twoAgents("exec sleep 100001", "echo live-2 > live.txt"));
    const liveDrift = await city.gc(["drift", "beta", "--json"]);
    expect(JSON.parse(liveDrift.stdout)[0]).toMatchObject({ drift: "live" });
    const rec = await city.gc(["reconcile"]);
    expect(rec.stdout).toContain("run-live");
    expect(readFileSync(join(city.dir, "live.txt"), "utf8")).toBe("live-2\n");
    expect(pidOf(city, "alpha")).toBe(a2);
    expect(pidOf(city, "beta")).toBe(b1);
    expect((await status(city)).sessions.every((s) => s.drift === "none" && s.running)).toBe(true);
  });

  it("drift: a prompt edit restarts nothing and says it waits for the next start; gc session restart applies it", async () => {
    const agent = (prompt: string, live: string) => `workspace: { name: '@NAME@' }
session: { provider: tmux }
daemon: { interval: 1h }
agents:
  - name: writer
    start_command: "sh ../agent.sh"
    prompt_mode: argument
    prompt: ${JSON.stringify(prompt)}
    session_live: [${JSON.stringify(live)}]
    work_dir: ./writer
    pre_start: ["mkdir -p ./writer"]
`;
    const city = makeCity(agent("Review the parser.", "true"));
    // The prompt arrives as the last argument, after the beacon line.
    writeFileSync(
      join(city.dir, "agent.sh"),
      'echo $$ > pid; printf "%s" "$1" > prompt.txt; exec sleep 100000\n',
    );
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    const prompt = () => readFileSync(join(city.dir, "writer", "prompt.txt"), "utf8");
    const pid1 = await until(
      "the first start",
      () => existsSync(join(city.dir, "writer", "pid")) && pidOf(city, "writer"),
    );
    expect(prompt()).toContain("Review the parser.");
    const longer =
      "Review the lexer, then the parser; report what you find in both, with $(hostile) `input`.";
    // A prompt edit together with a session_live edit: run-live keeps the prompt pending.
    city.write(agent(longer, "true 2"));
    const text = await city.gc(["drift", "writer"]);
    expect(text.stdout).toContain("live drift (re-apply, no restart)");
    expect(text.stdout).toContain(
      "applied only when it next starts (gc session restart writer applies it now)",
    );
    expect(text.stdout).toMatch(
      /prompt: "Review the parser\." \(18 chars, #\w+\) → "Review the lexer, then the parser; report what y…" \(\d+ chars, #\w+\)/,
    );
    expect((await city.gc(["reconcile"])).code).toBe(0);
    expect(pidOf(city, "writer")).toBe(pid1);
    const json = JSON.parse((await city.gc(["drift", "writer", "--json"])).stdout)[0];
    expect(json).toMatchObject({ drift: "none", fields: [{ field: "prompt", effect: "next-start" }] });
    expect((await city.gc(["drift"])).stdout).toContain("writer: in sync (but see below)");
    expect((await city.gc(["status"])).stdout).toContain(
      "writer: prompt changed — applies at its next start (gc drift writer; gc session restart writer applies it now)",
    );
    expect((await status(city)).sessions[0]).toMatchObject({ drift: "none", nextStart: ["prompt"] });
    // The operator applies it now.
    const restarted = await city.gc(["session", "restart", "writer"]);
    expect(restarted.code, restarted.stderr).toBe(0);
    await until(
      "the restart",
      () => existsSync(join(city.dir, "writer", "pid")) && pidOf(city, "writer") !== pid1,
    );
    await until("the new prompt", () => prompt().includes(longer));
    const after = JSON.parse((await city.gc(["drift", "writer", "--json"])).stdout)[0];
    expect(after).toEqual({
      session: "writer",
      drift: "none",
      fields: [],
      view: "local",
      callerEnvDiffers: false,
    });
    expect((await city.gc(["drift", "writer"])).stdout.trim()).toBe("writer: in sync");
    expect((await status(city)).sessions[0]?.nextStart).toBeUndefined();
  });

  it("a killed session and a killed tmux server are brought back", async () => {
    const city = makeCity(twoAgents());
    await city.gc(["start", "--once"]);
    const a1 = await until(
      "alpha pid",
      () => existsSync(join(city.dir, "alpha", "pid")) && pidOf(city, "alpha"),
    );
    process.kill(Number(a1), "SIGKILL");
    await until("crash noticed", async () => {
      await city.gc(["reconcile"]);
      const st = await status(city);
      return st.sessions.find((s) => s.name === "alpha")?.running && pidOf(city, "alpha") !== a1;
    });
    const st = await status(city);
    expect(st.sessions.find((s) => s.name === "alpha")?.restarts).toBe(1); // one crash restart

    city.tmux("kill-server");
    await until("everything back after kill-server", async () => {
      await city.gc(["reconcile"]);
      return (await status(city)).sessions.every((s) => s.running);
    });
  });

  it("daemon.start_budget paces starts: gc start --once and the controller run the next pass at once, never at the interval", async () => {
    // interval 1h: anything that waited for the interval would never converge within the test.
    const agents = Array.from(
      { length: 5 },
      (_, i) => `  - name: b${i}\n    start_command: "exec sleep 100000"\n`,
    );
    const city = makeCity(
      `workspace:\n  name: @NAME@\nsession:\n  provider: tmux\ndaemon:\n  interval: 1h\n  start_budget: 2\nagents:\n${agents.join("")}`,
    );
    // Without a controller the passes the budget defers "to the next pass, at once" run here:
    // 2 + 2 + 1 starts, and nothing is left waiting.
    const once = await city.gc(["start", "--once", "--json"]);
    const { summary } = JSON.parse(once.stdout);
    expect(summary.actions).toEqual({ start: 5 });
    const up = () => status(city).then((st) => st.sessions.filter((x) => x.running).length);
    expect(await up()).toBe(5);
    expect((await city.gc(["stop"])).code).toBe(0);
    expect(await up()).toBe(0);
    const r = await city.gc(["start"]);
    expect(r.code).toBe(0);
    await until("all 5 running without waiting for the 1h interval", async () => (await up()) === 5);
    const st = JSON.parse((await city.gc(["status", "--json"])).stdout);
    expect(st.controller.lastPass).toMatchObject({ actions: expect.any(Object) });
    expect(st.controller.lastPass.durationMs).toBeGreaterThanOrEqual(st.controller.lastPass.reconcileMs);
  });

  it("infrastructure: a killed tmux server is recovered at once by the controller, counted apart from crashes", async () => {
    const city = makeCity(twoAgents()); // interval 1h: only the loss itself can trigger the pass
    expect((await city.gc(["start"])).code).toBe(0);
    await until("both running", async () => (await status(city)).sessions.every((s) => s.running));
    // The server's pid tells servers apart (session ids restart at $0 on a new server, so
    // the same creation order gives the same ids).
    const ids = () => city.tmux("list-sessions", "-F", "#{pid}:#{session_name}:").stdout;
    const before = ids().split(":")[0];
    city.tmux("kill-server");
    // Back without any gc command: the controller noticed the lost server and passed at once.
    await until(
      "both back on a new server",
      () => {
        const now = ids();
        return now.split(":")[0] !== before && now.includes(":alpha:") && now.includes(":beta:");
      },
      60_000,
    );
    const st = await until("both running again", async () => {
      const s = await status(city);
      return s.sessions.every((x) => x.running && x.state === "running") && s;
    });
    for (const s of st.sessions as (StatusRow & { infraLosses: number })[]) {
      expect(s.restarts, s.name).toBe(0); // not a crash restart
      expect(s.infraLosses, s.name).toBe(1);
    }
    const events = await city.gc(["session", "logs", "alpha", "--events", "--json"]);
    expect(events.stdout).toContain("session.infrastructure-lost");
    expect(events.stdout).not.toContain('"crashed"');
  });

  // Regression (issue 13): after the tmux server is killed and then the controller mid-start,
  // `w-2` was looked up as `=w-2` (no colon), which tmux resolves to `w-20` by prefix: every
  // start of w-2 met SessionExists and was recorded "adopted" while nothing ran.
  it("controller: SIGKILL mid-start of 20 sessions, then start again → exactly 20, no duplicates", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
  concurrency: 2
agents:
  - name: w
    start_command: "exec sleep 100000"
    ready_delay_ms: 300
    min_active_sessions: 20
    max_active_sessions: 20
`);
    const first = await city.gc(["start", "--json"]);
    expect(first.code).toBe(0);
    const ctl = JSON.parse(first.stdout).controller.pid as number;
    expect(ctl).toBeGreaterThan(0);
    // The first pass has finished; force a fresh start wave and kill the controller in the middle of it.
    city.tmux("kill-server");
    const poke = city.gc(["reconcile"]);
    await until(
      "some sessions restarting",
      () => city.tmux("list-sessions").stdout.split("\n").filter(Boolean).length >= 3,
      20_000,
    );
    process.kill(ctl, "SIGKILL");
    await poke;
    await until("controller dead", async () => !(await pidAlive(ctl)));
    const again = await city.gc(["start"]);
    expect(again.code).toBe(0);
    // Sessions the killed controller started but had not recorded are adopted as drifted and
    // restarted by the pass right after: poll until that settles.
    const st = await until(
      "all 20 running and recorded",
      async () => {
        const s = await status(city);
        return s.sessions.every((x) => x.running && x.state === "running" && x.drift === "none") && s;
      },
      60_000,
    );
    expect(st.controller.running).toBe(true);
    const names = st.sessions.map((s) => s.name);
    expect(names).toHaveLength(20);
    expect(new Set(names).size).toBe(20);
    const listed = city
      .tmux("list-sessions", "-F", "#{session_name}")
      .stdout.split("\n")
      .filter((n) => n.startsWith("w-"));
    expect(new Set(listed).size).toBe(listed.length);
  });

  it("crash loop: a command that dies during its start ends quarantined after daemon.quarantine.threshold failures while the others run", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
  backoff: { min: 100ms, max: 400ms }
  quarantine: { threshold: 2 }
agents:
  - name: good
    start_command: "exec sleep 100000"
  - name: crashy
    start_command: "echo missing-config-file; sleep 0.5; exit 3"
    ready_prompt_prefix: "never shown> "
`);
    // It dies while gc waits for its prompt: always a failed start. It lingers half a second
    // first: tmux 3.3a can discard what a program prints just before it exits (decisions.md).
    // The first pass failed to start crashy: gc start says so with exit 1 (the controller runs on).
    const started = await city.gc(["start"]);
    expect(started.code).toBe(1);
    expect(started.stdout + started.stderr).toMatch(/crashy/);
    const st = await until(
      "crashy quarantined",
      async () => {
        const s = await status(city);
        return s.sessions.find((x) => x.name === "crashy")?.state === "quarantined" && s;
      },
      60_000,
    );
    expect(st.sessions.find((x) => x.name === "good")).toMatchObject({ state: "running", running: true });
    const crashy = st.sessions.find((x) => x.name === "crashy")!;
    // threshold: 2 (the default is 5): quarantined at the second failure.
    expect(crashy.reason).toMatch(/^2 failures within the quarantine window/);
    expect(crashy.reason).not.toContain("exit status unknown"); // one consistent account
    const text = await city.gc(["status"]);
    expect(text.stdout).toMatch(/crashy: quarantined — .*failures/);
    // Its last words survive it: the restarted or quarantined session's screen is gone.
    expect(text.stdout).toMatch(/crashy: quarantined — .*last output: missing-config-file/);
    const logs = await city.gc(["session", "logs", "crashy"]);
    expect(logs.code).toBe(1);
    expect(logs.stderr).toMatch(
      /its output is gone with it; it last ended: .*last output: missing-config-file/,
    );
    expect(text.stdout).toContain("gc session reset crashy");
    // reset clears the quarantine
    const reset = await city.gc(["session", "reset", "crashy"]);
    expect(reset.code).toBe(0);
  });

  it("daemon.min_healthy_uptime: with 0s an exit with code 0 is a clean exit that restarts at once, never a failure", async () => {
    // With the default (10s) each of these 1-second runs would be a failure, and with
    // threshold 2 the session would be quarantined before its third restart.
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 300ms
  backoff: { min: 100ms, max: 400ms }
  quarantine: { threshold: 2 }
  min_healthy_uptime: 0s
agents:
  - name: clean
    start_command: "sleep 1; exit 0"
`);
    expect((await city.gc(["start"])).code).toBe(0);
    const row = await until(
      "three clean restarts (or a quarantine)",
      async () => {
        const r = (await status(city)).sessions.find((x) => x.name === "clean");
        return r && (r.restarts >= 3 || r.state === "quarantined") && r;
      },
      60_000,
    );
    expect(row.state).not.toBe("quarantined");
    expect(row.restarts).toBeGreaterThanOrEqual(3);
  });

  it("quarantine: fixing the agent's command in the city file lifts it and starts the session", async () => {
    const file = (cmd: string) => `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
  backoff: { min: 100ms, max: 200ms }
  quarantine: { threshold: 2 }
agents:
  - name: crashy
    start_command: "${cmd}"
    ready_delay_ms: 200
`;
    const city = makeCity(file("exit 127"));
    await city.gc(["start"]);
    const q = await until(
      "quarantined",
      async () => {
        const s = (await status(city)).sessions[0];
        return s?.state === "quarantined" && s;
      },
      60_000,
    );
    // One account of the failures (exit 127 = command not found), no "(exit status unknown)".
    expect(q.reason).toMatch(/^2 failures within the quarantine window/);
    expect(q.reason).not.toContain("exit status unknown");
    expect((await city.gc(["status"])).stdout).toContain("gc session reset crashy");
    city.write(file("exec sleep 100000"));
    // The controller's file watcher or this reconcile applies the fix; either way it starts.
    await city.gc(["reconcile"]);
    await until("running after the fix", async () => {
      const s = (await status(city)).sessions[0];
      return s?.state === "running" && s.running;
    });
    const events = await city.gc(["session", "logs", "crashy", "--events", "--json"]);
    expect(events.stdout).toContain("session.quarantine-lifted");
  });

  it("foreign sessions on the city socket are never touched; stop leaves nothing of ours", async () => {
    const city = makeCity(twoAgents());
    expect((await city.gc(["start"])).code).toBe(0);
    const st = await status(city);
    const ctl = st.controller.pid!;
    expect(city.tmux("new-session", "-d", "-s", "foreign", "sleep 100000").code).toBe(0);
    expect((await city.gc(["reconcile"])).code).toBe(0);
    expect(city.tmux("has-session", "-t", "=foreign").code).toBe(0);
    expect((await status(city)).sessions.map((s) => s.name)).toEqual(["alpha", "beta"]);
    city.tmux("kill-session", "-t", "=foreign");

    const stop = await city.gc(["stop"]);
    expect(stop.stderr).toBe("");
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain("nothing of city");
    expect(await pidAlive(ctl)).toBe(false);
    expect(city.tmux("list-sessions").code).not.toBe(0);
    expect(existsSync(join(city.dir, ".gc", "controller.sock"))).toBe(false);
    expect(existsSync(join(city.dir, ".gc", "controller.pid"))).toBe(false);
    expect(existsSync(`/tmp/tmux-${process.getuid?.() ?? 0}/${city.socket}`)).toBe(false);
  });

  it("restarting only the controller (SIGTERM, then gc start): sessions keep running and the new controller adopts them unchanged", async () => {
    const city = makeCity(twoAgents());
    expect((await city.gc(["start"])).code).toBe(0);
    const pids = await until(
      "both pids",
      () =>
        existsSync(join(city.dir, "alpha", "pid")) &&
        existsSync(join(city.dir, "beta", "pid")) && [pidOf(city, "alpha"), pidOf(city, "beta")],
    );
    const old = (await status(city)).controller.pid!;
    process.kill(old, "SIGTERM");
    await until("the old controller gone", async () => !(await pidAlive(old)));
    expect((await status(city)).sessions.map((x) => [x.name, x.running])).toEqual([
      ["alpha", true],
      ["beta", true],
    ]);
    const again = await city.gc(["start"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("controller started");
    const st = await status(city);
    expect(st.controller.pid).not.toBe(old);
    expect(st.sessions.map((x) => [x.name, x.running, x.restarts, x.drift])).toEqual([
      ["alpha", true, 0, "none"],
      ["beta", true, 0, "none"],
    ]);
    expect([pidOf(city, "alpha"), pidOf(city, "beta")]).toEqual(pids);
  });

  it("a second gc start reports the running controller; an invalid edit keeps sessions running", async () => {
    const city = makeCity(twoAgents());
    const first = await city.gc(["start"]);
    expect(first.stdout).toContain("controller started");
    const second = await city.gc(["start"]);
    expect(second.stdout).toContain("controller already running");
    const a1 = await until(
      "alpha pid",
      () => existsSync(join(city.dir, "alpha", "pid")) && pidOf(city, "alpha"),
    );
    city.write("workspace:\n  name: @NAME@\nagents:\n  - name: alpha\n    bogus_key: 1\n");
    const validate = await city.gc(["config", "validate"]);
    expect(validate.code).toBe(2);
    // The file watcher's pass met the invalid file: the controller logs it (once).
    await expect
      .poll(() => readFileSync(join(city.dir, ".gc", "controller.log"), "utf8"), { timeout: 20_000 })
      .toContain("bogus_key");
    const st = await city.gc(["status", "--json"]);
    const parsed = JSON.parse(st.stdout);
    expect(parsed.configError).toContain("bogus_key");
    expect(parsed.sessions.filter((s: StatusRow) => s.running).map((s: StatusRow) => s.name)).toEqual([
      "alpha",
      "beta",
    ]);
    expect(pidOf(city, "alpha")).toBe(a1);
  });

  it("status beside a running controller: DRIFT is the controller's resolution (its environment); without one, this shell's; status never writes last-good.yaml", async () => {
    const v = `GC_DRIFT_VAR_${process.pid}`;
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "exec sleep 100000"
    env:
      MODE: \${${v}}
`);
    const started = await city.gc(["start"], { env: { [v]: "one" } });
    expect(started.code).toBe(0);
    const lastGood = join(city.dir, ".gc", "last-good.yaml");
    const kept = readFileSync(lastGood, "utf8");
    // A city that interpolates the environment is never parse-cached (the value would reach
    // disk), and readers never write the cache either.
    const parseCache = join(city.dir, ".gc", PARSE_CACHE_FILE);
    expect(existsSync(parseCache)).toBe(false);
    const inSync = await until("alpha running, controller up", async () => {
      const st = await city.gc(["status", "--json"], { env: { [v]: "two" } });
      const p = JSON.parse(st.stdout);
      return p.controller.running && p.sessions[0]?.running && p;
    });
    // The controller resolved MODE=one: that is what it acts on, so nothing drifts.
    expect(inSync.sessions.map((s: StatusRow) => [s.name, s.drift])).toEqual([["alpha", "none"]]);
    process.kill(inSync.controller.pid, "SIGKILL");
    await until("controller gone", async () => !(await pidAlive(inSync.controller.pid)));
    // No controller: this shell's MODE=two differs from the start's.
    const alone = JSON.parse((await city.gc(["status", "--json"], { env: { [v]: "two" } })).stdout);
    expect(alone.sessions.map((s: StatusRow) => [s.name, s.drift])).toEqual([["alpha", "core"]]);
    // An edit of the city file: read commands leave last-good.yaml alone.
    city.write(readFileSync(join(city.dir, "city.yaml"), "utf8").replace("100000", "100001"));
    expect((await city.gc(["status"], { env: { [v]: "one" } })).code).toBe(0);
    expect((await city.gc(["drift"], { env: { [v]: "one" } })).code).toBe(0);
    expect(readFileSync(lastGood, "utf8")).toBe(kept);
    expect(existsSync(parseCache)).toBe(false);
  });
});

/**
 * A status output with its live fields blanked: ages ("12s ago", `lastActivity`) and the last
 * pass's timings move between two calls; everything else must be the same.
 */
function steady(out: string, json: boolean): string {
  if (!json)
    return out
      .replace(/\d+[smh] ago/g, "ago")
      .replace(/\b(working|idle|needs-input|error|unknown) \d+[smh]\b/g, "$1")
      .replace(/ +/g, " ");
  const doc = JSON.parse(out);
  doc.controller.lastPass = null;
  for (const s of doc.sessions) {
    s.lastActivity = null;
    if (s.work) s.work.since = null;
  }
  return JSON.stringify(doc);
}

describe.skipIf(!hasTmux)("gc status from the controller's snapshot", { timeout: 120_000 }, () => {
  it("status (text and --json) built by the running controller equals the one status builds itself (--config), before and after a refused mass stop", async () => {
    const agents = ["alpha", "beta", "gamma"];
    const file = (names: string[]) => `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
${names.map((n) => `  - name: ${n}\n    start_command: "exec sleep 100000"\n`).join("")}`;
    const city = makeCity(file(agents));
    expect((await city.gc(["start"])).code).toBe(0);
    // Idle too (no output for a while), so the work state cannot change between two snapshots.
    await until("all running and idle", async () => {
      const st = await status(city);
      return (
        st.controller.running &&
        st.sessions.filter((s) => s.running && (s as { work?: { state: string } }).work?.state === "idle")
          .length === 3
      );
    });
    const own = ["--config", join(city.dir, "city.yaml")]; // --config: status builds its own snapshot
    const compare = async () => {
      for (const json of [true, false]) {
        const args = json ? ["status", "--json"] : ["status"];
        const [viaController, itself] = [await city.gc(args), await city.gc([...own, ...args])];
        expect(viaController.code).toBe(0);
        expect(itself.code).toBe(0);
        expect(steady(viaController.stdout, json)).toBe(steady(itself.stdout, json));
        expect(viaController.stderr).toBe(itself.stderr);
      }
    };
    await compare();
    // The controller re-reads the edited file: it refuses to stop two of three sessions, and
    // both snapshots show the refusal and the sessions the file no longer declares.
    city.write(file(["alpha"]));
    await until("mass stop refused", async () => {
      const r = await city.gc(["status", "--json"]);
      return JSON.parse(r.stdout).massStop !== null;
    });
    await compare();
    const text = (await city.gc(["status"])).stdout;
    expect(text).toContain("city file NOT applied");
  });

  it("gc drift says the city file is not applied while the controller's mass-stop guard refuses it, and exits 1", async () => {
    const file = (names: string[]) => `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
${names.map((n) => `  - name: ${n}\n    start_command: "exec sleep 100000"\n`).join("")}`;
    const city = makeCity(file(["alpha", "beta", "gamma"]));
    expect((await city.gc(["start"])).code).toBe(0);
    await until("all running", async () => {
      const st = await status(city);
      return st.controller.running && st.sessions.filter((s) => s.running).length === 3;
    });
    const before = await city.gc(["drift"]);
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).not.toContain("NOT applied");
    city.write(file(["alpha"]));
    await until("mass stop refused", async () => {
      const r = await city.gc(["status", "--json"]);
      return JSON.parse(r.stdout).massStop !== null;
    });
    // The sentence gc status prints (massStopText), word for word.
    const refusal = (await city.gc(["status"])).stdout.split("\n").find((l) => l.includes("NOT applied"));
    expect(refusal).toContain("city file NOT applied: it would stop 2 of 3 running sessions (beta, gamma)");
    const text = await city.gc(["drift"]);
    expect(text.code).toBe(1);
    expect(text.stdout.split("\n")[0]).toBe(refusal);
    expect(text.stdout).toContain("alpha: in sync");
    const json = await city.gc(["drift", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).map((d: { session: string }) => d.session)).toEqual(["alpha"]);
    expect(json.stderr).toContain(refusal!);
  });
});

describe.skipIf(!hasTmux)("gc scale on tmux", { timeout: 120_000 }, () => {
  it("scale: a pool grows and shrinks between min and max with stable names; out-of-bounds is a usage error", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: solo
    start_command: "exec sleep 100000"
  - name: w
    start_command: "exec sleep 100000"
    min_active_sessions: 1
    max_active_sessions: 3
`);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    const running = async () =>
      (await status(city)).sessions
        .filter((s) => s.running)
        .map((s) => s.name)
        .sort();
    expect(await running()).toEqual(["solo", "w-1"]);
    expect((await city.gc(["scale", "w", "3"])).code).toBe(0);
    expect(await running()).toEqual(["solo", "w-1", "w-2", "w-3"]);
    expect((await city.gc(["scale", "w", "2"])).code).toBe(0);
    expect(await running()).toEqual(["solo", "w-1", "w-2"]);
    // A city stopped by gc stop stays stopped: the scale waits for the next gc start.
    expect((await city.gc(["stop"])).code).toBe(0);
    const whileStopped = await city.gc(["scale", "w", "3"]);
    expect(whileStopped.code).toBe(0);
    expect(whileStopped.stdout).toContain("the city is stopped (gc stop)");
    expect(await running()).toEqual([]);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect(await running()).toEqual(["solo", "w-1", "w-2", "w-3"]);
    expect((await city.gc(["scale", "w", "2"])).code).toBe(0);
    expect(await running()).toEqual(["solo", "w-1", "w-2"]);
    const tooMany = await city.gc(["scale", "w", "4"]);
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toContain("between 1 and 3");
    expect((await city.gc(["scale", "solo", "2"])).code).toBe(2);
    const typo = await city.gc(["scale", "ww", "2"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('did you mean "w"');
    expect(await running()).toEqual(["solo", "w-1", "w-2"]);
  });

  it("scale down drains the instance it stops: Ctrl-C first, so a busy agent can wind down; the others are untouched", async () => {
    // Each instance notes the SIGINT it gets (a turn cut short cleanly) and exits; a stop
    // without a drain (kill-session) would end it with SIGHUP and no note.
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
  drain_timeout: 1m
agents:
  - name: w
    start_command: "sh ./agent.sh"
    min_active_sessions: 1
    max_active_sessions: 3
`);
    writeFileSync(
      join(city.dir, "agent.sh"),
      'trap \'echo "$GC_SESSION_NAME" >> "$GC_CITY_PATH/interrupted"; exit 0\' INT\nwhile :; do sleep 1; done\n',
    );
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect((await city.gc(["scale", "w", "3"])).code).toBe(0);
    const shrink = await city.gc(["scale", "w", "1"]);
    expect(shrink.code, shrink.stderr).toBe(0);
    const interrupted = () =>
      readFileSync(join(city.dir, "interrupted"), "utf8").split("\n").filter(Boolean).sort();
    expect(interrupted()).toEqual(["w-2", "w-3"]);
    expect((await status(city)).sessions.filter((s) => s.running).map((s) => s.name)).toEqual(["w-1"]);
  });
});

describe("an interrupted pass", { timeout: 120_000 }, () => {
  it("start --once: Ctrl-C during a start exits 130 (interrupted), and the next pass starts it", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: slow
    start_command: "exec sleep 100000"
    pre_start: ["if [ ! -e go ]; then sleep 60; fi"]
`);
    const child = spawn(process.execPath, [GC_BIN, "--city", city.dir, "start", "--once"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const done = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await until(
        "the start to be under way",
        async () => (await status(city)).sessions[0]?.state === "starting",
      );
      child.kill("SIGINT");
      expect(await done, stderr).toBe(130);
    } finally {
      child.kill("SIGKILL");
    }
    writeFileSync(join(city.dir, "go"), "");
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect((await status(city)).sessions[0]).toMatchObject({ state: "running", running: true });
  });
});
