#!/usr/bin/env node
// bench/tmux: the tmux provider (one persistent control-mode connection) against what a
// fork-per-call design does (one `tmux` process per operation), measured side by side in one
// run on one private server: N has-session/isRunning, N set+get metadata, N capture-pane/peek.
// Prints wall time and CPU (this process + forked children + the tmux server) per operation
// and the ratios; then listRunning + snapshot over S live sessions against one forked
// `list-panes -a` and against S forked `has-session` probes. Each operation is also done as
// raw control-mode round trips (the same tmux commands written by hand to one `tmux -C`
// client, nothing else): the floor a control-mode provider can reach; the provider/raw ratio
// is what gc adds (target ≤ 2×). Needs `npm run build` first.
//   node bench/tmux.mjs [--ops N] [--sessions S] [--json]
import { execFile, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "200" },
    sessions: { type: "string", default: "200" },
    json: { type: "boolean", default: false },
  },
});
const N = Number(values.ops);
const S = Number(values.sessions);
const dist = new URL("../dist/", import.meta.url);
let createProvider;
try {
  ({ createProvider } = await import(new URL("internal/runtime/tmux/index.js", dist).href));
} catch (e) {
  console.error(`bench/tmux: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
}
const sh = promisify(execFile);
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

const socket = `gc-bench-${process.pid}`;
const root = mkdtempSync(join(tmpdir(), "gc-bench-tmux-"));
const provider = createProvider({ city: "bench", cityDir: root, stateDir: root, settings: { socket } });
const TMUX = ["-L", socket];
const tmux = (...args) => sh("tmux", [...TMUX, ...args]);

let serverPid = 0;
let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  await provider.close().catch(() => undefined);
  try {
    execFileSync("tmux", [...TMUX, "kill-server"], { stdio: "ignore" });
  } catch {
    // already gone
  }
  try {
    unlinkSync(provider.control.socketPath);
  } catch {
    // removed already
  }
  rmSync(root, { recursive: true, force: true });
}
process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));

/** CPU ms of a /proc stat line: utime+stime (+ cutime+cstime for waited children). */
function statCpuMs(pid, withChildren) {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0);
  return (ticks * 1000) / CLK_TCK;
}

/**
 * A minimal control-mode client: `tmux -C attach` to `target`; `send(line)` resolves at the
 * reply's `%end`/`%error`. No quoting, no parsing beyond framing: the floor of a round trip.
 */
function rawControl(target) {
  const child = spawn("tmux", [...TMUX, "-C", "attach-session", "-t", target], {
    stdio: ["pipe", "pipe", "ignore"],
  });
  const waiters = [];
  let buf = "";
  let attached;
  const ready = new Promise((r) => {
    attached = r;
  });
  child.stdout.setEncoding("utf8").on("data", (d) => {
    buf += d;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith("%end ") || line.startsWith("%error ")) {
        if (attached) {
          attached();
          attached = undefined;
        } else waiters.shift()?.();
      }
    }
  });
  return {
    ready,
    send: (line) =>
      new Promise((r) => {
        waiters.push(r);
        child.stdin.write(`${line}\n`);
      }),
    close: () => child.kill("SIGTERM"),
  };
}

/** Wall and CPU (self, forked children, tmux server) of `n` sequential runs of `op`. */
async function measure(n, op) {
  for (let i = 0; i < Math.min(20, n); i++) await op(i); // warm up
  const self0 = process.cpuUsage();
  const children0 = statCpuMs("self", true) - statCpuMs("self", false);
  const server0 = statCpuMs(serverPid, false);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op(i);
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const self = process.cpuUsage(self0);
  const cpuMs =
    (self.user + self.system) / 1000 +
    (statCpuMs("self", true) - statCpuMs("self", false) - children0) +
    (statCpuMs(serverPid, false) - server0);
  return { wallMs, cpuMs, perOpWallUs: (wallMs * 1000) / n, perOpCpuUs: (cpuMs * 1000) / n };
}

let raw;
const results = { ops: N, sessions: S, tmux: "", perOperation: [], fleet: {} };
try {
  await provider.start("bench-0", {
    command: "i=1; while [ $i -le 60 ]; do echo line-$i; i=$((i+1)); done; exec cat",
    workDir: root,
    env: {},
  });
  [serverPid] = (await provider.control.command(["display-message", "-p", "#{pid}"])).map(Number);
  results.tmux = provider.control.version;
  const T = "=bench-0";
  raw = rawControl(T);
  await raw.ready;

  const cases = [
    {
      op: "has-session / isRunning",
      provider: () => provider.isRunning("bench-0"),
      forked: () => tmux("has-session", "-t", T),
      raw: () => raw.send(`has-session -t ${T}`),
    },
    {
      op: "set + get metadata",
      provider: async (i) => {
        await provider.setMeta("bench-0", "k", `value-${i}`);
        await provider.getMeta("bench-0", "k");
      },
      forked: async (i) => {
        await tmux("set-option", "-t", `${T}:`, "@k", `value-${i}`);
        await tmux("show-options", "-t", `${T}:`, "-v", "@k");
      },
      raw: async (i) => {
        await raw.send(`set-option -t ${T}: @k value-${i}`);
        await raw.send(`show-options -t ${T}: -v @k`);
      },
    },
    {
      op: "capture-pane / peek (50 lines)",
      provider: () => provider.peek("bench-0", 50),
      forked: () => tmux("capture-pane", "-p", "-t", `${T}:`, "-S", "-50"),
      raw: () => raw.send(`capture-pane -p -t ${T}: -S -50`),
    },
  ];
  for (const c of cases) {
    const viaProvider = await measure(N, c.provider);
    const viaFork = await measure(N, c.forked);
    const viaRaw = await measure(N, c.raw);
    results.perOperation.push({
      op: c.op,
      provider: viaProvider,
      forked: viaFork,
      raw: viaRaw,
      overRaw: viaProvider.wallMs / viaRaw.wallMs,
      wallRatio: viaFork.wallMs / viaProvider.wallMs,
      cpuRatio: viaFork.cpuMs / Math.max(viaProvider.cpuMs, 0.001),
    });
  }

  // A fleet of S live sessions.
  const names = Array.from({ length: S }, (_, i) => `fleet-${String(i).padStart(3, "0")}`);
  const t0 = Date.now();
  for (let i = 0; i < names.length; i += 10) {
    await Promise.all(
      names
        .slice(i, i + 10)
        .map((n) => provider.start(n, { command: "exec sleep 3600", workDir: root, env: {} })),
    );
  }
  const startMs = Date.now() - t0;
  const R = 20;
  const listed = await provider.listRunning("fleet-");
  if (listed.length !== S) throw new Error(`listRunning saw ${listed.length} of ${S} sessions`);
  const list = await measure(R, () => provider.listRunning(""));
  const snap = await measure(R, () => provider.snapshot(""));
  const forkList = await measure(R, () => tmux("list-panes", "-a", "-F", "#{session_name}|#{pane_dead}"));
  const forkProbe = await measure(1, () =>
    Promise.all([]).then(async () => {
      for (const n of names) await tmux("has-session", "-t", `=${n}`);
    }),
  );
  results.fleet = {
    sessions: S,
    startAllMs: startMs,
    listRunningMs: list.wallMs / R,
    snapshotMs: snap.wallMs / R,
    forkedListPanesMs: forkList.wallMs / R,
    forkedProbePerSessionMs: forkProbe.wallMs,
    forkedProbeCpuMs: forkProbe.cpuMs,
    snapshotCpuMs: snap.cpuMs / R,
  };
} finally {
  raw?.close();
  await cleanup();
}

if (values.json) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const f = (x, d = 1) => x.toFixed(d);
  console.log(`bench/tmux: tmux ${results.tmux}, N=${N} sequential operations each way, one private server`);
  console.log(
    "operation                        provider/op (wall, cpu)   forked tmux/op (wall, cpu)   ratio (wall, cpu)",
  );
  for (const r of results.perOperation) {
    console.log(
      `${r.op.padEnd(32)} ${f(r.provider.perOpWallUs).padStart(8)} µs ${f(r.provider.perOpCpuUs).padStart(8)} µs   ${f(r.forked.perOpWallUs).padStart(9)} µs ${f(r.forked.perOpCpuUs).padStart(9)} µs   ${f(r.wallRatio).padStart(6)}× ${f(r.cpuRatio).padStart(6)}×`,
    );
  }
  console.log("\noperation                        raw control-mode/op (wall)   provider ÷ raw (target ≤ 2×)");
  for (const r of results.perOperation) {
    console.log(
      `${r.op.padEnd(32)} ${f(r.raw.perOpWallUs).padStart(8)} µs                  ${f(r.overRaw, 2).padStart(6)}×`,
    );
  }
  const fl = results.fleet;
  console.log(`\nfleet of ${fl.sessions} live sessions (started in ${fl.startAllMs} ms):`);
  console.log(
    `  provider listRunning (one list-panes -a over the control connection): ${f(fl.listRunningMs, 2)} ms`,
  );
  console.log(
    `  provider snapshot (running + attached + activity, same one call):      ${f(fl.snapshotMs, 2)} ms, cpu ${f(fl.snapshotCpuMs, 2)} ms`,
  );
  console.log(
    `  forked: one tmux list-panes -a:                                        ${f(fl.forkedListPanesMs, 2)} ms`,
  );
  console.log(
    `  forked: one has-session per session:                                   ${f(fl.forkedProbePerSessionMs, 0)} ms, cpu ${f(fl.forkedProbeCpuMs, 0)} ms`,
  );
}
