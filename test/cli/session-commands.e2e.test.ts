/**
 * The session commands where an operator of exec-script, pool and tmux cities met edges
 * (docs/decisions.md, "Partial observation stops nothing", "CLI conventions"):
 * a provider that cannot be observed leaves RUNNING unknown ("?", null), never "no"; a command
 * cut short by Ctrl-C says "interrupted", as a JSON error under --json; an edit of a setting
 * the controller reads only at its start (daemon.interval…) is logged as waiting for a restart;
 * `gc session logs -f -n N` starts with N lines; `--events` shows a scaled-away session's events;
 * a queued nudge for a held-down session says what starts it.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { GC_BIN, type GcResult, makeCity, type TestCity } from "../support/city.js";

/** The exec mock: sessions are directories, nothing runs; MOCK_* switches make it misbehave. */
const MOCK = fileURLToPath(new URL("../fixtures/exec/mock-session.sh", import.meta.url));

interface Row {
  name: string;
  running: boolean | null;
}

describe("a provider that cannot be observed", () => {
  it("gc status and gc session list show RUNNING unknown, not no, and say why", {
    timeout: 60_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: exec:${MOCK}
agents:
  - name: a
    start_command: "sleep 1000"
  - name: b
    start_command: "sleep 1000"
`);
    const started = await city.gc(["start", "--once"]);
    expect(started.code, started.stderr).toBe(0);
    // The user's script prints a log line on stdout: its listing cannot be read.
    const env = { MOCK_GARBAGE: "list-running", MOCK_TEXT: "DEBUG: connecting" };

    const json = await city.gc(["status", "--json"], { env });
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout) as { sessions: Row[]; observeErrors: { error: string }[] };
    expect(doc.sessions.map((s) => [s.name, s.running])).toEqual([
      ["a", null],
      ["b", null],
    ]);
    expect(doc.observeErrors[0]?.error).toContain("DEBUG: connecting");

    const text = await city.gc(["status"], { env });
    expect(text.code, text.stderr).toBe(0);
    const rowA = text.stdout.split("\n").find((l) => l.startsWith("a "));
    expect(rowA?.split(/\s+/)[4]).toBe("?"); // NAME AGENT PROVIDER STATE RUNNING
    expect(text.stderr).toContain("cannot observe provider");

    const list = await city.gc(["session", "list"], { env });
    expect(list.code, list.stderr).toBe(0);
    const listA = list.stdout.split("\n").find((l) => l.startsWith("a "));
    expect(listA?.split(/\s+/)[3]).toBe("?"); // NAME AGENT STATE RUNNING
    expect(list.stderr).toContain("cannot observe provider");
    const listJson = await city.gc(["session", "list", "--json"], { env });
    const rows = (JSON.parse(listJson.stdout) as { sessions: Row[] }).sessions;
    expect(rows.map((s) => s.running)).toEqual([null, null]);

    // Once the script answers again, the sessions read as running.
    const fine = JSON.parse((await city.gc(["status", "--json"])).stdout) as { sessions: Row[] };
    expect(fine.sessions.map((s) => s.running)).toEqual([true, true]);
  });
});

/** Starts `gc --city DIR ...args` and hands back the child and its result. */
function startGc(city: TestCity, args: string[]) {
  const child = spawn(process.execPath, [GC_BIN, "--city", city.dir, ...args], {
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<GcResult>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

describe("Ctrl-C", () => {
  it("gc wait and gc nudge cut short say interrupted (GC_INTERRUPTED under --json), exit 130", {
    timeout: 90_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: py
    provider: python
`);
    const started = await city.gc(["start", "--once"]);
    expect(started.code, started.stderr).toBe(0);
    // Busy for longer than the test: neither the wait nor the nudge can finish by itself.
    const busy = await city.gc(["nudge", "py", "--now", "import time; time.sleep(600)"]);
    expect(busy.code, busy.stderr).toBe(0);

    const wait = startGc(city, ["wait", "py", "--idle", "--json"]);
    await expect
      .poll(async () => (await city.gc(["wait", "list", "py", "--json"])).stdout, { timeout: 30_000 })
      .toContain('"pending"');
    wait.child.kill("SIGINT");
    const w = await wait.done;
    expect(w.code).toBe(130);
    expect(w.stdout).toBe("");
    expect(JSON.parse(w.stderr)).toEqual({
      error: { code: "GC_INTERRUPTED", message: "interrupted by SIGINT" },
    });

    for (const json of [true, false]) {
      const nudge = startGc(city, ["nudge", "py", "print(1)", ...(json ? ["--json"] : [])]);
      // It holds the session's lock while it waits for the session to be idle.
      await expect
        .poll(async () => (await city.gc(["session", "list"])).stdout, { timeout: 30_000 })
        .toMatch(/gc nudge \(pid \d+\)/);
      nudge.child.kill("SIGINT");
      const n = await nudge.done;
      expect(n.code).toBe(130);
      if (json) expect(JSON.parse(n.stderr).error.code).toBe("GC_INTERRUPTED");
      else expect(n.stderr).toBe("gc: interrupted by SIGINT\n");
    }
  });
});

describe("daemon settings read at the controller's start", () => {
  it("an edit of daemon.interval under a running controller is logged as applying at its restart", {
    timeout: 90_000,
  }, async () => {
    const yaml = (interval: string) => `workspace:
  name: "@NAME@"
session:
  provider: subprocess
daemon:
  interval: ${interval}
agents:
  - name: sh
    provider: sh
`;
    const city = makeCity(yaml("1h"));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const log = () => readFileSync(join(city.dir, ".gc", "controller.log"), "utf8");
    const pid = readFileSync(join(city.dir, ".gc", "controller.pid"), "utf8").trim();
    city.write(yaml("2s"));
    await expect
      .poll(log, { timeout: 30_000 })
      .toContain(
        `daemon settings changed (daemon.interval 1h → 2s): they apply when the controller restarts — kill -TERM ${pid}, then gc start (sessions keep running)`,
      );
    // Back to what it runs with: said once.
    city.write(yaml("1h"));
    await expect
      .poll(log, { timeout: 30_000 })
      .toContain("daemon settings: the controller runs with what the city file says again");
    expect(log().match(/daemon settings changed/g)).toHaveLength(1);
  });
});

describe("gc session logs -f -n N", () => {
  it("starts with the last N complete lines, not N-1", { timeout: 60_000 }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: py
    provider: python
`);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    const turn = await city.gc(["run", "py", "print(40+2)"]);
    expect(turn.code, turn.stderr).toBe(0);
    const plain = await city.gc(["session", "logs", "py", "-n", "3"]);
    expect(plain.stdout).toBe(">>> print(40+2)\n42\n>>>\n");
    // Following holds back the prompt line (it may still grow): the 2 lines before it.
    const follower = startGc(city, ["session", "logs", "py", "-f", "-n", "2"]);
    let seen = "";
    follower.child.stdout.on("data", (d: Buffer) => (seen += d.toString()));
    await expect.poll(() => seen, { timeout: 15_000 }).toBe(">>> print(40+2)\n42\n");
    follower.child.kill("SIGINT");
    expect((await follower.done).code).toBe(130);
  });
});

describe("gc session logs --events of a session the city no longer has", () => {
  it("shows the kept events of a pool instance scaled away; an unknown name is still exit 3", {
    timeout: 60_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: w
    provider: sh
    min_active_sessions: 1
    max_active_sessions: 2
`);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect((await city.gc(["scale", "w", "2"])).code).toBe(0);
    expect((await city.gc(["scale", "w", "1"])).code).toBe(0);
    // Its record goes once it is stopped: the name is unknown to every other command.
    await expect.poll(async () => (await city.gc(["peek", "w-2"])).code, { timeout: 20_000 }).toBe(3);
    const r = await city.gc(["session", "logs", "w-2", "--events"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`w-2 is no longer in city ${city.name}`);
    expect(r.stdout).toMatch(/session\.state .*"to":"draining","reason":"no longer desired"/);
    const j = await city.gc(["session", "logs", "w-2", "--events", "--json"]);
    expect((JSON.parse(j.stdout) as { events: unknown[] }).events.length).toBeGreaterThan(2);
    const unknown = await city.gc(["session", "logs", "w-9", "--events"]);
    expect(unknown.code).toBe(3);
  });
});

describe("gc nudge --queue to a session nothing starts", () => {
  it("says what brings it back (held down by gc stop NAME); a running one gets no note", {
    timeout: 60_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: a
    provider: sh
  - name: b
    provider: sh
`);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect((await city.gc(["stop", "a"])).code).toBe(0);
    const held = await city.gc(["nudge", "a", "--queue", "--ttl", "5m", "echo hi"]);
    expect(held.code, held.stderr).toBe(0);
    expect(held.stderr).toContain(
      "gc: a is down and nothing starts it — it is held down (`gc stop a`): `gc session reset a` or `gc session restart a` starts it; the nudge is delivered once it runs, or becomes a dead letter after 5m",
    );
    const heldJson = await city.gc(["nudge", "a", "--queue", "--json", "echo hi"]);
    expect((JSON.parse(heldJson.stdout) as { parked: string | null }).parked).toContain("held down");
    const running = await city.gc(["nudge", "b", "--queue", "--json", "echo hi"]);
    expect((JSON.parse(running.stdout) as { parked: string | null }).parked).toBeNull();
    expect((await city.gc(["nudge", "b", "--queue", "echo hi"])).stderr).not.toContain("nothing starts it");
  });
});
