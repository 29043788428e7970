#!/usr/bin/env node
// bench/converge: how long a city of N `sleep` agents takes to be all running with DEFAULT
// settings (`gc start` until the store records every session running), and how long it takes
// to recover after its tmux server is killed — each against the same work done raw in the same
// run: N parallel forked `tmux new-session` on a fresh server plus one `list-panes` readiness
// check that every pane is alive; for the recovery, that raw server is killed too and the time
// until it has exited (tmux closes every session first: seconds at 1,000) is added, since no
// start can happen before. Every measured phase (raw, start, recovery) begins once the
// 1-minute load is below 1 again (lib.mjs idlePhase): at 1,000 sessions each phase's own work
// lifts it above 1, and a verdict is given when every phase began idle. Needs `npm run build`.
//   node bench/converge.mjs [--sessions N] [--runs R]
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { benchStart, GC_BIN, idlePhase, target } from "./lib.mjs";

const { values } = parseArgs({
  options: { sessions: { type: "string", default: "50" }, runs: { type: "string", default: "3" } },
});
const N = Number(values.sessions);
const RUNS = Number(values.runs);
benchStart(`bench/converge ${N} sessions`);
const dist = new URL("../dist/", import.meta.url);
const GC = GC_BIN;
const { cityIdOf, defaultSocketName } = await import(new URL("internal/runtime/identity.js", dist).href);
const Database = createRequire(import.meta.url)("better-sqlite3");

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const run = (cmd, args) =>
  new Promise((resolve) => {
    const c = spawn(cmd, args, { stdio: "ignore" });
    c.on("close", (code) => resolve(code));
  });

/**
 * N parallel forked new-sessions on a fresh server, then one readiness check (`base`); then
 * how long that server takes to exit once killed (`teardown`, not part of `base`).
 */
async function rawBaseline(socket) {
  loads.push(await idlePhase());
  const t0 = process.hrtime.bigint();
  const codes = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      run("tmux", [
        "-L",
        socket,
        "new-session",
        "-d",
        "-s",
        `w${i}`,
        "-x",
        "80",
        "-y",
        "24",
        "exec sleep 100000",
      ]),
    ),
  );
  const r = spawnSync("tmux", ["-L", socket, "list-panes", "-a", "-F", "#{pane_dead}"], { encoding: "utf8" });
  const alive = r.stdout.split("\n").filter((l) => l === "0").length;
  const t = ms(t0);
  if (codes.some((c) => c !== 0) || alive !== N) throw new Error(`baseline: ${alive}/${N} alive`);
  // What a recovery waits for before anything can start again: the killed server's exit (tmux
  // closes every session first, seconds at 1,000 sessions; its socket is in use until then).
  const pid = Number(
    spawnSync("tmux", ["-L", socket, "display", "-p", "#{pid}"], { encoding: "utf8" }).stdout,
  );
  const t1 = process.hrtime.bigint();
  spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
  while (alivePid(pid)) await sleep(5);
  const teardown = ms(t1);
  rmSync(join(`/tmp/tmux-${process.getuid()}`, socket), { force: true });
  return { base: t, teardown };
}

/** Whether process `pid` still exists (a zombie counts as gone). */
function alivePid(pid) {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * Polls the store until it records all N sessions running and started after `since` (epoch
 * ms): one read-only connection (opened once the file exists) and the count done by SQLite,
 * every 5 ms, or N/50 ms for larger cities, so the watching costs the machine little beside
 * the work measured.
 */
async function waitAllRunning(dbPath, since, what) {
  const end = Date.now() + 300_000;
  const every = Math.max(5, N / 50);
  let db;
  let count;
  try {
    for (;;) {
      try {
        db ??= new Database(dbPath, { readonly: true, fileMustExist: true });
        count ??= db.prepare(
          "SELECT count(*) FROM sessions WHERE json_extract(record, '$.state') = 'running' " +
            "AND coalesce(json_extract(record, '$.startedAt'), 0) >= ?",
        );
        if (count.pluck().get(since) >= N) return;
      } catch {
        // not created yet, or its schema not yet: look again
      }
      if (Date.now() > end) throw new Error(`${what}: not all ${N} running after 300 s`);
      await sleep(every);
    }
  } finally {
    db?.close();
  }
}

async function gcRun(i) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-bench-conv-")));
  const name = `bconv${process.pid}x${i}`;
  const socket = defaultSocketName(name, cityIdOf(dir, name));
  const agents = Array.from(
    { length: N },
    (_, k) => `  - name: a${k}\n    start_command: "exec sleep 100000"\n`,
  ).join("");
  // Default daemon settings: no `daemon:` section at all.
  writeFileSync(
    join(dir, "city.yaml"),
    `workspace:\n  name: ${name}\nsession:\n  provider: tmux\nagents:\n${agents}`,
  );
  const db = join(dir, ".gc", "state.db");
  try {
    loads.push(await idlePhase());
    const since = Date.now();
    const t0 = process.hrtime.bigint();
    const start = run(process.execPath, [GC, "--city", dir, "start"]);
    await waitAllRunning(db, since, "start");
    const startMs = ms(t0);
    await start;
    // Recovery: kill the server; the controller must notice and start everything again.
    loads.push(await idlePhase());
    const killedAt = Date.now();
    const t1 = process.hrtime.bigint();
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
    await waitAllRunning(db, killedAt, "recovery");
    const recoverMs = ms(t1);
    return { startMs, recoverMs };
  } finally {
    spawnSync(process.execPath, [GC, "--city", dir, "stop"], { stdio: "ignore" });
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [];
/** The load each phase of the current run started at, and how long it waited for it. */
let loads = [];
for (let i = 0; i < RUNS; i++) {
  loads = [];
  const { base, teardown } = await rawBaseline(`gc-bench-conv-raw-${process.pid}-${i}`);
  const g = await gcRun(i);
  rows.push({ base, teardown, ...g });
  const at = loads.map(
    (l) => `${l.load.toFixed(2)}${l.waitedS >= 1 ? ` after ${l.waitedS.toFixed(0)} s` : ""}`,
  );
  console.log(
    `run ${i + 1}: raw ${N}× parallel new-session + readiness ${base.toFixed(0)} ms; ` +
      `gc start → all running ${g.startMs.toFixed(0)} ms (${(g.startMs / base).toFixed(2)}×); ` +
      `kill-server → all running again ${g.recoverMs.toFixed(0)} ms (${(g.recoverMs / (teardown + base)).toFixed(2)}× ` +
      `the raw recovery: the raw server's exit after kill-server ${teardown.toFixed(0)} ms + the raw starts; ` +
      `${(g.recoverMs / base).toFixed(2)}× the raw starts alone) ` +
      `[load at the start of each phase: ${at.join(" / ")}]`,
  );
}
const stat = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const med = s[Math.floor(s.length / 2)];
  return `min ${s[0].toFixed(2)}× median ${med.toFixed(2)}× ${target(med, 2)}`;
};
console.log(`start ratio:    ${stat(rows.map((r) => r.startMs / r.base))}`);
console.log(
  `recovery ratio: ${stat(rows.map((r) => r.recoverMs / (r.teardown + r.base)))} (against the raw recovery)`,
);
