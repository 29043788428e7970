#!/usr/bin/env node
// bench/status: wall time of `gc status` (and `gc status --json`) on a city of N running tmux
// sessions against `node -e 0` measured interleaved in the same run (what any Node CLI pays
// to exist). Each size is measured in three modes: `once`, sessions started by
// `gc start --once` with no controller running (status reads the city file, the parse and
// fingerprint digest `gc start` cached under .gc — config/parse-cache.ts,
// controller/digest-cache.ts — checks them against the file, the environment and every
// fingerprinted file, reads state.db and lists tmux); `cold`, the same with those two cache
// files deleted (status parses, resolves and fingerprints the city itself, as after an edit
// nothing has applied yet); and `controller`, with the city's controller running (the usual
// case: the controller builds the whole snapshot, control op `snapshot`, and status only asks
// and formats). Needs `npm run build` first.
//   node bench/status.mjs [--sessions 20,200] [--reps R] [--modes once,cold,controller]
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchStart, GC_BIN, settle, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "20,200" },
    reps: { type: "string", default: "15" },
    modes: { type: "string", default: "once,cold,controller" },
  },
});
benchStart("bench/status");
const dist = new URL("../dist/", import.meta.url);
const GC = GC_BIN;
const { cityIdOf, defaultSocketName } = await import(new URL("internal/runtime/identity.js", dist).href);
const { PARSE_CACHE_FILE } = await import(new URL("internal/config/parse-cache.js", dist).href);
const { DIGEST_CACHE_FILE } = await import(new URL("internal/controller/digest-cache.js", dist).href);
const reps = Number(values.reps);

function timeOnce(argv) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, argv, { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${argv.join(" ")} exited ${r.status}: ${r.stderr}`);
  return ms;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until the city's controller has finished a pass with every session running. */
async function controllerSettled(dir, n) {
  for (let i = 0; i < 600; i++) {
    const r = spawnSync(process.execPath, [GC, "--city", dir, "status", "--json"], { encoding: "utf8" });
    if (r.status === 0) {
      const st = JSON.parse(r.stdout);
      if (st.controller.lastPass && st.sessions.filter((s) => s.running).length === n) return;
    }
    await sleep(500);
  }
  throw new Error("the controller did not settle");
}

for (const [n, mode] of values.sessions
  .split(",")
  .map(Number)
  .flatMap((n) => values.modes.split(",").map((m) => [n, m]))) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-bench-status-")));
  const name = `bst${process.pid}n${n}`;
  const socket = defaultSocketName(name, cityIdOf(dir, name));
  const agents = Array.from(
    { length: n },
    (_, k) => `  - name: a${k}\n    start_command: "exec sleep 100000"\n`,
  );
  writeFileSync(
    join(dir, "city.yaml"),
    `workspace:\n  name: ${name}\nsession:\n  provider: tmux\ndaemon:\n  start_budget: ${n}\nagents:\n${agents.join("")}`,
  );
  try {
    const startArgs = mode === "controller" ? ["start"] : ["start", "--once"];
    const up = spawnSync(process.execPath, [GC, "--city", dir, ...startArgs], { encoding: "utf8" });
    if (up.status !== 0) throw new Error(`gc ${startArgs.join(" ")}: ${up.stderr}`);
    if (mode === "controller") await controllerSettled(dir, n);
    if (mode === "cold")
      for (const f of [PARSE_CACHE_FILE, DIGEST_CACHE_FILE]) rmSync(join(dir, ".gc", f), { force: false });
    const base = [];
    const text = [];
    const json = [];
    await settle(`${n} sessions started`);
    timeOnce([GC, "--city", dir, "status"]); // warm the page cache
    for (let i = 0; i < reps; i++) {
      base.push(timeOnce(["-e", "0"]));
      text.push(timeOnce([GC, "--city", dir, "status"]));
      json.push(timeOnce([GC, "--city", dir, "status", "--json"]));
    }
    const b = median(base);
    console.log(
      `${String(n).padStart(4)} sessions, ${{ controller: "controller running", once: "no controller     ", cold: "no controller, cold" }[mode]}: node -e 0 ${b.toFixed(1)} ms; ` +
        `gc status ${median(text).toFixed(1)} ms = ${(median(text) / b).toFixed(2)}×; ` +
        `gc status --json ${median(json).toFixed(1)} ms = ${(median(json) / b).toFixed(2)}× ` +
        `(medians of ${reps}, interleaved) ${target(median(text) / b, mode === "controller" ? 2 : 3)}`,
    );
  } finally {
    spawnSync(process.execPath, [GC, "--city", dir, "stop"], { stdio: "ignore" });
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  }
}
