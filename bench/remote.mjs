#!/usr/bin/env node
// bench/remote: the k8s and docker providers (one long-lived tmux control stream per pod or
// container) against one raw exec running the same tmux command, in the same run.
//   k8s, on the loopback API server with 0 and 150 ms injected per request: peek(50) against
//   `kubectl exec POD -- tmux … capture-pane …`, a nudge against `kubectl exec` of
//   `send-keys -l TEXT ; send-keys Enter`, execCommand (what `gc run` does in a pod) against
//   `kubectl exec POD -- true`. Targets: peek ≤ 1.5× the raw exec, nudge ≤ 2×.
//   Then API requests of a steady observation pass over 200 pods (target ≤ 1).
//   docker, on a private dockerd: peek and nudge against `docker exec` of the same commands.
// Raw and provider batches alternate per round, so both see the same load; medians are
// printed with the 1-minute load average at start and end. On a loaded machine the figures
// say that it works, not how fast it is.
// Needs `npm run build` first.
//   node bench/remote.mjs [--rounds R] [--pods P] [--no-docker] [--json]
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "7" },
    pods: { type: "string", default: "200" },
    "no-docker": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  },
});
const ROUNDS = Number(values.rounds);
const PODS = Number(values.pods);
const dist = new URL("../dist/", import.meta.url);
const load = async (p) => import(new URL(p, dist).href);
let k8s;
let apiMod;
let spec;
let names;
let apiserver;
let dockerMod;
let engineMod;
try {
  k8s = await load("internal/runtime/k8s/index.js");
  apiMod = await load("internal/runtime/k8s/api.js");
  spec = await load("internal/runtime/k8s/spec.js");
  names = await load("internal/runtime/k8s/names.js");
  apiserver = await load("test/k8s/apiserver/index.js");
  dockerMod = await load("internal/runtime/docker/index.js");
  engineMod = await load("conformance/docker-engine.js");
} catch (e) {
  console.error(`bench/remote: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
}
const sh = promisify(execFile);
const root = mkdtempSync(join(tmpdir(), "gc-bench-remote-"));
const results = { loadStart: loadavg()[0], k8s: {}, docker: undefined, loadEnd: 0 };
const cleanups = [];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const time = async (fn) => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

/** Medians of `gc` and `raw` over ROUNDS rounds, alternating which goes first. */
async function compare(gc, raw) {
  const a = [];
  const b = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      a.push(await time(gc));
      b.push(await time(raw));
    } else {
      b.push(await time(raw));
      a.push(await time(gc));
    }
  }
  const g = median(a);
  const r = median(b);
  return { gcMs: Math.round(g), rawMs: Math.round(r), ratio: Number((g / r).toFixed(2)) };
}

async function waitFor(fn, ms = 60_000) {
  const by = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > by) throw new Error("bench/remote: timed out waiting");
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function benchK8s() {
  const server = await apiserver.startApiServer({});
  cleanups.push(() => server.stop());
  const api = await apiMod.connect({ kubeconfig: server.kubeconfigPath });
  const work = join(root, "k8s");
  mkdirSync(work, { recursive: true });
  const p = new k8s.K8sProvider({
    city: "bench",
    cityDir: work,
    stateDir: work,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: work },
    api,
  });
  cleanups.push(async () => {
    await p.shutdown().catch(() => undefined);
    await p.close();
  });
  await p.start("b", { command: "exec cat", workDir: work, env: {} });
  const pod = p.identity("b").pod;
  const sock = spec.tmuxSocket(pod);
  const kubectl = (...args) =>
    sh("kubectl", ["--kubeconfig", server.kubeconfigPath, "exec", pod, "--", ...args]);
  await p.peek("b", 50); // the channel opens here, once
  for (const latency of [0, 150]) {
    server.faults.latencyMs = latency;
    let n = 0;
    const peek = await compare(
      () => p.peek("b", 50),
      () =>
        kubectl("tmux", "-S", sock, "capture-pane", "-p", "-J", "-S", "-50", "-t", `${spec.TMUX_SESSION}:`),
    );
    const nudge = await compare(
      () => p.nudge("b", `n${++n}`),
      () =>
        kubectl(
          "tmux",
          "-S",
          sock,
          "send-keys",
          "-t",
          `${spec.TMUX_SESSION}:`,
          "-l",
          `r${n}`,
          ";",
          "send-keys",
          "-t",
          `${spec.TMUX_SESSION}:`,
          "Enter",
        ),
    );
    const run = await compare(
      () => p.execCommand("b", ["true"]),
      () => kubectl("true"),
    );
    results.k8s[`latency${latency}`] = { peek, nudge, run };
  }
  server.faults.latencyMs = 0;
  // A steady observation pass over PODS pods of one city.
  const city = "count";
  const q = new k8s.K8sProvider({
    city,
    cityDir: work,
    stateDir: work,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: work },
  });
  cleanups.push(async () => {
    await q.shutdown().catch(() => undefined);
    await q.close();
  });
  const create = async (name) => {
    const m = spec.buildPod({
      id: { owner: city, name, pod: names.podName(city, name) },
      settings: q.settings,
      image: "gc-test/agent:1",
      workDir: work,
      env: {},
      startId: "count",
      bootGraceSeconds: 60,
    });
    m.spec.containers = [{ name: "agent", image: "gc-test/agent:1", command: ["sleep", "3600"] }];
    await api.call((c) => c.createNamespacedPod({ namespace: "default", body: m }));
  };
  const all = Array.from({ length: PODS }, (_, i) => `agent-${i}`);
  for (let i = 0; i < all.length; i += 20) await Promise.all(all.slice(i, i + 20).map(create));
  await waitFor(async () => (await q.listRunning("")).length === PODS);
  server.requestLog.clear();
  await q.snapshot("");
  results.k8s.requestsPerPass = { pods: PODS, requests: server.requestLog.count() };
}

async function benchDocker() {
  const why = engineMod.engineUnavailableReason();
  if (why) {
    results.docker = { skipped: why };
    return;
  }
  const engine = await engineMod.startPrivateEngine();
  cleanups.push(() => engine.stop());
  const image = await engineMod.ensureTestImage(engine.socketPath);
  const work = join(root, "docker");
  mkdirSync(work, { recursive: true });
  const p = dockerMod.createProvider({
    city: "bench",
    cityDir: work,
    stateDir: work,
    settings: { host: engine.socketPath, image },
  });
  cleanups.push(async () => {
    await p.shutdown().catch(() => undefined);
    await p.close();
  });
  await p.start("b", { command: "exec cat", workDir: work, env: {} });
  const container = p.containerName("b");
  const docker = (...args) => sh("docker", ["-H", `unix://${engine.socketPath}`, "exec", container, ...args]);
  await p.peek("b", 50);
  let n = 0;
  const peek = await compare(
    () => p.peek("b", 50),
    () => docker("tmux", "capture-pane", "-p", "-J", "-S", "-50", "-t", "gc:"),
  );
  const nudge = await compare(
    () => p.nudge("b", `n${++n}`),
    () => docker("tmux", "send-keys", "-t", "gc:", "-l", `r${n}`, ";", "send-keys", "-t", "gc:", "Enter"),
  );
  results.docker = { peek, nudge };
}

try {
  await benchK8s();
  if (!values["no-docker"]) await benchDocker();
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  rmSync(root, { recursive: true, force: true });
}
results.loadEnd = loadavg()[0];
if (values.json) console.log(JSON.stringify(results, null, 2));
else {
  console.log(
    `load average (1 min): ${results.loadStart.toFixed(1)} at start, ${results.loadEnd.toFixed(1)} at end`,
  );
  const row = (label, r) =>
    console.log(
      `  ${label.padEnd(12)} gc ${String(r.gcMs).padStart(6)} ms   raw ${String(r.rawMs).padStart(6)} ms   ${r.ratio}×`,
    );
  for (const latency of [0, 150]) {
    const r = results.k8s[`latency${latency}`];
    console.log(`k8s, ${latency} ms per request (targets: peek ≤ 1.5×, nudge ≤ 2× one kubectl exec)`);
    row("peek", r.peek);
    row("nudge", r.nudge);
    row("run", r.run);
  }
  const rp = results.k8s.requestsPerPass;
  console.log(`k8s steady observation pass over ${rp.pods} pods: ${rp.requests} API request(s) (target ≤ 1)`);
  if (results.docker?.skipped) console.log(`docker: skipped (${results.docker.skipped})`);
  else if (results.docker) {
    console.log("docker (targets: peek ≤ 1.5×, nudge ≤ 2× one docker exec)");
    row("peek", results.docker.peek);
    row("nudge", results.docker.nudge);
  }
}
