/**
 * End-to-end: a city on the subprocess provider keeps its sessions in its holder processes
 * (one, or a few when sessions start together); when a holder dies the controller notices at
 * once (interval 1h here), restarts the sessions it held on a new holder, and counts the loss
 * as infrastructure, not as crashes; the other sessions are untouched.
 * `gc stop` leaves no holder behind — also when a program exited by itself (its session stays
 * held, for its exit status and last screen, until stopped).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { killPids } from "../../internal/proc/kill.js";
import { makeCity, type TestCity, until } from "../support/city.js";

interface StatusRow {
  name: string;
  state: string;
  running: boolean;
  restarts: number;
  infraLosses: number;
}

async function sessions(city: TestCity): Promise<StatusRow[]> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { sessions: StatusRow[] }).sessions;
}

/** Live holder processes of the city. */
function holders(city: TestCity): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0");
      if (argv.some((a) => a.endsWith("holder.js")) && argv.some((a) => a.startsWith(city.dir)))
        out.push(Number(e));
    } catch {
      // gone
    }
  }
  return out;
}

const holderOf = (city: TestCity, session: string): number =>
  (
    JSON.parse(
      readFileSync(join(city.dir, ".gc", "subprocess", "sessions", session, "session.json"), "utf8"),
    ) as { holderPid: number }
  ).holderPid;

/**
 * A subprocess city of one agent with its controller running and the session up. The
 * controller's interval is an hour: within a test it acts only when something asks it to.
 */
async function startedSolo(name: string, command: string, extra = ""): Promise<TestCity> {
  const city = makeCity(
    `workspace:\n  name: @NAME@\nsession:\n  provider: subprocess\ndaemon:\n  interval: 1h\nagents:\n  - name: ${name}\n    start_command: ${JSON.stringify(command)}\n${extra}`,
  );
  onTestFinished(async () => killPids(holders(city)));
  expect((await city.gc(["start"])).code).toBe(0);
  await until(`${name} running`, async () => (await sessions(city))[0]?.running === true);
  return city;
}

describe("subprocess holders (e2e)", { timeout: 180_000 }, () => {
  it("a killed holder's sessions are recovered at once by the controller, counted as infrastructure; stop leaves no holder", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "exec sleep 100000"
  - name: beta
    start_command: "exec sleep 100000"
  - name: gamma
    start_command: "exec sleep 100000"
`);
    onTestFinished(async () => killPids(holders(city)));
    expect((await city.gc(["start"])).code).toBe(0);
    await until("all running", async () => (await sessions(city)).every((s) => s.running));
    const names = ["alpha", "beta", "gamma"];
    const before = new Map(names.map((n) => [n, holderOf(city, n)]));
    expect(holders(city).sort()).toEqual([...new Set(before.values())].sort());
    const holder = before.get("alpha")!;
    const lostOnes = names.filter((n) => before.get(n) === holder);
    const untouched = names.filter((n) => before.get(n) !== holder);

    process.kill(holder, "SIGKILL");
    const rows = await until(
      "the lost sessions back on a new holder",
      async () => {
        const s = await sessions(city);
        const live = holders(city);
        return (
          s.length === 3 &&
          s.every((x) => x.running && x.state === "running") &&
          !live.includes(holder) &&
          lostOnes.every((n) => live.includes(holderOf(city, n))) &&
          s
        );
      },
      60_000,
    );
    for (const s of rows) {
      expect(s.restarts, s.name).toBe(0);
      expect(s.infraLosses, s.name).toBe(lostOnes.includes(s.name) ? 1 : 0);
    }
    for (const n of untouched) expect(holderOf(city, n), n).toBe(before.get(n));
    const events = await city.gc(["session", "logs", "alpha", "--events", "--json"]);
    expect(events.stdout).toContain("session.infrastructure-lost");
    expect(events.stdout).not.toContain('"crashed"');

    expect((await city.gc(["stop"])).code).toBe(0);
    expect(holders(city)).toEqual([]);
  });

  it("stop reaps sessions whose program exited by itself, so the holder exits too", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
agents:
  - name: stays
    start_command: "exec sleep 100000"
  - name: quits
    start_command: "sleep 1; exit 3"
`);
    onTestFinished(async () => killPids(holders(city)));
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    await until("quits to have exited, stays to run", async () => {
      const s = await sessions(city);
      return (
        s.find((x) => x.name === "stays")?.running === true &&
        s.find((x) => x.name === "quits")?.running === false
      );
    });
    expect(holders(city).length).toBeGreaterThan(0);

    const stop = await city.gc(["stop"]);
    expect(stop.stderr).toBe("");
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain(`census: nothing of city ${city.name} is left running`);
    expect(holders(city)).toEqual([]);
    const left = join(city.dir, ".gc", "subprocess", "sessions");
    expect(existsSync(left) ? readdirSync(left) : []).toEqual([]);
  });

  it("kill and restart of a city's only session (its holder ends with it) are the operator's, not infrastructure losses", async () => {
    const city = await startedSolo("solo", "exec sleep 100000");
    const restart = await city.gc(["session", "restart", "solo"]);
    expect(restart.code, restart.stderr).toBe(0);
    const first = holders(city);
    // The kill asks the controller for a pass once it is done (the interval is an hour).
    const kill = await city.gc(["session", "kill", "solo"]);
    expect(kill.code, kill.stderr).toBe(0);
    expect(kill.stdout).toContain("the controller starts it again now");
    await until("solo back on a new holder", async () => {
      const h = holders(city);
      return (await sessions(city))[0]?.running === true && h.length === 1 && h[0] !== first[0];
    });
    const [row] = await sessions(city);
    expect(row).toMatchObject({ state: "running", restarts: 0, infraLosses: 0 });
    const events = await city.gc(["session", "logs", "solo", "--events"]);
    expect(events.stdout).not.toContain("infrastructure");
    expect(events.stdout).toContain("killed by operator");
    expect((await city.gc(["stop"])).code).toBe(0);
  });

  it("a session that dies under gc run is restarted once the run has released it, not at the next interval", async () => {
    const city = await startedSolo("py", "exec python3 -i -q");
    const run = await city.gc(["run", "py", "import os; os._exit(3)"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("session py ended during the turn");
    await until("py restarted", async () => {
      const [row] = await sessions(city);
      return row?.running === true && row.restarts === 1;
    });
    expect((await city.gc(["stop"])).code).toBe(0);
  });

  it("an idle wait on a session killed and at once started again by the controller ends 'terminated', not 'completed'", async () => {
    const city = await startedSolo("py", "exec python3 -i -q", '    ready_prompt_prefix: ">>> "\n');
    expect((await city.gc(["nudge", "py", "--now", "import time; time.sleep(60)"])).code).toBe(0);
    const waiting = city.gc(["wait", "py", "--idle", "--timeout", "60s", "--json"]);
    await until("the idle wait to be recorded", async () =>
      (
        JSON.parse((await city.gc(["wait", "list", "--json"])).stdout) as { waits: { kind: string }[] }
      ).waits.some((w) => w.kind === "idle"),
    );
    // The kill asks the controller for a pass: the next incarnation is up, idle at its prompt.
    expect((await city.gc(["session", "kill", "py"])).code).toBe(0);
    const w = await waiting;
    expect(w.code, `${w.stdout}\n${w.stderr}`).toBe(5);
    expect(JSON.parse(w.stdout)).toMatchObject({ status: "terminated" });
    expect((await city.gc(["stop"])).code).toBe(0);
  });

  it("commands over many sessions print nothing but their answer (no listener warnings on stderr)", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  start_budget: 12
agents:
  - name: w
    start_command: "exec sleep 100000"
    min_active_sessions: 12
    max_active_sessions: 12
`);
    onTestFinished(async () => killPids(holders(city)));
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    for (const argv of [
      ["session", "list", "--json"],
      ["status", "--json"],
    ]) {
      const r = await city.gc(argv);
      expect({ argv, code: r.code, stderr: r.stderr }).toEqual({ argv, code: 0, stderr: "" });
      expect(
        (JSON.parse(r.stdout) as { sessions: { running: boolean }[] }).sessions.filter((x) => x.running),
      ).toHaveLength(12);
    }
    expect((await city.gc(["stop"])).code).toBe(0);
  });
});
