#!/usr/bin/env node
// bench/reconcile: cost of one reconcile pass over in-sync sessions, per session, against
// the cost of ONE forked `tmux list-sessions` measured in the same run (what a
// fork-per-call design pays for a single question). Needs `npm run build` first.
//   node bench/reconcile.mjs [--fake N] [--tmux N] [--passes P]
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchStart } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    fake: { type: "string", default: "1000" },
    tmux: { type: "string", default: "200" },
    passes: { type: "string", default: "5" },
  },
});
benchStart("bench/reconcile");
const dist = new URL("../dist/", import.meta.url);
const { Reconciler } = await import(new URL("internal/reconcile/reconciler.js", dist).href);
const { DEFAULT_POLICY } = await import(new URL("internal/reconcile/plan.js", dist).href);
const { FakeProvider } = await import(new URL("internal/runtime/fake.js", dist).href);
const { fingerprint } = await import(new URL("internal/runtime/fingerprint.js", dist).href);
const { openSqliteStore } = await import(new URL("internal/session/sqlite-store.js", dist).href);

const passes = Number(values.passes);
const dir = mkdtempSync(join(tmpdir(), "gc-bench-rec-"));
const results = [];

function desiredList(n, provider, command) {
  return Array.from({ length: n }, (_, i) => {
    const config = { command, workDir: dir, env: { LOG_LEVEL: "info" } };
    const fp = fingerprint(config);
    const name = `s${String(i).padStart(4, "0")}`;
    return {
      name,
      agent: name,
      provider,
      dependsOn: [],
      suspended: false,
      core: fp.core,
      live: fp.live,
      breakdown: fp.breakdown,
      config,
    };
  });
}

async function measure(label, provider, desired, storeDir) {
  const store = openSqliteStore({ path: join(storeDir, "state.db"), singleTenant: true });
  const rec = new Reconciler({
    store,
    providerFor: async () => provider,
    loadDesired: async () => desired,
    baseProviders: [provider.name],
    policy: { ...DEFAULT_POLICY, startBudget: 100_000 },
    concurrency: 8,
    drainTimeoutMs: 1000,
  });
  const first = await rec.tick();
  const failed = first.outcomes.filter((o) => !o.ok);
  if (failed.length) throw new Error(`${label}: ${failed.length} starts failed: ${failed[0].error}`);
  const times = [];
  for (let i = 0; i < passes; i++) {
    const t0 = process.hrtime.bigint();
    const r = await rec.tick();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.plan.actions.length !== 0) throw new Error(`${label}: not in sync: ${r.plan.actions[0].kind}`);
  }
  await store.close();
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function forkedListSessionsMs(socket, n = 20) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) spawnSync("tmux", ["-L", socket, "list-sessions"], { stdio: "ignore" });
  return Number(process.hrtime.bigint() - t0) / 1e6 / n;
}

const socket = `gc-bench-rec-${process.pid}`;
try {
  const nFake = Number(values.fake);
  const fakeMs = await measure(
    "fake",
    new FakeProvider({ city: "bench" }),
    desiredList(nFake, "fake", "sleep 1"),
    mkdtempSync(join(dir, "f-")),
  );
  results.push({ provider: "fake", sessions: nFake, passMs: fakeMs });

  const nTmux = Number(values.tmux);
  if (nTmux > 0) {
    const { createProvider } = await import(new URL("internal/runtime/tmux/index.js", dist).href);
    const tmux = await createProvider({
      city: `bench${process.pid}`,
      cityDir: dir,
      stateDir: dir,
      settings: { socket },
    });
    try {
      const ms = await measure(
        "tmux",
        tmux,
        desiredList(nTmux, tmux.name, "exec sleep 3600"),
        mkdtempSync(join(dir, "t-")),
      );
      results.push({ provider: "tmux", sessions: nTmux, passMs: ms });
    } finally {
      await tmux.close();
    }
  }
  const forkMs = forkedListSessionsMs(socket);
  console.log(`baseline: one forked \`tmux list-sessions\` = ${forkMs.toFixed(3)} ms`);
  for (const r of results) {
    const per = r.passMs / r.sessions;
    console.log(
      `${r.provider.padEnd(5)} ${String(r.sessions).padStart(5)} in-sync sessions: pass ${r.passMs.toFixed(1)} ms, ` +
        `${(per * 1000).toFixed(1)} µs/session = ${(per / forkMs).toFixed(3)}× one forked list-sessions ` +
        `(a whole pass = ${(r.passMs / forkMs).toFixed(1)} forks)`,
    );
  }
} finally {
  try {
    execFileSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
  } catch {}
  rmSync(dir, { recursive: true, force: true });
}
