#!/usr/bin/env node
// bench/store: throughput of the SQLite session store (compare-and-set updates and event
// appends) against a raw better-sqlite3 loop issuing the same SQL statements on the same
// schema, pragmas and JSON payload sizes, measured in one run. Prints ops/s for both and the
// overhead ratio (raw ops/s ÷ store ops/s; target ≤ 2×). Needs `npm run build` first.
//   node bench/store.mjs [--ops N] [--rounds R] [--json]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { benchStart, loadReport, verdict } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "20000" },
    rounds: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
  },
});
benchStart("bench/store", { json: values.json });
const OPS = Number(values.ops);
const ROUNDS = Number(values.rounds);
const dist = new URL("../dist/", import.meta.url);
let openSqliteStore;
try {
  ({ openSqliteStore } = await import(new URL("internal/session/sqlite-store.js", dist).href));
} catch (e) {
  console.error(`bench/store: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), "gc-bench-store-"));
const ACTOR = "bench";
const NAME = "bench-session";
const PAYLOAD = {
  action: "start",
  generation: 3,
  reason: "desired, not running",
  env: { LOG_LEVEL: "info" },
};

// --- through the store -------------------------------------------------------------------
const store = openSqliteStore({ path: join(dir, "store.db"), actor: ACTOR });
let rec = await store.create({
  name: NAME,
  agent: "worker",
  provider: "tmux",
  metadata: { role: "bench" },
  breakdown: { command: { hash: "v1:0123456789abcdef", value: "agent --flag" } },
});

async function storeCas(n) {
  for (let i = 0; i < n; i++) rec = await store.update(NAME, rec.version, { restarts: rec.restarts + 1 });
}
async function storeEvents(n) {
  for (let i = 0; i < n; i++)
    await store.appendEvent({ session: NAME, type: "bench.tick", payload: PAYLOAD });
}

// --- raw better-sqlite3: same schema (made by the store), pragmas and statements ----------
{
  const s = openSqliteStore({ path: join(dir, "raw.db"), actor: ACTOR });
  await s.create({
    name: NAME,
    agent: "worker",
    provider: "tmux",
    metadata: { role: "bench" },
    breakdown: { command: { hash: "v1:0123456789abcdef", value: "agent --flag" } },
  });
  await s.close();
}
const db = new Database(join(dir, "raw.db"), { timeout: 5000 });
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("secure_delete = ON");
const getRecord = db.prepare("SELECT record FROM sessions WHERE actor = ? AND name = ?").pluck();
const updateRecord = db.prepare(
  "UPDATE sessions SET version = ?, record = ? WHERE actor = ? AND name = ? AND version = ?",
);
const insertEvent = db.prepare(
  "INSERT INTO events (actor, session, type, at, payload) VALUES (?, ?, ?, ?, ?)",
);
let rawVersion = 1;
const rawUpdate = db.transaction((expected) => {
  const r = JSON.parse(getRecord.get(ACTOR, NAME));
  if (r.version !== expected) throw new Error("stale");
  r.version++;
  r.restarts++;
  r.updatedAt = Date.now();
  updateRecord.run(r.version, JSON.stringify(r), ACTOR, NAME, expected);
  return r.version;
}).immediate;

async function rawCas(n) {
  for (let i = 0; i < n; i++) rawVersion = rawUpdate(rawVersion);
}
async function rawEvents(n) {
  for (let i = 0; i < n; i++) insertEvent.run(ACTOR, NAME, "bench.tick", Date.now(), JSON.stringify(PAYLOAD));
}

async function rate(fn) {
  const t0 = process.hrtime.bigint();
  await fn(OPS);
  return OPS / (Number(process.hrtime.bigint() - t0) / 1e9);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Warm up both paths (JIT, page cache), then interleave rounds so drift hits both sides.
await storeCas(2000);
await rawCas(2000);
await storeEvents(2000);
await rawEvents(2000);
const samples = { storeCas: [], rawCas: [], storeEvents: [], rawEvents: [] };
for (let r = 0; r < ROUNDS; r++) {
  samples.rawCas.push(await rate(rawCas));
  samples.storeCas.push(await rate(storeCas));
  samples.rawEvents.push(await rate(rawEvents));
  samples.storeEvents.push(await rate(storeEvents));
}
await store.close();
db.close();
rmSync(dir, { recursive: true, force: true });

const result = {
  ops: OPS,
  rounds: ROUNDS,
  casPerSec: { store: median(samples.storeCas), raw: median(samples.rawCas) },
  eventsPerSec: { store: median(samples.storeEvents), raw: median(samples.rawEvents) },
};
result.casRatio = result.casPerSec.raw / result.casPerSec.store;
result.eventRatio = result.eventsPerSec.raw / result.eventsPerSec.store;
result.load = loadReport();

if (values.json) {
  console.log(JSON.stringify(result));
} else {
  const f = (n) => Math.round(n).toLocaleString("en-US").padStart(9);
  console.log(`bench/store  ${OPS} ops × ${ROUNDS} rounds (median), node ${process.version}`);
  console.log(`              store ops/s   raw ops/s   overhead (raw/store)`);
  console.log(
    `CAS update    ${f(result.casPerSec.store)}   ${f(result.casPerSec.raw)}   ${result.casRatio.toFixed(2)}×`,
  );
  console.log(
    `event append  ${f(result.eventsPerSec.store)}   ${f(result.eventsPerSec.raw)}   ${result.eventRatio.toFixed(2)}×`,
  );
  const ok = result.casRatio <= 2 && result.eventRatio <= 2;
  console.log(`2× target: ${verdict(ok)}`);
}
