#!/usr/bin/env node
// bench/control-output: what a command with a large output costs over gc's control connection
// (ControlClient: one persistent `tmux -C` client, replies framed by protocol.ts) against the
// same command run by a forked `tmux` client (execFile, output collected) — the fork-per-call
// baseline. The commands return 10, 100 and 1,000 lines: `capture-pane -p` of a pane's history
// (lines of ~70 characters), and, with --sessions S, `list-panes -a -F PANE_FORMAT` over S
// sessions (what every controller pass sends). Control-mode and forked runs alternate per
// round, so both see the same load; per size it prints the median wall time of each, their
// ratio (target ≤ 1.5× at 1,000 lines), and this process's CPU per control-mode command (the
// framing and parsing gc does). Needs `npm run build` first.
//   node bench/control-output.mjs [--rounds R] [--sessions S] [--json]
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs, promisify } from "node:util";
import { benchStart, loadReport, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "30" },
    sessions: { type: "string", default: "0" },
    json: { type: "boolean", default: false },
  },
});
benchStart("bench/control-output", { json: values.json });
const ROUNDS = Number(values.rounds);
const S = Number(values.sessions);
const dist = new URL("../dist/", import.meta.url);
const { ControlClient } = await import(new URL("internal/runtime/tmux/control-client.js", dist).href);
const { PANE_FORMAT } = await import(new URL("internal/runtime/tmux/sessions.js", dist).href);
const sh = promisify(execFile);

const socket = `gc-bench-out-${process.pid}`;
const TMUX = ["-L", socket];
const root = mkdtempSync(join(tmpdir(), "gc-bench-out-"));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const client = new ControlClient({ socket: { name: socket } });
const results = [];
try {
  // A pane whose history holds 1,200 numbered lines, then idles.
  const fill = `for i in $(seq 1 1200); do printf 'line %06d %s\\n' $i ${"abcdefghij".repeat(6)}; done; exec sleep 100000`;
  const made = spawnSync("tmux", [
    ...TMUX,
    "-f",
    "/dev/null",
    "new-session",
    "-d",
    "-s",
    "out",
    "-x",
    "120",
    "-y",
    "24",
    fill,
  ]);
  if (made.status !== 0) throw new Error(`tmux new-session: ${made.stderr}`);
  await client.connect();
  for (;;) {
    const last = await client.command(["capture-pane", "-p", "-t", "out", "-S", "-1200"]);
    if (last.some((l) => l.startsWith("line 001200"))) break;
    await sleep(50);
  }
  const cases = [10, 100, 1000].map((n) => ({
    label: `capture-pane, ${n} lines`,
    lines: n,
    argv: ["capture-pane", "-p", "-t", "out", "-S", String(-n - 24), "-E", "-25"],
  }));
  if (S > 0) {
    for (let i = 0; i < S; i += 100) {
      const args = [];
      for (let k = i; k < Math.min(S, i + 100); k++)
        args.push("new-session", "-d", "-s", `s${k}`, "sleep 100000", ";");
      const r = spawnSync("tmux", [...TMUX, ...args.slice(0, -1)]);
      if (r.status !== 0) throw new Error(`tmux new-session: ${r.stderr}`);
    }
    cases.push({
      label: `list-panes -a, ${S + 2} panes`,
      lines: S + 2,
      argv: ["list-panes", "-a", "-F", PANE_FORMAT],
    });
  }
  for (const c of cases) {
    const control = [];
    const controlCpu = [];
    const forked = [];
    for (let r = 0; r < ROUNDS; r++) {
      const viaControl = async () => {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const out = await client.command(c.argv);
        control.push(performance.now() - t0);
        const u = process.cpuUsage(c0);
        controlCpu.push((u.user + u.system) / 1000);
        if (out.length !== c.lines) throw new Error(`${c.label}: control mode returned ${out.length} lines`);
      };
      const viaFork = async () => {
        const t0 = performance.now();
        const { stdout } = await sh("tmux", [...TMUX, ...c.argv], { maxBuffer: 64 << 20 });
        forked.push(performance.now() - t0);
        const n = stdout.split("\n").length - 1;
        if (n !== c.lines) throw new Error(`${c.label}: forked tmux returned ${n} lines`);
      };
      if (r % 2 === 0) {
        await viaControl();
        await viaFork();
      } else {
        await viaFork();
        await viaControl();
      }
    }
    results.push({
      case: c.label,
      lines: c.lines,
      controlMs: median(control),
      controlMinMs: Math.min(...control),
      controlCpuMs: median(controlCpu),
      forkedMs: median(forked),
      forkedMinMs: Math.min(...forked),
      ratio: median(control) / median(forked),
    });
  }
} finally {
  await client.close().catch(() => undefined);
  spawnSync("tmux", [...TMUX, "kill-server"], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
}

if (values.json) console.log(JSON.stringify({ rounds: ROUNDS, results, load: loadReport() }, null, 2));
else {
  console.log(`${ROUNDS} alternating rounds per case; medians (min), wall ms`);
  for (const r of results) {
    const f = (x) => x.toFixed(2);
    console.log(
      `${r.case.padEnd(28)} control mode ${f(r.controlMs)} (${f(r.controlMinMs)}), node CPU ${f(r.controlCpuMs)}; ` +
        `forked tmux ${f(r.forkedMs)} (${f(r.forkedMinMs)}); control ÷ forked ${f(r.ratio)}×` +
        (r.lines >= 1000 ? ` ${target(r.ratio, 1.5)}` : ""),
    );
  }
}
