/**
 * Disruptions an operator running a night of 20 tmux and subprocess sessions met
 * (docs/decisions.md, "Last good config", "Store faults", "Waits are on one incarnation"): a
 * dashboard whose city file turns invalid while it runs keeps its sessions on the last good
 * config (restart works, drift is the last good one's), as every CLI command does.
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { startDashboard as dashboard, getJson, post } from "../dashboard/support.js";
import { GC_BIN, makeCity } from "../support/city.js";

const CITY = `workspace:
  name: "@NAME@"
session:
  provider: subprocess
agents:
  - name: a
    start_command: "sh -i"
  - name: b
    start_command: "sh -i"
`;

describe("a city file that turns invalid under a running dashboard", () => {
  it("leaves its sessions on the last good config: restart works, drift is not 'not in the city file'", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(CITY);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const d = await dashboard(city, ["--interval", "200ms"]);
    // Opened valid; then an edit breaks the file (the controller keeps the last good config).
    city.write(`${CITY}agents: [ {name: \n`);
    await expect
      .poll(async () => (await getJson<{ configError: string | null }>(d, "/api/status")).configError, {
        timeout: 30_000,
      })
      .toMatch(/city\.yaml/);

    const detail = await getJson<{ drift: { drift: string; reason?: string } }>(d, "/api/sessions/a");
    expect(detail.drift).toMatchObject({ session: "a", drift: "none", fields: [] });

    const r = await post(d, "/api/sessions/a/restart");
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json).toMatchObject({ session: "a", restarted: true, generation: 2 });

    // The grid keeps the file's order (the last good config's), with the error in the banner.
    const st = await getJson<{ sessions: { name: string }[]; configError: string }>(d, "/api/status");
    expect(st.sessions.map((s) => s.name)).toEqual(["a", "b"]);
  });
});

describe("state.db deleted while the controller runs", () => {
  it("the controller writes its open copy back at its next pass: holds, records and queued nudges survive", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(CITY);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    expect((await city.gc(["stop", "b"])).code).toBe(0);
    const queued = await city.gc(["nudge", "b", "--queue", "echo queued"]);
    expect(queued.code, queued.stderr).toBe(0);
    // `rm .gc/state.db`: its -wal and -shm stay, still used by the controller's connection.
    rmSync(join(city.dir, ".gc", "state.db"));
    // A pass of the running controller (this command may create an empty state.db first).
    const pass = await city.gc(["reconcile"]);
    expect(pass.code, pass.stderr).toBe(0);
    expect(readFileSync(join(city.dir, ".gc", "controller.log"), "utf8")).toContain(
      "was deleted while the controller ran: written back from its open copy",
    );
    const list = await city.gc(["session", "list", "--json"]);
    expect(list.code, list.stderr).toBe(0);
    const rows = (
      JSON.parse(list.stdout) as { sessions: { name: string; state: string; generation: number }[] }
    ).sessions;
    expect(rows.map((r) => [r.name, r.state, r.generation])).toEqual([
      ["a", "running", 1],
      ["b", "suspended", 1],
    ]);
    const nudges = await city.gc(["nudge", "list", "--json"]);
    expect((JSON.parse(nudges.stdout) as { nudges: { text: string }[] }).nudges.map((n) => n.text)).toEqual([
      "echo queued",
    ]);
  });
});

describe("gc wait on a session restarted between two of its polls", () => {
  it("--exit completes (the program it waited on ended), though the controller already runs it again", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: subprocess
agents:
  - name: s
    start_command: "sleep 100000"
`);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const child = spawn(
      process.execPath,
      [GC_BIN, "--city", city.dir, "wait", "s", "--exit", "--timeout", "20s", "--json"],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    // The wait is recorded (its incarnation read): freeze it, so the restart happens between polls.
    await expect
      .poll(async () => JSON.parse((await city.gc(["wait", "list", "--json"])).stdout).waits.length, {
        timeout: 30_000,
      })
      .toBe(1);
    expect(child.pid).toBeDefined();
    process.kill(child.pid as number, "SIGSTOP");
    const restarted = await city.gc(["session", "restart", "s"]);
    process.kill(child.pid as number, "SIGCONT");
    expect(restarted.code, restarted.stderr).toBe(0);
    expect(restarted.stdout).toContain("generation 2");
    expect(await exited).toBe(0);
    expect(JSON.parse(out)).toMatchObject({
      status: "completed",
      reason: "the session ended (the controller has started it again)",
    });
  });
});
