#!/usr/bin/env node
// bench/holders: what N idle subprocess sessions cost in memory and how long N of them take
// to start, against tmux doing the same work in the same run.
//  - Memory: total RSS (VmRSS from /proc, summed) of the subprocess provider's holder
//    process(es) and, separately, of the session programs, against the 500 MB budget for 50
//    sessions (issue 17); the tmux server's RSS for the same N sessions is printed beside it.
//  - Starts: N parallel `provider.start` of the same program with the same readiness
//    (`readyPromptPrefix`: the prompt must be on screen) on the subprocess provider and on the
//    tmux provider (a fresh server each run); the ratio subprocess ÷ tmux, min and median of R
//    runs, interleaved. Every run starts from no holder / no tmux server.
// Needs `npm run build` and tmux.   node bench/holders.mjs [--sessions N] [--runs R] [--json]
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchStart, loadReport, target, verdict } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "50" },
    runs: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  },
});
benchStart("bench/holders", { json: values.json });
const N = Number(values.sessions);
const RUNS = Number(values.runs);
const BUDGET_MB = (500 * N) / 50;
const dist = new URL("../dist/", import.meta.url);
const sp = await import(new URL("internal/runtime/subprocess/index.js", dist).href).catch((e) => {
  console.error(`bench/holders: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
});
const tmux = await import(new URL("internal/runtime/tmux/index.js", dist).href);
if (spawnSync("tmux", ["-V"]).status !== 0) {
  console.error("bench/holders: tmux is required for the baseline");
  process.exit(1);
}

const root = mkdtempSync(join(tmpdir(), "gc-bench-holders-"));
const work = join(root, "work");
mkdirSync(work);
/** The same idle program and readiness for both providers: a prompt, then waiting on stdin. */
const config = {
  command: "printf 'ready> '; exec cat",
  workDir: work,
  env: {},
  readyPromptPrefix: "ready> ",
};
const names = Array.from({ length: N }, (_, i) => `idle-${i}`);
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

/** VmRSS of `pid` in MB (1e6 bytes), 0 when gone. */
function rssMB(pid) {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    return (kb * 1024) / 1e6;
  } catch {
    return 0;
  }
}

/** Every live pid with its parent pid and argv. */
function processTable() {
  const out = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const argv = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0");
      out.push({ pid: Number(e), ppid, argv });
    } catch {
      // gone
    }
  }
  return out;
}

/** Pids of `roots` and all their descendants. */
function withDescendants(table, roots) {
  const seen = new Set(roots);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of table) {
      if (!seen.has(p.pid) && seen.has(p.ppid)) {
        seen.add(p.pid);
        grew = true;
      }
    }
  }
  return [...seen];
}

async function subprocessRun(i, measureMemory) {
  const stateDir = join(root, `sp-${i}`);
  mkdirSync(stateDir, { mode: 0o700 });
  const p = new sp.SubprocessProvider({ city: `bench-${i}`, stateDir });
  const t0 = process.hrtime.bigint();
  await Promise.all(names.map((n) => p.start(n, config)));
  const t = ms(t0);
  if ((await p.listRunning("idle-")).length !== N) throw new Error("subprocess: not all running");
  let mem;
  if (measureMemory) {
    const table = processTable();
    const holders = table
      .filter(
        (q) => q.argv.some((a) => a.endsWith("holder.js")) && q.argv.some((a) => a.startsWith(stateDir)),
      )
      .map((q) => q.pid);
    const programs = withDescendants(table, holders).filter((pid) => !holders.includes(pid));
    mem = {
      holders: holders.length,
      holderMB: holders.reduce((a, pid) => a + rssMB(pid), 0),
      programs: programs.length,
      programMB: programs.reduce((a, pid) => a + rssMB(pid), 0),
    };
  }
  await Promise.all(names.map((n) => p.stop(n)));
  return { t, mem };
}

async function tmuxRun(i, measureMemory) {
  const socket = `gc-bench-holders-${process.pid}-${i}`;
  const p = tmux.createProvider({
    city: `bench-${i}`,
    cityDir: root,
    stateDir: root,
    settings: { socket },
  });
  try {
    const t0 = process.hrtime.bigint();
    await Promise.all(names.map((n) => p.start(n, config)));
    const t = ms(t0);
    if ((await p.listRunning("idle-")).length !== N) throw new Error("tmux: not all running");
    let mem;
    if (measureMemory) {
      const table = processTable();
      const servers = table
        .filter((q) => (q.argv[0] ?? "").endsWith("tmux") && q.argv.includes(socket) && q.ppid === 1)
        .map((q) => q.pid);
      mem = { serverMB: servers.reduce((a, pid) => a + rssMB(pid), 0) };
    }
    return { t, mem };
  } finally {
    await p.shutdownBackend?.().catch(() => undefined);
    await p.close?.();
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const runs = [];
let mem;
let tmuxMem;
try {
  for (let i = 0; i < RUNS; i++) {
    const a = await tmuxRun(i, i === 0);
    const b = await subprocessRun(i, i === 0);
    if (i === 0) {
      mem = b.mem;
      tmuxMem = a.mem;
    }
    runs.push({ tmuxMs: a.t, subprocessMs: b.t, ratio: b.t / a.t });
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

const ratios = runs.map((r) => r.ratio);
const report = {
  sessions: N,
  memory: {
    holders: mem.holders,
    holderMB: Math.round(mem.holderMB * 10) / 10,
    programs: mem.programs,
    programMB: Math.round(mem.programMB * 10) / 10,
    totalMB: Math.round((mem.holderMB + mem.programMB) * 10) / 10,
    budgetMB: BUDGET_MB,
    tmuxServerMB: Math.round(tmuxMem.serverMB * 10) / 10,
  },
  starts: runs.map((r) => ({
    tmuxMs: Math.round(r.tmuxMs),
    subprocessMs: Math.round(r.subprocessMs),
    ratio: Math.round(r.ratio * 100) / 100,
  })),
  ratioMin: Math.round(Math.min(...ratios) * 100) / 100,
  ratioMedian: Math.round(median(ratios) * 100) / 100,
  load: loadReport(),
};
if (values.json) console.log(JSON.stringify(report, null, 2));
else {
  const m = report.memory;
  console.log(`bench/holders: ${N} idle subprocess sessions (program: ${JSON.stringify(config.command)})`);
  console.log(
    `  RSS: holders ${m.holderMB} MB (${m.holders} process${m.holders === 1 ? "" : "es"}) + programs ${m.programMB} MB (${m.programs}) = ${m.totalMB} MB; budget ${m.budgetMB} MB: ${verdict(m.totalMB <= m.budgetMB)} (${Math.round((m.totalMB / m.budgetMB) * 100)}%)`,
  );
  console.log(`  (tmux server for the same ${N} sessions: ${m.tmuxServerMB} MB, programs not counted)`);
  for (const [i, r] of report.starts.entries())
    console.log(
      `  run ${i + 1}: ${N} starts: subprocess ${r.subprocessMs} ms, tmux ${r.tmuxMs} ms → ${r.ratio}×`,
    );
  console.log(
    `  starts subprocess ÷ tmux: min ${report.ratioMin}×, median ${report.ratioMedian}× ${target(report.ratioMedian, 1.5)}`,
  );
}
