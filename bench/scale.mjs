#!/usr/bin/env node
// bench/scale: per-session cost of reconcile passes at a large and a small fleet (fake
// provider, SQLite store), measured in the same run: a cold pass that starts every session
// (dependency ordering over a pool that depends on another agent, execute's dependency
// waits) and an in-sync pass. Flat per-session cost means the ratio large/small stays near
// 1 (target ≤ 1.5 at 5000 vs 500). The in-sync figure is the median of `--passes` passes per
// side, the two sides' passes interleaved, each pass after a forced GC (the script re-runs
// itself with --expose-gc), in wall time and in this process's CPU time. Needs `npm run build`.
//   node bench/scale.mjs [--small 500] [--large 5000] [--runs 3] [--passes 9]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchStart, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    small: { type: "string", default: "500" },
    large: { type: "string", default: "5000" },
    runs: { type: "string", default: "3" },
    passes: { type: "string", default: "9" },
  },
});
// Garbage of one phase (the cold pass of 5000 sessions) must not be collected during
// another's measured pass: re-run with --expose-gc so every pass starts from a collected heap.
if (typeof globalThis.gc !== "function") {
  const { spawnSync } = await import("node:child_process");
  const r = spawnSync(process.execPath, ["--expose-gc", ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
  });
  process.exit(r.status ?? 1);
}
benchStart("bench/scale");
const dist = new URL("../dist/", import.meta.url);
const imp = (p) => import(new URL(p, dist).href);
const { Reconciler } = await imp("internal/reconcile/reconciler.js");
const { DEFAULT_POLICY } = await imp("internal/reconcile/plan.js");
const { FakeProvider } = await imp("internal/runtime/fake.js");
const { fingerprint } = await imp("internal/runtime/fingerprint.js");
const { openSqliteStore } = await imp("internal/session/sqlite-store.js");

const dir = mkdtempSync(join(tmpdir(), "gc-bench-scale-"));

/** `n` sessions: one `db` agent and a pool of workers that depend on it. */
function desiredList(n) {
  const config = { command: "sleep 1", workDir: dir, env: { LOG_LEVEL: "info" } };
  const fp = fingerprint(config);
  return Array.from({ length: n }, (_, i) => ({
    name: i === 0 ? "db" : `w-${i}`,
    agent: i === 0 ? "db" : "w",
    provider: "fake",
    dependsOn: i === 0 ? [] : ["db"],
    suspended: false,
    core: fp.core,
    live: fp.live,
    breakdown: fp.breakdown,
    config,
  }));
}

/** A reconciler over `n` fake sessions with its own store, after its cold pass (timed). */
async function setUp(n, run) {
  const store = openSqliteStore({
    path: join(mkdtempSync(join(dir, `n${n}-${run}-`)), "state.db"),
    singleTenant: true,
  });
  const desired = desiredList(n);
  const provider = new FakeProvider({ city: `bench${n}x${run}` });
  const rec = new Reconciler({
    store,
    providerFor: async () => provider,
    loadDesired: async () => desired,
    baseProviders: ["fake"],
    policy: { ...DEFAULT_POLICY, startBudget: n },
    concurrency: 8,
    drainTimeoutMs: 1000,
  });
  settle();
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const cold = await rec.tick();
  const coldMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  const coldCpu = (c.user + c.system) / 1000;
  if (cold.outcomes.filter((o) => o.action.kind === "start" && o.ok).length !== n)
    throw new Error("cold pass");
  return { n, rec, store, coldMs, coldCpu, wall: [], cpu: [] };
}

/** Collects garbage left by earlier work, so no pass pays for another's (needs --expose-gc). */
function settle() {
  globalThis.gc?.();
  globalThis.gc?.();
}

/** One in-sync pass of `side`: wall and CPU (user + system of this process) ms. */
async function inSyncPass(side) {
  settle();
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const r = await side.rec.tick();
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  if (r.plan.actions.length !== 0) throw new Error("not in sync");
  side.wall.push(wall);
  side.cpu.push((c.user + c.system) / 1000);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const small = Number(values.small);
const large = Number(values.large);
const passes = Number(values.passes);
const coldRatios = [];
const syncRatios = [];
const cpuRatios = [];
const coldCpuRatios = [];
try {
  for (let run = 0; run < Number(values.runs); run++) {
    const s = await setUp(small, run);
    const l = await setUp(large, run);
    // Interleaved, so load from elsewhere falls on both sides alike; one warm-up pass each.
    for (let i = 0; i <= passes; i++) {
      await inSyncPass(s);
      await inSyncPass(l);
    }
    for (const side of [s, l]) {
      side.wall.shift();
      side.cpu.shift();
      await side.store.close();
    }
    const per = (x, n) => (x / n) * 1000;
    const cr = per(l.coldMs, large) / per(s.coldMs, small);
    const sr = per(median(l.wall), large) / per(median(s.wall), small);
    const ur = per(median(l.cpu), large) / per(median(s.cpu), small);
    const ccr = per(l.coldCpu, large) / per(s.coldCpu, small);
    coldRatios.push(cr);
    coldCpuRatios.push(ccr);
    syncRatios.push(sr);
    cpuRatios.push(ur);
    console.log(
      `run ${run + 1}: cold start pass ${per(s.coldMs, small).toFixed(0)} µs/session at ${small}, ` +
        `${per(l.coldMs, large).toFixed(0)} at ${large} (${cr.toFixed(2)}×), CPU ${ccr.toFixed(2)}×; in-sync pass (median of ${passes}) ` +
        `${per(median(s.wall), small).toFixed(1)} µs/session at ${small}, ${per(median(l.wall), large).toFixed(1)} at ${large} (${sr.toFixed(2)}×), ` +
        `CPU ${per(median(s.cpu), small).toFixed(1)} vs ${per(median(l.cpu), large).toFixed(1)} µs/session (${ur.toFixed(2)}×)`,
    );
  }
  const stat = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    return `min ${v[0].toFixed(2)}× median ${v[Math.floor(v.length / 2)].toFixed(2)}×`;
  };
  console.log(
    `per-session cost ${large} vs ${small} ${target(median(syncRatios), 1.5)} (in-sync wall median), wall: cold ${stat(coldRatios)}, in-sync ${stat(syncRatios)}; ` +
      `CPU: cold ${stat(coldCpuRatios)}, in-sync ${stat(cpuRatios)}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
