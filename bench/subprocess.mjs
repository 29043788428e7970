#!/usr/bin/env node
// bench/subprocess: peek and nudge latency through the subprocess provider (a request over
// the holder's unix socket, a fresh connection per call) against a direct in-process
// baseline: node-pty + the same Screen renderer in this process, no socket. Both run `cat`
// in a pty, so a nudge is echoed. Prints p50/p95 per operation and the ratio of p50s
// (provider ÷ baseline). Also: start/stop time and the holder's memory. Needs `npm run build`.
//   node bench/subprocess.mjs [--iterations N] [--json]
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pty from "@lydell/node-pty";
import { benchStart, loadReport } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    iterations: { type: "string", default: "300" },
    json: { type: "boolean", default: false },
  },
});
benchStart("bench/subprocess", { json: values.json });
const N = Number(values.iterations);
const WARMUP = Math.min(30, Math.ceil(N / 10));
const dist = new URL("../dist/", import.meta.url);
let SubprocessProvider;
let Screen;
try {
  ({ SubprocessProvider } = await import(new URL("internal/runtime/subprocess/index.js", dist).href));
  ({ Screen } = await import(new URL("internal/runtime/subprocess/screen.js", dist).href));
} catch (e) {
  console.error(`bench/subprocess: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
}

const root = mkdtempSync(join(tmpdir(), "gc-bench-sp-"));
const provider = new SubprocessProvider({ city: "bench", stateDir: join(root, "state") });
const COLS = 160;
const ROWS = 50;

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p95: at(0.95), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

async function measure(fn) {
  for (let i = 0; i < WARMUP; i++) await fn(-1 - i);
  const out = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return stats(out);
}

/** The baseline: a pty and a screen model in this process. */
function baseline() {
  const screen = new Screen(COLS, ROWS, 5000);
  const term = pty.spawn("/bin/sh", ["-c", "exec cat"], {
    cols: COLS,
    rows: ROWS,
    cwd: root,
    env: process.env,
    encoding: null,
  });
  const listeners = new Set();
  term.onData((d) => {
    screen.write(d);
    for (const l of listeners) l();
  });
  const sock = term._socket;
  const write = (data) =>
    new Promise((resolve, reject) => sock.write(data, (e) => (e ? reject(e) : resolve())));
  return {
    async peek(lines) {
      await screen.flush();
      return screen.peek(lines);
    },
    async nudge(text) {
      await write(text);
      await write("\r");
    },
    /** Resolves once `marker` is on the rendered screen. */
    seen(marker) {
      return new Promise((resolve) => {
        const check = () =>
          void screen.flush().then(() => {
            if (screen.peek(5).includes(marker)) {
              listeners.delete(check);
              resolve();
            }
          });
        listeners.add(check);
        check();
      });
    },
    close() {
      term.kill("SIGKILL");
      screen.dispose();
    },
  };
}

const results = {};
let rss;
let startMs;
let stopMs;
try {
  const workDir = join(root, "work");
  const cfg = { command: "printf 'bench> '; exec cat", workDir, env: {}, readyPromptPrefix: "bench> " };
  let t = performance.now();
  await provider.start("bench", cfg);
  startMs = performance.now() - t;
  const rec = JSON.parse(readFileSync(join(root, "state/subprocess/sessions/bench/session.json"), "utf8"));

  const base = baseline();
  await base.seen("");

  results.peek = {
    provider: await measure(() => provider.peek("bench", 50)),
    baseline: await measure(() => base.peek(50)),
  };
  results.nudge = {
    provider: await measure((i) => provider.nudge("bench", `nudge-${i}`)),
    baseline: await measure((i) => base.nudge(`nudge-${i}`)),
  };
  // Nudge until the echo is on the rendered screen: the provider polls peek (as a caller
  // would); the baseline is woken by the pty's data event.
  results["nudge→screen"] = {
    provider: await measure(async (i) => {
      const marker = `rt-${i}-x`;
      await provider.nudge("bench", marker);
      while (!(await provider.peek("bench", 5)).includes(marker));
    }),
    baseline: await measure(async (i) => {
      const marker = `rt-${i}-x`;
      const seen = base.seen(marker);
      await base.nudge(marker);
      await seen;
    }),
  };
  base.close();
  rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${rec.holderPid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  t = performance.now();
  await provider.stop("bench");
  stopMs = performance.now() - t;
} finally {
  await provider.stop("bench").catch(() => undefined);
  rmSync(root, { recursive: true, force: true });
}

const report = {
  iterations: N,
  startMs: Math.round(startMs),
  stopMs: Math.round(stopMs),
  holderRssMiB: Math.round(rss * 10) / 10,
  load: loadReport(),
  ops: Object.fromEntries(
    Object.entries(results).map(([op, r]) => [op, { ...r, ratio: r.provider.p50 / r.baseline.p50 }]),
  ),
};
if (values.json) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const f = (x) => x.toFixed(3).padStart(8);
  console.log(`bench/subprocess: ${N} iterations each (after ${WARMUP} warm-up), times in ms`);
  console.log(
    `${"op".padEnd(14)}${"provider p50".padStart(14)}${"p95".padStart(9)}${"baseline p50".padStart(14)}${"p95".padStart(9)}${"ratio".padStart(8)}`,
  );
  for (const [op, r] of Object.entries(report.ops)) {
    console.log(
      `${op.padEnd(14)}${f(r.provider.p50).padStart(14)}${f(r.provider.p95)}${f(r.baseline.p50).padStart(14)}${f(r.baseline.p95)}${r.ratio.toFixed(1).padStart(7)}×`,
    );
  }
  console.log(
    `start ${report.startMs} ms · stop ${report.stopMs} ms · holder RSS ${report.holderRssMiB} MiB`,
  );
}
