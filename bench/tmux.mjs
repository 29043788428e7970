#!/usr/bin/env node
// bench/tmux: the tmux provider (one persistent control-mode connection) against what a
// fork-per-call design does (one `tmux` process per operation), on one private server:
// isRunning, set+get metadata, peek(50). Each operation is also done as raw control-mode
// round trips: the SAME tmux commands the provider sends, written by hand to one `tmux -C`
// client (nothing else) — the floor a control-mode provider can reach; provider ÷ raw is what
// gc adds (target ≤ 2×). Provider and raw batches are interleaved (order alternating) over
// R rounds of N operations, so both see the same machine load; min and median per-op times
// and the ratio of medians are printed, plus the median of the per-round ratios. Then
// listRunning + snapshot over S live sessions against one forked `list-panes -a`.
// Needs `npm run build` first.
//   node bench/tmux.mjs [--ops N] [--rounds R] [--sessions S] [--json]
import { execFile, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { benchStart, loadReport, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "200" },
    rounds: { type: "string", default: "15" },
    sessions: { type: "string", default: "200" },
    json: { type: "boolean", default: false },
  },
});
benchStart("bench/tmux", { json: values.json });
const N = Number(values.ops);
const ROUNDS = Number(values.rounds);
const S = Number(values.sessions);
const dist = new URL("../dist/", import.meta.url);
let createProvider;
let PANE_FORMAT;
try {
  ({ createProvider } = await import(new URL("internal/runtime/tmux/index.js", dist).href));
  ({ PANE_FORMAT } = await import(new URL("internal/runtime/tmux/sessions.js", dist).href));
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
const results = { ops: N, sessions: S, tmux: "", perOperation: [], fleet: {}, load: undefined };
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

  const [sid] = await provider.control.command(["display-message", "-p", "-t", T, "#{session_id}"]);
  // What the provider sends (internal/runtime/tmux/provider.ts), written out by hand.
  const lookup = `list-panes -s -t ${T} -F "${PANE_FORMAT}"`;
  const metaKey = Buffer.from("k").toString("hex");
  const hex = (v) => Buffer.from(v).toString("hex");
  const cases = [
    {
      op: "isRunning",
      sent: "list-panes -s -t =name -F <pane format>",
      provider: () => provider.isRunning("bench-0"),
      forked: () => tmux("list-panes", "-s", "-t", T, "-F", PANE_FORMAT),
      raw: () => raw.send(lookup),
    },
    {
      op: "set + get metadata",
      sent: "set-option -t $id @gc_m_<k> v<hex>; list-panes -s -t =name -F <3 fields>",
      provider: async (i) => {
        await provider.setMeta("bench-0", "k", `value-${i}`);
        await provider.getMeta("bench-0", "k");
      },
      forked: async (i) => {
        await tmux("set-option", "-t", sid, `@gc_m_${metaKey}`, `v${hex(`value-${i}`)}`);
        await tmux("list-panes", "-s", "-t", T, "-F", `#{@gc_city}|#{@gc_name}|#{@gc_m_${metaKey}}`);
      },
      raw: async (i) => {
        await raw.send(`set-option -t ${sid} @gc_m_${metaKey} v${hex(`value-${i}`)}`);
        await raw.send(`list-panes -s -t ${T} -F "#{@gc_city}|#{@gc_name}|#{@gc_m_${metaKey}}"`);
      },
    },
    {
      op: "peek(50)",
      sent: "capture-pane -p -J -t $id: -S -50",
      provider: () => provider.peek("bench-0", 50),
      forked: () => tmux("capture-pane", "-p", "-J", "-t", `${sid}:`, "-S", "-50"),
      raw: () => raw.send(`capture-pane -p -J -t ${sid}: -S -50`),
    },
  ];
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const stats = (xs) => ({ min: Math.min(...xs), median: median(xs) });
  for (const c of cases) {
    const prov = [];
    const rawUs = [];
    const ratios = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which goes first, so neither always runs right after the other.
      const first = r % 2 === 0 ? c.provider : c.raw;
      const second = r % 2 === 0 ? c.raw : c.provider;
      const a = await measure(N, first);
      const b = await measure(N, second);
      const [p, q] = r % 2 === 0 ? [a, b] : [b, a];
      prov.push(p.perOpWallUs);
      rawUs.push(q.perOpWallUs);
      ratios.push(p.perOpWallUs / q.perOpWallUs);
    }
    // Forking is ~50× slower: fewer operations, once.
    const viaFork = await measure(Math.max(10, Math.floor(N / 10)), c.forked);
    const ps = stats(prov);
    const rs = stats(rawUs);
    results.perOperation.push({
      op: c.op,
      sent: c.sent,
      providerUs: ps,
      rawUs: rs,
      forkedUs: viaFork.perOpWallUs,
      overRawMedian: ps.median / rs.median,
      overRawMin: ps.min / rs.min,
      overRawPairedMedian: median(ratios),
      forkedOverProvider: viaFork.perOpWallUs / ps.median,
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

results.load = loadReport();
if (values.json) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const f = (x, d = 1) => x.toFixed(d);
  console.log(
    `bench/tmux: tmux ${results.tmux}, ${ROUNDS} interleaved rounds of ${N} sequential operations, one private server`,
  );
  console.log(
    "operation            provider/op min / median    raw control-mode/op min / median   provider ÷ raw: medians, mins, paired median (target ≤ 2×)   forked/op   verdict",
  );
  for (const r of results.perOperation) {
    console.log(
      `${r.op.padEnd(20)} ${f(r.providerUs.min).padStart(7)} / ${f(r.providerUs.median).padStart(7)} µs      ${f(r.rawUs.min).padStart(7)} / ${f(r.rawUs.median).padStart(7)} µs           ${f(r.overRawMedian, 2)}×, ${f(r.overRawMin, 2)}×, ${f(r.overRawPairedMedian, 2)}×                                       ${f(r.forkedUs, 0)} µs (${f(r.forkedOverProvider, 0)}× the provider)   ${target(r.overRawPairedMedian, 2)}`,
    );
  }
  console.log("raw = the same tmux commands the provider sends:");
  for (const r of results.perOperation) console.log(`  ${r.op}: ${r.sent}`);
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
