#!/usr/bin/env node
// bench/pass: what a steady-state controller pass costs over N running tmux sessions — the
// real controller (runController) on a real city file: config check, resolve, fingerprint,
// observe, plan, execute, and the operator step (nudges, approvals, waits, exec state). Each
// pass is poked over the control socket; its wall and CPU time come from the controller's own
// `lastPass` stats (what `gc status --json` shows) and its tmux commands are counted on the
// provider's control connection. The controller's RSS (this process: the controller runs in
// it) is read after the steady passes, with its peak (VmHWM, the converge included).
// Baselines measured in the same run: one raw control-mode `list-panes -a` round trip over
// the same sessions, and one forked `tmux list-panes -a`.
// Several sizes (the default: 200 and 1000) each run in a fresh process, so one size's
// memory is not counted in the next one's RSS.
// The idle city's cost (this process's CPU over --idle-seconds, a pass every 30 s) is printed
// as a share of one core.
//   node bench/pass.mjs [--sessions N[,N…]] [--passes P] [--idle-seconds S] [--profile FILE.cpuprofile] [--profile-idle FILE.cpuprofile]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { benchStart, GC_BIN, settle, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "200,1000" },
    passes: { type: "string", default: "15" },
    // The idle city's cost: seconds with nothing to do but a pass every 30 s (the default
    // interval) and the work watcher's looks; 0 skips it.
    "idle-seconds": { type: "string", default: "60" },
    // Writes a V8 CPU profile of the steady passes (this process: the controller runs in it).
    profile: { type: "string" },
    // The same of the idle seconds.
    "profile-idle": { type: "string" },
  },
});
const sizes = values.sessions.split(",").map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`bad --sessions ${values.sessions}`);
if (sizes.length > 1) {
  if (values.profile || values["profile-idle"]) throw new Error("--profile needs one --sessions size");
  // One fresh process per size (each prints its own load lines).
  for (const n of sizes) {
    const r = spawnSync(
      process.execPath,
      [
        fileURLToPath(import.meta.url),
        "--sessions",
        String(n),
        "--passes",
        values.passes,
        "--idle-seconds",
        values["idle-seconds"],
      ],
      { stdio: "inherit" },
    );
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  process.exit(0);
}
benchStart("bench/pass");
const N = sizes[0];
const P = Number(values.passes);
/** The controller's RSS target, MB (issue 38: at 1,000 sessions). */
const RSS_TARGET_MB = 150;
const dist = new URL("../dist/", import.meta.url);
const imp = (p) => import(new URL(p, dist).href);
const { openCity } = await imp("internal/controller/city.js");
const { runController, controllerPaths } = await imp("internal/controller/controller.js");
const { requestControl } = await imp("internal/controller/control.js");
const { createProviderFromSpec } = await imp("internal/runtime/registry/index.js");
const { openSqliteStore } = await imp("internal/session/sqlite-store.js");
const { PANE_FORMAT } = await imp("internal/runtime/tmux/sessions.js");
const { socketArgs } = await imp("internal/runtime/tmux/server.js");

const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-bench-pass-")));
const agents = Array.from(
  { length: N },
  (_, k) => `  - name: a${k}\n    start_command: "exec sleep 100000"\n`,
);
writeFileSync(
  join(dir, "city.yaml"),
  `workspace:\n  name: bpass${process.pid}\nsession:\n  provider: tmux\ndaemon:\n  interval: 1h\nagents:\n${agents.join("")}`,
);
const city = await openCity(
  { cwd: dir, env: process.env, cityDir: dir },
  {
    createProvider: createProviderFromSpec,
    openStore: (d) => openSqliteStore({ cityDir: d, singleTenant: true }),
  },
);
const ac = new AbortController();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const socket = controllerPaths(city.stateDir).socket;
const status = async () =>
  (await requestControl(socket, { op: "status" }, { timeoutMs: 30_000 })).find((m) => m.type === "status")
    .status;
let done;
/** tmux's argv for the city's server (`-L name` / `-S path`). */
let tmuxSocket;
try {
  done = runController(city, { signal: ac.signal, log: () => undefined });
  for (;;) {
    try {
      await status();
      break;
    } catch {
      await sleep(50);
    }
  }
  // Converge: the first passes start everything (the budget paces them, passes follow at once).
  for (let i = 0; ; i++) {
    await requestControl(socket, { op: "poke" }, { timeoutMs: 300_000 });
    const s = await status();
    if (s.lastPass && Object.keys(s.lastPass.actions).length === 0) break;
    if (i > 200) throw new Error("did not converge");
  }
  // Steady state: the last sessions started more than a second ago (tmux activity is in
  // whole seconds, so screens read in the second they last printed are read once more).
  await sleep(1100);
  await settle(`${N} sessions started`);
  const tmux = await city.providerFor("tmux");
  tmuxSocket = socketArgs(tmux.settings.socket);
  const control = tmux.control;
  let commands = 0;
  let lists = 0;
  const command = control.command.bind(control);
  const commandList = control.commandList.bind(control);
  control.command = (...a) => {
    commands++;
    if (process.env.BENCH_TRACE) console.log("tmux", a[0].join(" ").slice(0, 60));
    return command(...a);
  };
  control.commandList = (...a) => {
    lists++;
    if (process.env.BENCH_TRACE) console.log("tmux list of", a[0].length, a[0][0]?.join(" ").slice(0, 40));
    return commandList(...a);
  };
  const rows = [];
  const profiler = values.profile ? await startProfile() : undefined;
  for (let i = 0; i < P; i++) {
    const c0 = commands + lists;
    await requestControl(socket, { op: "poke" }, { timeoutMs: 60_000 });
    const s = await status();
    if (Object.keys(s.lastPass.actions).length !== 0)
      throw new Error(`not in sync: ${JSON.stringify(s.lastPass)}`);
    rows.push({ ...s.lastPass, tmux: commands + lists - c0 });
    if (process.env.BENCH_TRACE) console.log("-- pass", JSON.stringify(s.lastPass));
  }
  if (profiler) writeFileSync(values.profile, JSON.stringify(await profiler.stop()));
  const rssMB = process.memoryUsage().rss / 1e6;
  const peakMB = vmHwmMB();
  control.command = command;
  control.commandList = commandList;
  // Baselines over the same sessions.
  const raw = [];
  for (let i = 0; i < 20; i++) {
    const t0 = process.hrtime.bigint();
    await control.command(["list-panes", "-a", "-F", PANE_FORMAT]);
    raw.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const forked = [];
  for (let i = 0; i < 10; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync("tmux", [...tmuxSocket, "list-panes", "-a", "-F", PANE_FORMAT], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    forked.push(Number(process.hrtime.bigint() - t0) / 1e6);
    // The same work: a forked client that failed (no server) costs nothing to compare with.
    if (r.status !== 0 || r.stdout.toString().split("\n").length < N)
      throw new Error(`forked list-panes -a failed: ${r.stderr}`);
  }
  // The idle city: this process's CPU over the idle seconds (the controller and its work
  // watcher run in it), a pass poked every 30 s as the default interval would run one.
  const idleS = Number(values["idle-seconds"]);
  let idleShare;
  if (idleS > 0) {
    const idleProfiler = values["profile-idle"] ? await startProfile() : undefined;
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let s = 0; s < idleS; s++) {
      if (s > 0 && s % 30 === 0) await requestControl(socket, { op: "poke" }, { timeoutMs: 60_000 });
      await sleep(1000);
    }
    const c = process.cpuUsage(c0);
    if (idleProfiler) writeFileSync(values["profile-idle"], JSON.stringify(await idleProfiler.stop()));
    idleShare = ((c.user + c.system) / 1e3 / (Number(process.hrtime.bigint() - t0) / 1e6)) * 100;
  }
  const wall = median(rows.map((r) => r.durationMs));
  const cpu = median(rows.map((r) => r.cpuMs));
  const rt = median(rows.map((r) => r.tmux));
  console.log(
    `${N} in-sync tmux sessions, ${P} passes (medians): pass ${wall.toFixed(1)} ms wall ` +
      `(reconcile ${median(rows.map((r) => r.reconcileMs)).toFixed(1)}, operator ${median(rows.map((r) => r.operatorMs)).toFixed(1)}), ` +
      `${cpu.toFixed(1)} ms CPU (min ${Math.min(...rows.map((r) => r.cpuMs)).toFixed(1)}) ${target(cpu, 25, " ms")}, ` +
      `${rt} tmux commands per pass ${target(rt, 2, "")}`,
  );
  console.log(
    `controller RSS after the steady passes ${rssMB.toFixed(1)} MB ${target(rssMB, RSS_TARGET_MB, " MB")}` +
      `, peak ${peakMB.toFixed(1)} MB (converge included)`,
  );
  if (idleShare !== undefined)
    console.log(
      `idle city over ${idleS} s (a pass every 30 s, the work watcher's looks): ${idleShare.toFixed(2)} % of one core ${target(idleShare, 2, " %")}`,
    );
  console.log(
    `baselines: one control-mode list-panes -a ${median(raw).toFixed(2)} ms; one forked tmux list-panes -a ${median(forked).toFixed(2)} ms`,
  );
  console.log(
    `ratio: pass wall = ${(wall / median(raw)).toFixed(1)}× a control-mode list-panes -a, ` +
      `${(wall / median(forked)).toFixed(2)}× a forked list-panes -a`,
  );
} finally {
  ac.abort();
  await done?.catch(() => undefined);
  await city.close();
  spawnSync(process.execPath, [GC_BIN, "--city", dir, "stop"], {
    stdio: "ignore",
  });
  if (tmuxSocket) spawnSync("tmux", [...tmuxSocket, "kill-server"], { stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
}

/** Starts the V8 CPU profiler of this process; `stop()` resolves the profile. */
async function startProfile() {
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  return {
    async stop() {
      const { profile } = await session.post("Profiler.stop");
      session.disconnect();
      return profile;
    },
  };
}

/** This process's peak RSS (VmHWM), MB (1e6 bytes). */
function vmHwmMB() {
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
  return (kb * 1024) / 1e6;
}
