/**
 * Fault injection against the built `gc` (issue 13): the controller SIGKILLed at random
 * moments of a 50-session start (tmux and subprocess), `gc stop` racing `gc start` at random
 * delays, an emptied city file under a running controller, and a damaged state.db. Every
 * trial checks the end state through the runtime itself (tmux / holder processes), not only
 * through gc's own report. Durations are logged so CI time stays visible.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { pidAlive } from "../../internal/proc/kill.js";
import { ownerKey } from "../../internal/runtime/identity.js";
import { defaultHolders } from "../../internal/runtime/subprocess/options.js";
import { GC_BIN, makeCity, storedCityId, type TestCity, until } from "../support/city.js";
import { has } from "../support/needs.js";

const hasTmux = has("tmux");
/** Trials per fault (the issue asks for 20). */
const TRIALS = 20;
/**
 * SIGKILL moments per provider (the 20): random points of the 50-session start, sorted,
 * each killing the controller of a fresh `gc start`. GC_TEST_FAULTS_KILLS overrides the count.
 */
const KILLS = Number(process.env.GC_TEST_FAULTS_KILLS ?? 20);
const SESSIONS = 50;

interface Row {
  name: string;
  state: string;
  running: boolean;
}

async function status(city: TestCity): Promise<{ controller: { running: boolean }; sessions: Row[] }> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function pool(provider: string, n: number, extra = ""): string {
  return `workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
  start_budget: ${n}
  concurrency: 8
${extra}agents:
  - name: w
    start_command: "exec sleep 100000"
    min_active_sessions: ${n}
    max_active_sessions: ${n}
`;
}

/** Every tmux session on the city's socket with its `@gc_city` tag ("" when untagged). */
function tmuxSessions(city: TestCity): { name: string; tag: string }[] {
  const r = city.tmux("list-sessions", "-F", "#{session_name}|#{@gc_city}");
  if (r.code !== 0) return [];
  return r.stdout
    .split("\n")
    .filter((l) => l && !l.startsWith("_gc_keeper|"))
    .map((l) => {
      const [name = "", tag = ""] = l.split("|");
      return { name, tag };
    });
}

/** Live (non-zombie) processes whose argv passes `match`. */
function processes(match: (argv: string[]) => boolean): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0");
      if (match(argv) && !/\) Z /.test(readFileSync(`/proc/${e}/stat`, "utf8"))) out.push(Number(e));
    } catch {
      // gone
    }
  }
  return out;
}

/** Live holder processes of the city's subprocess sessions. */
const holders = (city: TestCity) =>
  processes((argv) => argv.some((a) => a.endsWith("holder.js")) && argv.some((a) => a.startsWith(city.dir)));

/** Sessions held by the city's holder: live non-zombie processes whose parent is a holder. */
function heldSessions(city: TestCity): number {
  const hs = new Set(holders(city));
  let n = 0;
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const [state = "", ppid = ""] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state !== "Z" && hs.has(Number(ppid))) n++;
    } catch {
      // gone
    }
  }
  return n;
}

/** Live tmux processes (server or client) on the city's socket. */
const tmuxProcesses = (city: TestCity) =>
  processes((argv) => (argv[0] ?? "").endsWith("tmux") && argv.includes(city.socket));

function controllerPid(city: TestCity): number | undefined {
  try {
    return Number(readFileSync(join(city.dir, ".gc", "controller.pid"), "utf8").trim()) || undefined;
  } catch {
    return undefined;
  }
}

async function controllerGone(city: TestCity): Promise<boolean> {
  const pid = controllerPid(city);
  return pid === undefined || !(await pidAlive(pid));
}

/** `gc start` in the background (the CLI returns after the first pass; the controller stays). */
function startInBackground(city: TestCity): { done: Promise<number | null> } {
  const child = spawn(process.execPath, [GC_BIN, "--city", city.dir, "start"], {
    stdio: "ignore",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { done: new Promise((r) => child.on("close", (code) => r(code))) };
}

/**
 * The seed of the random fault moments. Every test logs it; `GC_TEST_FAULTS_SEED=<seed>`
 * replays the same moments (each test starts its generator from the seed).
 */
const SEED = Number(process.env.GC_TEST_FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 32));

/** A seeded generator of integers in [0, max) (mulberry32). */
function seeded(seed: number): (max: number) => number {
  let a = seed >>> 0;
  return (max) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * max);
  };
}

let rand = seeded(SEED);
beforeEach(({ task }) => {
  rand = seeded(SEED);
  console.log(`faults: "${task.name}" uses seed ${SEED} (replay: GC_TEST_FAULTS_SEED=${SEED})`);
});

describe.skipIf(!hasTmux)("faults", { timeout: 1_800_000 }, () => {
  // The 20 SIGKILL moments per provider, compounded: each kill lands on a start that is
  // itself recovering from the previous kills, so the last restart must clean up after all of
  // them. One more kill is then followed directly by `gc stop` (no restart in between).
  for (const provider of ["tmux", "subprocess"] as const) {
    it(`${provider}: ${KILLS} compounding SIGKILLs of the controller during a ${SESSIONS}-session start → exactly ${SESSIONS}, all owned, none quarantined; stop leaves nothing, also straight after a kill`, async () => {
      const t0 = Date.now();
      const city = makeCity(pool(provider, SESSIONS));
      // The city's id is created by its first start: read it when first needed.
      const tagOf = () => ownerKey(city.name, storedCityId(city.dir));
      const owned = () =>
        provider === "tmux" ? tmuxSessions(city).filter((s) => s.tag === tagOf()).length : heldSessions(city);
      /** Nothing of the city survives: gc's census, the controller, tmux, holders. */
      const expectNothingLeft = async (
        what: string,
        stop: { code: number | null; stdout: string; stderr: string },
      ) => {
        expect(stop.code, `${what}: ${stop.stdout}${stop.stderr}`).toBe(0);
        expect(stop.stdout, what).toContain("census: nothing");
        // The census is the runtime's, not gc's word: no process of the city survives.
        expect(await controllerGone(city), what).toBe(true);
        expect(tmuxProcesses(city), what).toEqual([]);
        expect(holders(city), what).toEqual([]);
        expect(owned(), what).toBe(0);
      };
      /** `gc start` in the background, SIGKILL of its controller once `target` sessions are owned. */
      let killed: number | undefined;
      const killAt = async (target: number) => {
        const run = startInBackground(city);
        const pid = await until(
          "new controller pid",
          async () => {
            const p = controllerPid(city);
            return p !== undefined && p !== killed && (await pidAlive(p)) && p;
          },
          120_000,
        );
        await until(`progress to ${target}`, () => owned() >= target, 300_000);
        process.kill(pid, "SIGKILL");
        killed = pid;
        await run.done;
      };
      // KILLS random moments of the start (0 = before the first session), in order.
      const targets = Array.from({ length: KILLS }, () => rand(SESSIONS)).sort((a, b) => a - b);
      const reached: number[] = [];
      for (const target of targets) {
        await killAt(target);
        reached.push(owned());
      }
      const again = await city.gc(["start"], { timeoutMs: 300_000 });
      expect(again.code, `restart after kills at ${targets}: ${again.stdout}${again.stderr}`).toBe(0);
      const st = await until(
        `${SESSIONS} running`,
        async () => {
          const s = await status(city);
          return s.sessions.filter((r) => r.running).length === SESSIONS && s;
        },
        300_000,
      );
      expect(st.sessions).toHaveLength(SESSIONS);
      expect(st.sessions.filter((r) => r.state === "quarantined")).toEqual([]);
      if (provider === "tmux") {
        const all = tmuxSessions(city);
        expect(all.filter((s) => s.tag !== tagOf())).toEqual([]); // nothing untagged
        expect(all).toHaveLength(SESSIONS);
      } else {
        // A few holders per city (concurrent starts are spread over them), never more than a root's slots.
        expect(holders(city).length).toBeGreaterThan(0);
        expect(holders(city).length).toBeLessThanOrEqual(defaultHolders());
        expect(heldSessions(city)).toBe(SESSIONS);
      }
      const restarts = (st.sessions as (Row & { restarts: number })[]).filter((r) => r.restarts > 0);
      console.log(
        `[faults] ${provider}: kills at ${targets.join(",")} (owned then ${reached.join(",")}); restarted: ${JSON.stringify(restarts.map((r) => [r.name, r.restarts]))}`,
      );
      // No session program ever ended: a controller's death is not a session restart.
      expect(restarts).toEqual([]);
      await expectNothingLeft("stop after the restart", await city.gc(["stop"], { timeoutMs: 300_000 }));
      // `gc stop` straight after a kill, with no controller to ask.
      killed = undefined;
      await killAt(rand(SESSIONS));
      await expectNothingLeft("stop after a kill", await city.gc(["stop"], { timeoutMs: 300_000 }));
      console.log(`[faults] ${provider} SIGKILL × ${KILLS + 1}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    });
  }

  it(`stop wins: gc stop at ${TRIALS} random delays after gc start leaves no controller and no session`, async () => {
    const t0 = Date.now();
    const city = makeCity(pool("tmux", 3));
    for (let trial = 0; trial < TRIALS; trial++) {
      const run = startInBackground(city);
      await new Promise((r) => setTimeout(r, rand(1500)));
      const stop = await city.gc(["stop"], { timeoutMs: 120_000 });
      await run.done;
      expect(stop.code, `trial ${trial}: ${stop.stdout}${stop.stderr}`).toBe(0);
      expect(await controllerGone(city), `trial ${trial}: controller survived`).toBe(true);
      expect(tmuxSessions(city), `trial ${trial}: sessions survived`).toEqual([]);
    }
    // A start invoked after the stop supersedes it.
    expect((await city.gc(["start"])).code).toBe(0);
    await until("3 running", async () => (await status(city)).sessions.filter((s) => s.running).length === 3);
    console.log(`[faults] stop wins × ${TRIALS}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });

  it("an emptied city.yaml under a running 10-session controller stops nothing; gc status explains", async () => {
    const city = makeCity(pool("tmux", 10));
    expect((await city.gc(["start"])).code).toBe(0);
    await until(
      "10 running",
      async () => (await status(city)).sessions.filter((s) => s.running).length === 10,
    );
    const yaml = readFileSync(join(city.dir, "city.yaml"), "utf8");
    writeFileSync(join(city.dir, "city.yaml"), "");
    const r = await city.gc(["reconcile"]);
    expect(r.stderr).toMatch(/city file is empty/);
    const st = await city.gc(["status"]);
    expect(st.stderr).toMatch(/last good config[\s\S]*city file is empty/);
    expect(tmuxSessions(city)).toHaveLength(10);
    // A half-written file (2 of the 10 pool instances) trips the mass-stop guard instead.
    writeFileSync(join(city.dir, "city.yaml"), yaml.replaceAll("_sessions: 10", "_sessions: 2"));
    const half = await city.gc(["reconcile"]);
    expect(half.stderr).toMatch(/NOT applied: it would stop 8 of 10 running sessions/);
    expect(half.code).toBe(1); // the file was not applied: not a success
    expect(tmuxSessions(city)).toHaveLength(10);
    const explained = await city.gc(["status"]);
    expect(explained.stdout).toContain("gc reconcile --allow-mass-stop");
    const json = JSON.parse((await city.gc(["status", "--json"])).stdout);
    expect(json.massStop.stops).toHaveLength(8);
    // The operator means it.
    const allowed = await city.gc(["reconcile", "--allow-mass-stop"]);
    expect(allowed.code, allowed.stderr).toBe(0);
    await until("2 left", () => tmuxSessions(city).length === 2);
    expect((await city.gc(["status"])).stdout).not.toContain("allow-mass-stop");
  });

  it("a bad edit under a running controller is logged once, not every pass; the last good approval policy stays; the fix is logged", async () => {
    const city = makeCity(pool("tmux", 1));
    expect((await city.gc(["start"])).code).toBe(0);
    await until("1 running", async () => (await status(city)).sessions.filter((s) => s.running).length === 1);
    const file = join(city.dir, "city.yaml");
    const yaml = readFileSync(file, "utf8");
    const lastPassAt = async () =>
      (
        JSON.parse((await city.gc(["status", "--json"])).stdout) as {
          controller: { lastPass?: { at: number } };
        }
      ).controller.lastPass?.at ?? 0;
    // Each write of the same bad text is one more pass of the controller over it.
    for (let i = 0; i < 3; i++) {
      const before = await lastPassAt();
      writeFileSync(file, `${yaml}agents: [\n`);
      await until(`pass ${i + 1} over the bad file`, async () => (await lastPassAt()) > before);
    }
    writeFileSync(file, yaml);
    const log = join(city.dir, ".gc", "controller.log");
    await until("the fix to be logged", () =>
      readFileSync(log, "utf8").includes("the city file is valid again"),
    );
    const text = readFileSync(log, "utf8");
    expect(text.match(/config error \(keeping the last good config\)/g)).toHaveLength(1);
    expect(text).not.toContain("approval policy failed");
    expect(tmuxSessions(city)).toHaveLength(1);
  });

  it("state.db of 0 bytes: moved aside loudly, running sessions adopted, a held one stays down until reset --all", async () => {
    const city = makeCity(pool("tmux", 3));
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    expect((await city.gc(["stop", "w-2"])).code).toBe(0);
    writeFileSync(join(city.dir, ".gc", "state.db"), "");
    for (const f of ["state.db-wal", "state.db-shm"]) spawnSync("rm", ["-f", join(city.dir, ".gc", f)]);
    const r = await city.gc(["start", "--once"]);
    expect(r.stderr).toMatch(/WARNING: state\.db was unusable \(empty \(0 bytes\)\)/);
    expect(r.stderr).toContain("gc session reset --all");
    expect(readdirSync(join(city.dir, ".gc")).some((f) => f.startsWith("state.db.corrupt-"))).toBe(true);
    const st = await status(city);
    expect(st.sessions.filter((s) => s.running).map((s) => s.name)).toEqual(["w-1", "w-3"]);
    expect(
      tmuxSessions(city)
        .map((s) => s.name)
        .sort(),
    ).toEqual(["w-1", "w-3"]);
    // Every later command says what to do.
    expect((await city.gc(["status"])).stderr).toContain("gc session reset --all");
    const reset = await city.gc(["session", "reset", "--all"]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain("recovery acknowledged");
    await until(
      "all 3 running",
      async () => (await status(city)).sessions.filter((s) => s.running).length === 3,
    );
    expect((await city.gc(["status"])).stderr).not.toContain("recovered");
  });

  it("state.db that is not a database: gc stop still stops everything from runtime tags", async () => {
    const city = makeCity(pool("tmux", 2));
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    writeFileSync(join(city.dir, ".gc", "state.db"), Buffer.alloc(8192, 0x5a));
    const stop = await city.gc(["stop"]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain("stopped 2 sessions");
    expect(stop.stdout).toContain("census: nothing");
    expect(stop.stderr).toContain("stopping from runtime tags only");
    // gc stop does not apply the city: the damaged file stays for gc start to recover.
    expect(existsSync(join(city.dir, ".gc", "state-recovered.json"))).toBe(false);
    expect(city.tmux("list-sessions").code).not.toBe(0);
  });
});
