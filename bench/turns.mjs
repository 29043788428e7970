#!/usr/bin/env node
// bench/turns: how soon gc's controller reports a real agent CLI's turn over. Per CLI, one city
// (controller running, default 30 s pass interval) on the chosen provider talks to the
// model-API double (test/agents/model-api/); each turn streams a paced reply (8 chunks over
// 8 s with a 5 s silence mid-stream). The delay is from the double's last streamed chunk (its
// request log) to the moment gc's `turn.ended` event is in the state database (read every
// 20 ms). A `turn.ended` that arrives while the double is still streaming the turn is a false
// idle (counted). Prints median and max delay over the turns, false idles, and the load
// average before and after. Needs `npm run build` and the pinned CLIs (installed into the
// agent-CLI cache when missing).
//   node bench/turns.mjs [--clis claude,codex] [--provider tmux] [--turns 20] [--json]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { installAgentCli } from "../scripts/agent-clis.mjs";
import { benchStart, GC_BIN, loadReport, verdict } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    clis: { type: "string", default: "claude,codex" },
    provider: { type: "string", default: "tmux" },
    turns: { type: "string", default: "20" },
    json: { type: "boolean", default: false },
  },
});
const TURNS = Number(values.turns);
const dist = new URL("../dist/", import.meta.url);
const GC = GC_BIN;
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

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)];
};

/** The turn events of session `name` after `seq`, read from the city's state database. */
function turnEvents(db, name, seq) {
  return db
    .prepare(
      "SELECT seq, type, at FROM events WHERE session = ? AND seq > ? AND type IN ('turn.started', 'turn.ended') ORDER BY seq",
    )
    .all(name, seq);
}

async function benchCli(cli) {
  const bin = (await installAgentCli(cli)).bin;
  const dir = mkdtempSync(join(tmpdir(), `gc-bench-turns-${cli}-`));
  const script = new double.Script("Done.").on("bench turn", {
    text: "alpha beta gamma delta epsilon zeta eta theta",
    chunks: 8,
    overMs: 8_000,
    silenceMs: 5_000,
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
  let missed = 0;
  let early = 0;
  let db;
  try {
    const started = await gc(dir, ["start"]);
    if (started.code !== 0) throw new Error(`gc start: ${started.stderr}`);
    const ready = await gc(dir, ["wait", name, "--idle", "--timeout", "240s"]);
    if (ready.code !== 0) throw new Error(`${cli} never idle: ${ready.stdout}${ready.stderr}`);
    db = new Database(join(dir, ".gc", "state.db"), { readonly: true, fileMustExist: true });
    db.pragma("busy_timeout = 2000");
    // The controller's recorded work (record metadata gc.work): idle with no turn open.
    const recordedIdle = () => {
      const row = db.prepare("SELECT record FROM sessions WHERE name = ?").get(name);
      const raw = row ? JSON.parse(row.record).metadata?.["gc.work"] : undefined;
      const w = raw ? JSON.parse(raw) : undefined;
      return w?.state === "idle" && w.turnSince === undefined;
    };
    for (let i = 1; i <= TURNS; i++) {
      const text = `bench turn ${i}`;
      // The start's own output (a turn of its own until it settles) is over first.
      for (const end = Date.now() + 60_000; !recordedIdle(); await sleep(20))
        if (Date.now() > end) throw new Error(`turn ${i}: the recorded work never idle before the nudge`);
      const seen = () => api.turns().filter((t) => t.userTexts.some((u) => u.includes(text)));
      let seq = db.prepare("SELECT coalesce(max(seq), 0) AS s FROM events").get().s;
      const nudged = await gc(dir, ["nudge", name, text, "--wait", "120s"]);
      if (nudged.code !== 0) throw new Error(`nudge ${i}: ${nudged.stderr}`);
      // Every turn event as it arrives, until a turn.ended after the turn's stream ended.
      const deadline = Date.now() + 120_000;
      let done = false;
      while (!done) {
        if (Date.now() > deadline) {
          missed++;
          console.error(`${cli} turn ${i}: no turn.ended within 120 s of the nudge`);
          break;
        }
        for (const e of turnEvents(db, name, seq)) {
          seq = e.seq;
          if (e.type !== "turn.ended") continue;
          const arrived = Date.now();
          const rec = seen().at(-1);
          if (rec === undefined) {
            // Typing the nudge read as a turn of its own, over before the model was asked.
            early++;
            console.error(`${cli} turn ${i}: a turn.ended before the CLI asked the model`);
            continue;
          }
          if (rec.endedAt === undefined || rec.endedAt > arrived) {
            falseIdles++;
            console.error(`${cli} turn ${i}: turn.ended while the double was still streaming`);
            continue;
          }
          if (rec.lastChunkAt === undefined) throw new Error(`turn ${i}: the double streamed no text`);
          delays.push(arrived - rec.lastChunkAt);
          done = true;
        }
        if (!done) await sleep(20);
      }
    }
  } finally {
    db?.close();
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
  return {
    cli,
    turns: delays.length,
    missed,
    early,
    medianMs: median(delays),
    maxMs: Math.max(...delays),
    falseIdles,
  };
}

benchStart("bench/turns", { json: values.json });
const results = [];
for (const cli of values.clis.split(",")) results.push(await benchCli(cli));
// Targets (issue 33 item 6): median ≤ 500 ms with a controller running, no false idle.
const judged = results.map((r) => ({
  ...r,
  verdict: verdict(r.missed === 0 && r.early === 0 && r.medianMs <= 500 && r.falseIdles === 0),
}));
const out = {
  provider: values.provider,
  measuredTo: "gc's turn.ended event in the state database (controller running)",
  load: loadReport(),
  results: judged,
};
if (values.json) console.log(JSON.stringify(out, null, 2));
else {
  console.log(`bench/turns on ${out.provider}: last streamed chunk → ${out.measuredTo}`);
  for (const r of judged)
    console.log(
      `${r.cli.padEnd(9)} turns ${r.turns}${r.missed ? ` (${r.missed} without turn.ended)` : ""}  median ${r.medianMs} ms  max ${r.maxMs} ms  false idles ${r.falseIdles}${r.early ? `  early turn ends ${r.early}` : ""}  (≤ 500 ms, 0 false idles: ${r.verdict})`,
    );
}
