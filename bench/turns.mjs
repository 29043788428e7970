#!/usr/bin/env node
// bench/turns: how soon gc sees a real agent CLI's turn end. Per CLI, one city (controller
// running) on the chosen provider talks to the model-API double (test/agents/model-api/); each
// turn streams a paced reply (6 chunks over 3 s with a 1 s silence mid-stream). For each turn a
// `gc wait NAME --idle` is started as soon as the double streams; the delay is from the
// double's last streamed chunk to that wait returning (gc has no `turn.ended` event on this
// branch: the wait is the stand-in). A wait that returns while the double is still streaming
// is a false idle (counted; the wait is then repeated). Prints median and max delay over the
// turns, false idles, and the load average before and after. Needs `npm run build` and the
// pinned CLIs (installed into the agent-CLI cache when missing).
//   node bench/turns.mjs [--clis claude,codex,gemini,opencode] [--provider tmux] [--turns 20] [--json]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { installAgentCli } from "../scripts/agent-clis.mjs";
import { benchStart, loadReport, verdict } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    clis: { type: "string", default: "claude,codex,gemini,opencode" },
    provider: { type: "string", default: "tmux" },
    turns: { type: "string", default: "20" },
    json: { type: "boolean", default: false },
  },
});
const TURNS = Number(values.turns);
const dist = new URL("../dist/", import.meta.url);
const GC = new URL("cmd/gc/main.js", dist).pathname;
let double;
let clis;
try {
  double = await import(new URL("test/agents/model-api/index.js", dist).href);
  clis = await import(new URL("test/agents/model-api/clis.js", dist).href);
} catch (e) {
  console.error(`bench/turns: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
}

/** Runs gc; resolves {code, stdout, stderr, at} (at: when it exited). */
function gc(dir, args, timeoutMs = 300_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [GC, "--city", dir, ...args], {
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, at: Date.now() });
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)];
};

async function benchCli(cli) {
  const bin = (await installAgentCli(cli)).bin;
  const dir = mkdtempSync(join(tmpdir(), `gc-bench-turns-${cli}-`));
  const script = new double.Script("Done.").on("bench turn", {
    text: "alpha beta gamma delta epsilon zeta eta theta",
    chunks: 6,
    overMs: 3_000,
    silenceMs: 1_000,
  });
  const api = await double.startModelApi(script);
  const name = cli;
  const agent = { name, cli, bin, home: join(dir, "home"), work: join(dir, "work"), url: api.url };
  writeFileSync(
    join(dir, "city.yaml"),
    clis.turnCityYaml(values.provider, [agent], "ask").replace("@NAME@", `bench-${cli}-${process.pid}`),
  );
  const delays = [];
  let falseIdles = 0;
  try {
    const started = await gc(dir, ["start"]);
    if (started.code !== 0) throw new Error(`gc start: ${started.stderr}`);
    const ready = await gc(dir, ["wait", name, "--idle", "--timeout", "240s"]);
    if (ready.code !== 0) throw new Error(`${cli} never idle: ${ready.stdout}${ready.stderr}`);
    for (let i = 1; i <= TURNS; i++) {
      const text = `bench turn ${i}`;
      const seen = () => api.turns().filter((t) => t.userTexts.some((u) => u.includes(text)));
      const nudged = await gc(dir, ["nudge", name, text, "--wait", "120s"]);
      if (nudged.code !== 0) throw new Error(`nudge ${i}: ${nudged.stderr}`);
      await until(`turn ${i} at the double`, () => seen().length > 0, 60_000);
      for (;;) {
        const w = await gc(dir, ["wait", name, "--idle", "--timeout", "120s"]);
        if (w.code !== 0) throw new Error(`wait ${i}: ${w.stdout}${w.stderr}`);
        const rec = seen().at(-1);
        if (api.streaming() || rec.endedAt === undefined || rec.endedAt > w.at) {
          falseIdles++;
          continue;
        }
        delays.push(w.at - rec.lastChunkAt);
        break;
      }
    }
  } finally {
    await gc(dir, ["stop"], 60_000).catch(() => undefined);
    await api.close();
    try {
      const pid = Number(readFileSync(join(dir, ".gc", "controller.pid"), "utf8").trim());
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(pid, "SIGKILL");
    } catch {
      // no controller left
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
  return { cli, turns: delays.length, medianMs: median(delays), maxMs: Math.max(...delays), falseIdles };
}

benchStart("bench/turns", { json: values.json });
const results = [];
for (const cli of values.clis.split(",")) results.push(await benchCli(cli));
// Targets (issue 33 item 6): median ≤ 500 ms with a controller running, no false idle.
const judged = results.map((r) => ({ ...r, verdict: verdict(r.medianMs <= 500 && r.falseIdles === 0) }));
const out = {
  provider: values.provider,
  measuredTo: "gc wait --idle returning (controller running; no turn.ended event on this branch)",
  load: loadReport(),
  results: judged,
};
if (values.json) console.log(JSON.stringify(out, null, 2));
else {
  console.log(`bench/turns on ${out.provider}: last streamed chunk → ${out.measuredTo}`);
  for (const r of judged)
    console.log(
      `${r.cli.padEnd(9)} turns ${r.turns}  median ${r.medianMs} ms  max ${r.maxMs} ms  false idles ${r.falseIdles}  (≤ 500 ms, 0 false idles: ${r.verdict})`,
    );
}
