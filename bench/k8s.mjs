#!/usr/bin/env node
// bench/k8s: a city of N k8s agents on the loopback API server (test/k8s/apiserver, the real
// wire format). Every start is gc's own (pod, exec of `tmux new-session`, readiness over the
// pod's control channel); only the pods' main process is a stand-in: gc's boot script
// (internal/runtime/k8s/spec.ts BOOT_SCRIPT) without the watch that ends the pod when the
// program exits — the pod's tmux server alone, as the container's process. That watch polls
// the pane twice a second per pod: on a real cluster each pod's own CPU, here 1,000 of them
// on one machine would only measure fork(). (With no process at all, as `runProcesses: false`
// gives, a pod has no tmux server: gc's start waits for it and fails, as it must.)
// The real controller (runController) converges the city, then steady passes are poked over
// the control socket; per pass it prints the API requests the server logged (target ≤ 1; open
// watches are not counted as per-pass requests, a watch event is no request) and the
// controller's own wall/CPU figures; then `gc status` with that controller running against
// `node -e 0`, interleaved (target ≤ 3×), and the API requests one status made. Needs
// `npm run build`. `--run-processes` runs gc's own boot script in every pod instead.
//   node bench/k8s.mjs [--pods N] [--passes P] [--reps R] [--run-processes]
import { execFile } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs, promisify } from "node:util";
import { benchStart, GC_BIN, idlePhase, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    pods: { type: "string", default: "1000" },
    passes: { type: "string", default: "9" },
    reps: { type: "string", default: "9" },
    "run-processes": { type: "boolean", default: false },
  },
});
benchStart(`bench/k8s ${values.pods} pods`);
const N = Number(values.pods);
const P = Number(values.passes);
const REPS = Number(values.reps);
const dist = new URL("../dist/", import.meta.url);
const imp = (p) => import(new URL(p, dist).href);
const GC = GC_BIN;
const { startApiServer } = await imp("test/k8s/apiserver/index.js");
const { openCity } = await imp("internal/controller/city.js");
const { runController, controllerPaths } = await imp("internal/controller/controller.js");
const { requestControl } = await imp("internal/controller/control.js");
const { createProviderFromSpec } = await imp("internal/runtime/registry/index.js");
const { openSqliteStore } = await imp("internal/session/sqlite-store.js");

const sh = promisify(execFile);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// The stand-in: BOOT_SCRIPT's set-up, then its tmux server in the foreground (exec'd, so the
// server's end is the container's, and a graceful deletion's SIGTERM reaches it).
const STAND_IN = [
  "/bin/sh",
  "-c",
  [
    'S="$GC_TMUX_SOCKET"',
    'mkdir -p "$GC_WORK_DIR" || exit 126',
    'printf "set -g remain-on-exit on\\nset -g history-limit 50000\\n" > "$S.conf" || exit 126',
    'rm -f "$S"; exec tmux -S "$S" -f "$S.conf" -D',
  ].join("\n"),
];
const server = await startApiServer({
  runProcesses: values["run-processes"] || (() => STAND_IN),
  scheduleDelayMs: 0,
  startDelayMs: 0,
});
const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-bench-k8s-")));
const name = `bk8s${process.pid}`;
// Starts per pass: 1,000 at once would only measure how 2 cores fork 1,000 shells at a time.
const BUDGET = Math.min(N, 100);
const agents = Array.from(
  { length: N },
  (_, k) => `  - name: a${k}\n    start_command: "exec sleep 100000"\n`,
);
writeFileSync(
  join(dir, "city.yaml"),
  `workspace:\n  name: ${name}\nsession:\n  provider: k8s\n  k8s:\n    image: gc-bench/agent:1\n` +
    `    kubeconfig: ${server.kubeconfigPath}\n    work_root: ${join(dir, "pods")}\n` +
    `daemon:\n  interval: 1h\n  start_budget: ${BUDGET}\nagents:\n${agents.join("")}`,
);
const city = await openCity(
  { cwd: dir, env: process.env, cityDir: dir },
  {
    createProvider: createProviderFromSpec,
    openStore: (d) => openSqliteStore({ cityDir: d, singleTenant: true }),
  },
);
const ac = new AbortController();
const socket = controllerPaths(city.stateDir).socket;
const status = async () =>
  (await requestControl(socket, { op: "status" }, { timeoutMs: 60_000 })).find((m) => m.type === "status")
    .status;
let done;
try {
  done = runController(city, {
    signal: ac.signal,
    log: process.env.BENCH_TRACE ? (m) => console.error(m) : () => undefined,
  });
  for (;;) {
    try {
      await status();
      break;
    } catch {
      await sleep(100);
    }
  }
  const t0 = performance.now();
  for (let i = 0; ; i++) {
    await requestControl(socket, { op: "poke" }, { timeoutMs: 600_000 });
    const s = await status();
    if (s.lastPass && Object.keys(s.lastPass.actions).length === 0) break;
    if (i >= Math.ceil(N / BUDGET) + 20)
      throw new Error(
        `did not converge in ${i + 1} passes (last: ${JSON.stringify(s.lastPass?.actions)}); ` +
          "BENCH_TRACE=1 shows the controller's log",
      );
  }
  console.log(`converged ${N} pods in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await sleep(1100);
  // Each measured phase (the passes, then the statuses) begins once the load the start raised
  // has fallen below 1 (lib.mjs idlePhase); the verdicts judge those starting loads.
  const passesAt = await idlePhase();
  console.log(
    `passes: load average (1 min) ${passesAt.load.toFixed(2)} after ${passesAt.waitedS.toFixed(0)} s of settling`,
  );
  const rows = [];
  for (let i = 0; i < P; i++) {
    const before = server.requestLog.entries.length;
    await requestControl(socket, { op: "poke" }, { timeoutMs: 120_000 });
    const s = await status();
    // The requests made during this pass (the status op itself asks the controller, not the server).
    const reqs = server.requestLog.entries.slice(before).filter((r) => r.verb !== "watch");
    if (Object.keys(s.lastPass.actions).length !== 0)
      throw new Error(`not in sync: ${JSON.stringify(s.lastPass)}`);
    rows.push({
      ...s.lastPass,
      requests: reqs.length,
      kinds: reqs.map((r) => `${r.verb} ${r.resource ?? r.path}`),
    });
  }
  const req = median(rows.map((r) => r.requests));
  const cpu = median(rows.map((r) => r.cpuMs));
  console.log(
    `${N} in-sync k8s pods, ${P} passes (medians): pass ${median(rows.map((r) => r.durationMs)).toFixed(1)} ms wall, ` +
      `${cpu.toFixed(1)} ms CPU; ${req} API requests per pass ${target(req, 1, "")} ` +
      `(${[...new Set(rows.flatMap((r) => r.kinds))].join(", ") || "none"})`,
  );
  const base = [];
  const st = [];
  // Asynchronous: the controller answering `gc status` runs in this process.
  const run = async (argv) => {
    const t = performance.now();
    await sh(process.execPath, argv, { maxBuffer: 64 << 20 });
    return performance.now() - t;
  };
  const before = server.requestLog.entries.length;
  await run([GC, "--city", dir, "status"]); // warm the page cache
  const sreqs = server.requestLog.entries.slice(before).filter((r) => r.verb !== "watch");
  const skinds = new Map();
  for (const r of sreqs) {
    const k = `${r.verb} ${r.resource ?? r.path}${r.subresource ? `/${r.subresource}` : ""}`;
    skinds.set(k, (skinds.get(k) ?? 0) + 1);
  }
  console.log(
    `one gc status: ${sreqs.length} API requests (${[...skinds].map(([k, n]) => `${n}× ${k}`).join(", ") || "none"})`,
  );
  const statusAt = await idlePhase();
  console.log(
    `gc status: load average (1 min) ${statusAt.load.toFixed(2)} after ${statusAt.waitedS.toFixed(0)} s of settling`,
  );
  for (let i = 0; i < REPS; i++) {
    base.push(await run(["-e", "0"]));
    st.push(await run([GC, "--city", dir, "status"]));
  }
  // The controller's part of it: the control op `gc status` asks (the status document).
  const snap = [];
  for (let i = 0; i < REPS; i++) {
    const t = performance.now();
    await requestControl(socket, { op: "snapshot", file: join(dir, "city.yaml") }, { timeoutMs: 120_000 });
    snap.push(performance.now() - t);
  }
  const ratio = median(st) / median(base);
  console.log(
    `gc status (controller running): ${median(st).toFixed(1)} ms vs node -e 0 ${median(base).toFixed(1)} ms = ` +
      `${ratio.toFixed(2)}× ${target(ratio, 3)} (medians of ${REPS}, interleaved); ` +
      `of which the controller's snapshot op ${median(snap).toFixed(1)} ms`,
  );
} finally {
  ac.abort();
  await done?.catch(() => undefined);
  await city.close();
  // Asynchronous: the API server it talks to runs in this process.
  await sh(process.execPath, [GC, "--city", dir, "stop"]).catch(() => undefined);
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
