#!/usr/bin/env node
// bench/scale: per-session cost of reconcile passes at a large and a small fleet (fake
// provider, SQLite store), measured in the same run: a cold pass that starts every session
// (dependency ordering over a pool that depends on another agent, execute's dependency
// waits) and an in-sync pass. Flat per-session cost means the ratio large/small stays near
// 1 (target ≤ 1.5 at 5000 vs 500). Needs `npm run build` first.
//   node bench/scale.mjs [--small 500] [--large 5000] [--runs 3]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    small: { type: "string", default: "500" },
    large: { type: "string", default: "5000" },
    runs: { type: "string", default: "3" },
  },
});
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

async function measure(n, run) {
  const store = openSqliteStore({
    path: join(mkdtempSync(join(dir, `n${n}-${run}-`)), "state.db"),
    singleTenant: true,
  });
  const desired = desiredList(n);
  const rec = new Reconciler({
    store,
    providerFor: async () => provider,
    loadDesired: async () => desired,
    baseProviders: ["fake"],
    policy: { ...DEFAULT_POLICY, startBudget: n },
    concurrency: 8,
    drainTimeoutMs: 1000,
  });
  const provider = new FakeProvider({ city: `bench${n}x${run}` });
  let t0 = process.hrtime.bigint();
  const cold = await rec.tick();
  const coldMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (cold.outcomes.filter((o) => o.action.kind === "start" && o.ok).length !== n)
    throw new Error("cold pass");
  const times = [];
  for (let i = 0; i < 3; i++) {
    t0 = process.hrtime.bigint();
    const r = await rec.tick();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.plan.actions.length !== 0) throw new Error("not in sync");
  }
  await store.close();
  return { coldMs, syncMs: times.sort((a, b) => a - b)[1] };
}

const small = Number(values.small);
const large = Number(values.large);
const coldRatios = [];
const syncRatios = [];
try {
  for (let run = 0; run < Number(values.runs); run++) {
    const s = await measure(small, run);
    const l = await measure(large, run);
    const per = (x, n) => (x / n) * 1000;
    const cr = per(l.coldMs, large) / per(s.coldMs, small);
    const sr = per(l.syncMs, large) / per(s.syncMs, small);
    coldRatios.push(cr);
    syncRatios.push(sr);
    console.log(
      `run ${run + 1}: cold start pass ${per(s.coldMs, small).toFixed(0)} µs/session at ${small}, ` +
        `${per(l.coldMs, large).toFixed(0)} at ${large} (${cr.toFixed(2)}×); in-sync pass ` +
        `${per(s.syncMs, small).toFixed(1)} µs/session at ${small}, ${per(l.syncMs, large).toFixed(1)} at ${large} (${sr.toFixed(2)}×)`,
    );
  }
  const stat = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    return `min ${v[0].toFixed(2)}× median ${v[Math.floor(v.length / 2)].toFixed(2)}×`;
  };
  console.log(
    `per-session cost ${large} vs ${small}: cold ${stat(coldRatios)}, in-sync ${stat(syncRatios)} (target ≤ 1.5×)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
