/**
 * End-to-end (issue 19): one `auto` city with agents on tmux, subprocess and the exec
 * reference script, driven by the built `gc` — it starts; moving an agent from tmux to
 * subprocess restarts it there and it is gone from tmux; a SIGKILLed controller's successor
 * recovers every route (one route record deleted, so it is re-learnt from the backends'
 * listings) and adopts without duplicates; `gc stop` leaves a clean census on every backend.
 * `gc status` and `gc config show` show each session's backend and why. A `hybrid` city
 * (tmux local, subprocess remote) moves an agent across `remote_match` the same way.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pidAlive } from "../../internal/proc/kill.js";
import { makeCity, type TestCity, until } from "../support/city.js";

const SCRIPT = fileURLToPath(new URL("../../contrib/session-scripts/gc-session-tmux", import.meta.url));
const EXEC = `exec:${SCRIPT}`;
const onPath = (bin: string) => spawnSync("sh", ["-c", 'command -v "$1"', "sh", bin]).status === 0;

interface Row {
  name: string;
  provider: string;
  backend: string;
  state: string;
  running: boolean | null;
}

async function sessions(city: TestCity): Promise<Row[]> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { sessions: Row[] }).sessions;
}

const pidOf = (city: TestCity, s: string) => readFileSync(join(city.dir, s, "pid"), "utf8").trim();

/** Agents t (auto.default = tmux), s (subprocess) and x (the exec script); `tOn` moves t. */
function cityYaml(tOn?: string): string {
  const agent = (name: string, on?: string) => `  - name: ${name}
    start_command: "echo $$$$ > pid; exec sleep 100000"
    work_dir: ./${name}
    pre_start: ["mkdir -p ./${name}"]
${on ? `    session: "${on}"\n` : ""}`;
  return `workspace:
  name: @NAME@
session:
  provider: auto
  auto: { default: tmux }
daemon:
  interval: 1h
agents:
${agent("t", tOn)}${agent("s", "subprocess")}${agent("x", EXEC)}`;
}

/** Pids of live processes that belong to the city: its sessions (env) or its servers (argv). */
function census(dir: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${e}/environ`, "utf8").split("\0");
      const argv = readFileSync(`/proc/${e}/cmdline`, "utf8");
      if (env.includes(`GC_CITY_PATH=${dir}`) || argv.includes(dir)) out.push(Number(e));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

describe.skipIf(!onPath("tmux") || !onPath("jq"))("auto: tmux + subprocess + exec in one city", () => {
  it("starts, moves an agent across backends, survives a controller SIGKILL, stops clean", {
    timeout: 240_000,
  }, async () => {
    const city = makeCity(cityYaml());
    const show = await city.gc(["config", "show"]);
    expect(show.code).toBe(0);
    const runsOn = (s: string) =>
      show.stdout.match(new RegExp(`session ${s} \\(.*\\n\\s+runs on\\s+(.*)`))?.[1];
    expect(runsOn("t")).toBe("tmux — session.auto.default (the agent declares no session provider)");
    expect(runsOn("s")).toBe("subprocess — the agent's session provider");
    expect(runsOn("x")).toBe(`${EXEC} — the agent's session provider`);

    const start = await city.gc(["start"]);
    expect(start.stderr).toBe("");
    expect(start.code).toBe(0);
    const placed = (rows: Row[]) =>
      rows
        .map((r) => [r.name, r.provider, r.backend, r.running])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    await until("all three running", async () => (await sessions(city)).every((r) => r.running));
    expect(placed(await sessions(city))).toEqual([
      ["s", "auto", "subprocess", true],
      ["t", "auto", "tmux", true],
      ["x", "auto", EXEC, true],
    ]);
    const table = await city.gc(["status"]);
    expect(table.stdout).toMatch(/\bt\s+t\s+auto→tmux\s+running/);
    expect(table.stdout).toMatch(/\bs\s+s\s+auto→subprocess\s+running/);
    expect(city.tmux("has-session", "-t", "=t").code).toBe(0);
    const t1 = await until("t pid", () => existsSync(join(city.dir, "t", "pid")) && pidOf(city, "t"));
    const s1 = pidOf(city, "s");
    const x1 = pidOf(city, "x");

    // Drift: t moves from tmux to subprocess — restarted there, gone from tmux.
    city.write(cityYaml("subprocess"));
    const drift = await city.gc(["drift", "t"]);
    // The running controller's watcher may already have applied the move (a start on the
    // city's existing holder is quick): then drift is in sync and t runs on subprocess below.
    if (!drift.stdout.includes("backend")) expect(drift.stdout).toContain("t: in sync");
    expect((await city.gc(["reconcile"])).code).toBe(0);
    await until("t restarted on subprocess", async () => {
      const t = (await sessions(city)).find((r) => r.name === "t");
      return t?.running && t.backend === "subprocess" && pidOf(city, "t") !== t1;
    });
    expect(await pidAlive(Number(t1))).toBe(false);
    expect(city.tmux("has-session", "-t", "=t").code).not.toBe(0);
    expect([pidOf(city, "s"), pidOf(city, "x")]).toEqual([s1, x1]);
    const t2 = pidOf(city, "t");

    // Controller SIGKILL; one route record lost too: the next controller re-learns it from the
    // backends' listings and adopts every session — nothing restarted, nothing doubled.
    const ctl = Number(readFileSync(join(city.dir, ".gc", "controller.pid"), "utf8").trim());
    process.kill(ctl, "SIGKILL");
    await until("controller gone", async () => !(await pidAlive(ctl)));
    rmSync(join(city.dir, ".gc", "routes", "x"));
    const again = await city.gc(["start"]);
    expect(again.code).toBe(0);
    const rows = await sessions(city);
    expect(placed(rows)).toEqual([
      ["s", "auto", "subprocess", true],
      ["t", "auto", "subprocess", true],
      ["x", "auto", EXEC, true],
    ]);
    expect([pidOf(city, "t"), pidOf(city, "s"), pidOf(city, "x")]).toEqual([t2, s1, x1]);
    const programs = census(city.dir).filter((p) => [t2, s1, x1].includes(String(p)));
    expect(programs.sort()).toEqual([t2, s1, x1].map(Number).sort());

    // Stop: a clean census on every backend.
    const stop = await city.gc(["stop"]);
    expect(stop.stderr).toBe("");
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain("stopped 3 sessions: s, t, x");
    await until("nothing of the city left", () => census(city.dir).length === 0);
    expect(city.tmux("list-sessions").code).not.toBe(0);
    expect((await sessions(city)).every((r) => !r.running)).toBe(true);
  });

  it("hybrid: remote_match splits the city; an agent moved across the pattern restarts on the other side", {
    timeout: 180_000,
  }, async () => {
    const yaml = (match: string) => `workspace:
  name: @NAME@
session:
  provider: hybrid
  hybrid: { local: tmux, remote: subprocess, remote_match: "${match}" }
daemon:
  interval: 1h
agents:
${["mayor", "w1"]
  .map(
    (n) => `  - name: ${n}
    start_command: "echo $$$$ > pid; exec sleep 100000"
    work_dir: ./${n}
    pre_start: ["mkdir -p ./${n}"]
`,
  )
  .join("")}`;
    const city = makeCity(yaml("^w"));
    const show = await city.gc(["config", "show"]);
    expect(show.code).toBe(0);
    const runsOn = (text: string, s: string) =>
      text.match(new RegExp(`session ${s} \\(.*\\n\\s+runs on\\s+(.*)`))?.[1];
    expect(runsOn(show.stdout, "mayor")).toBe('tmux — name does not match session.hybrid.remote_match "^w"');
    expect(runsOn(show.stdout, "w1")).toBe('subprocess — name matches session.hybrid.remote_match "^w"');

    const start = await city.gc(["start"]);
    expect(start.stderr).toBe("");
    expect(start.code).toBe(0);
    const placed = async () =>
      (await sessions(city))
        .map((r) => [r.name, r.provider, r.backend, r.running])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    await until("both running", async () => (await sessions(city)).every((r) => r.running));
    expect(await placed()).toEqual([
      ["mayor", "hybrid", "tmux", true],
      ["w1", "hybrid", "subprocess", true],
    ]);
    expect(city.tmux("has-session", "-t", "=mayor").code).toBe(0);
    expect(city.tmux("has-session", "-t", "=w1").code).not.toBe(0);
    const m1 = await until(
      "mayor pid",
      () => existsSync(join(city.dir, "mayor", "pid")) && pidOf(city, "mayor"),
    );
    const w1 = await until("w1 pid", () => existsSync(join(city.dir, "w1", "pid")) && pidOf(city, "w1"));

    // The pattern now takes the mayor too: drained on tmux, restarted on subprocess; w1 untouched.
    city.write(yaml("^(w|mayor$)"));
    expect(runsOn((await city.gc(["config", "show"])).stdout, "mayor")).toBe(
      'subprocess — name matches session.hybrid.remote_match "^(w|mayor$)"',
    );
    expect((await city.gc(["reconcile"])).code).toBe(0);
    await until("mayor restarted on subprocess", async () => {
      const m = (await sessions(city)).find((r) => r.name === "mayor");
      return m?.running && m.backend === "subprocess" && pidOf(city, "mayor") !== m1;
    });
    expect(await pidAlive(Number(m1))).toBe(false);
    expect(city.tmux("has-session", "-t", "=mayor").code).not.toBe(0);
    expect(pidOf(city, "w1")).toBe(w1);
    expect(await placed()).toEqual([
      ["mayor", "hybrid", "subprocess", true],
      ["w1", "hybrid", "subprocess", true],
    ]);

    const stop = await city.gc(["stop"]);
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain("stopped 2 sessions: mayor, w1");
    await until("nothing of the city left", () => census(city.dir).length === 0);
  });

  it("a backend that cannot be observed: status names it, healthy sessions start, nothing is stopped", {
    timeout: 120_000,
  }, async () => {
    // An exec script whose listing fails while ./down exists (the construction probe, which
    // lists with a prefix, still passes).
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: auto
  auto: { default: subprocess }
daemon:
  interval: 1h
agents:
  - name: s
    start_command: "exec sleep 100000"
  - name: x
    session: "exec:./flaky.sh"
    start_command: "exec sleep 100000"
`);
    const script = join(city.dir, "flaky.sh");
    writeFileSync(
      script,
      '#!/bin/sh\ncase "$1" in\n  list-running) if [ -z "$2" ] && [ -e "$(dirname "$0")/down" ]; then echo "backend down" >&2; exit 1; fi; exit 0;;\n  *) exit 2;;\nesac\n',
    );
    chmodSync(script, 0o755);
    writeFileSync(join(city.dir, "down"), "");
    // s starts; x's backend could not be observed, so the city is not yet what the file says:
    // exit 1, and the summary says so instead of "in sync".
    const first = await city.gc(["start", "--once"]);
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/2 desired: 1 start, 1 waiting; 1 provider not observed/);
    // What waits is named, with why.
    expect(first.stdout).toMatch(/^wait {5}x: provider exec:.*flaky.sh could not be observed$/m);
    const down = `auto backend exec:${script}`;
    const st = await city.gc(["status", "--json"]);
    const doc = JSON.parse(st.stdout) as {
      sessions: Row[];
      observeErrors: { provider: string; error: string }[];
    };
    expect(doc.observeErrors).toEqual([{ provider: down, error: expect.stringContaining("backend down") }]);
    expect(doc.sessions.map((r) => [r.name, r.backend, r.running])).toEqual([
      ["s", "subprocess", true],
      // Its backend was not looked at: whether it runs is unknown, not "no".
      ["x", `exec:${script}`, null],
    ]);
    expect((await city.gc(["status"])).stderr).toContain(`cannot observe provider ${down}: `);
    // s is no longer wanted, but the observation is partial: it keeps running.
    city.write(readFileSync(join(city.dir, "city.yaml"), "utf8").replace(/ {2}- name: s\n.*\n/, ""));
    const again = await city.gc(["start", "--once"]);
    expect(again.stdout).toContain("2 waiting");
    expect((await sessions(city)).find((r) => r.name === "s")?.running).toBe(true);
  });

  it("gc stop with a backend that cannot be listed: what it runs is not recorded stopped", {
    timeout: 120_000,
  }, async () => {
    // x runs on the reference tmux script behind a wrapper whose full listing fails while
    // ./down exists.
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: auto
  auto: { default: subprocess }
daemon:
  interval: 1h
agents:
  - name: s
    start_command: "exec sleep 100000"
  - name: x
    session: "exec:./wrap.sh"
    start_command: "exec sleep 100000"
`);
    const wrap = join(city.dir, "wrap.sh");
    writeFileSync(
      wrap,
      `#!/bin/sh\nif [ "$1" = list-running ] && [ -z "$2" ] && [ -e "$(dirname "$0")/down" ]; then echo "backend down" >&2; exit 1; fi\nexec ${SCRIPT} "$@"\n`,
    );
    chmodSync(wrap, 0o755);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect((await sessions(city)).map((r) => [r.name, r.running])).toEqual([
      ["s", true],
      ["x", true],
    ]);
    const state = async (name: string) =>
      (
        JSON.parse((await city.gc(["session", "list", "--json"])).stdout) as {
          sessions: { name: string; state: string }[];
        }
      ).sessions.find((r) => r.name === name)?.state;
    writeFileSync(join(city.dir, "down"), "");
    const stop = await city.gc(["stop"]);
    expect(stop.code).toBe(1);
    expect(stop.stdout).toMatch(/^stopped 1 session: s$/m);
    expect(stop.stderr).toMatch(/backend down/);
    expect(stop.stderr).toContain(
      "not recorded stopped (a backend of auto could not be listed; they may still run): x",
    );
    expect(await state("s")).toBe("stopped");
    expect(await state("x")).toBe("running");
    // Once the backend answers, gc stop stops it and records it.
    rmSync(join(city.dir, "down"));
    const again = await city.gc(["stop"]);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^stopped 1 session: x$/m);
    expect(await state("x")).toBe("stopped");
  });
});
