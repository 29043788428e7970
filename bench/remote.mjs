#!/usr/bin/env node
// bench/remote: the k8s and docker providers (one long-lived tmux control stream per pod or
// container) against one raw exec running the same tmux command, in the same run.
//   k8s, on the loopback API server with 0 and 150 ms injected per request: peek(50) against
//   `kubectl exec POD -- tmux … capture-pane …`, a nudge against `kubectl exec` of
//   `send-keys -l TEXT ; send-keys Enter`, and one turn — the built CLI's
//   `gc run repl "TEXT"` on a city (`gc start --once`) whose agent is a tiny shell REPL
//   (`repl> ` prompt, answers `= TEXT`) — against the same work done by kubectl: one exec of
//   `send-keys -l TEXT ; send-keys Enter`, then execs of `capture-pane` until the answer and a
//   fresh prompt show. Targets: peek ≤ 1.5× the raw exec, nudge ≤ 2× (`gc run` has none: it is
//   a whole CLI process against kubectl processes; its ratio is printed).
//   Then API requests of a steady observation pass over 200 pods (target ≤ 1).
//   docker, on a private dockerd: the same three against `docker exec`.
// Raw and gc batches alternate per round, so both see the same load; medians are printed
// with the load average (bench/lib.mjs: no target verdict unless the machine is idle).
// Everything started (API server, pods, dockerd, containers, cities, temp dirs) is removed
// at the end, also on failure. Needs `npm run build` first.
//   node bench/remote.mjs [--rounds R] [--pods P] [--no-docker] [--json]
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { benchStart, loadReport, target } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "7" },
    pods: { type: "string", default: "200" },
    "no-docker": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  },
});
benchStart("bench/remote", { json: values.json });
const ROUNDS = Number(values.rounds);
const PODS = Number(values.pods);
const dist = new URL("../dist/", import.meta.url);
const load = async (p) => import(new URL(p, dist).href);
// The package's `bin`: what `gc` on PATH (npm link, npx gc) runs.
const { bin } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const GC = fileURLToPath(new URL(`../${bin.gc}`, import.meta.url));
let k8s;
let apiMod;
let spec;
let names;
let apiserver;
let dockerMod;
let dockerScripts;
let engineMod;
try {
  k8s = await load("internal/runtime/k8s/index.js");
  apiMod = await load("internal/runtime/k8s/api.js");
  spec = await load("internal/runtime/k8s/spec.js");
  names = await load("internal/runtime/k8s/names.js");
  apiserver = await load("test/k8s/apiserver/index.js");
  dockerMod = await load("internal/runtime/docker/index.js");
  dockerScripts = await load("internal/runtime/docker/scripts.js");
  engineMod = await load("conformance/docker-engine.js");
} catch (e) {
  console.error(`bench/remote: cannot load dist/ (run \`npm run build\` first): ${e.message}`);
  process.exit(1);
}
const sh = promisify(execFile);
const root = realpathSync(mkdtempSync(join(tmpdir(), "gc-bench-remote-")));
const results = { k8s: {}, docker: undefined };
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

/** The REPL agent of the `gc run` cities: prompt `repl> `, answers a line L with `= L`. */
const REPL = `exec sh -c 'while printf "repl> "; read -r l; do echo "= $l"; done'`;
const PROMPT = "repl> ";

/** A temp city dir whose one agent `repl` runs {@link REPL} on `session` (YAML lines). */
function replCity(kind, session) {
  const dir = join(root, `city-${kind}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "city.yaml"),
    `workspace:\n  name: brem${kind}${process.pid}\nsession:\n${session}daemon:\n  interval: 1h\n` +
      `agents:\n  - name: repl\n    start_command: ${JSON.stringify(REPL)}\n` +
      `    ready_prompt_prefix: ${JSON.stringify(PROMPT)}\n`,
  );
  return dir;
}

/** Runs the built gc on `dir`, asynchronously (the API server lives in this process). */
const gcCli = (dir, ...args) =>
  sh(process.execPath, [GC, "--city", dir, ...args], {
    env: { ...process.env, NO_COLOR: "1" },
    timeout: 120_000,
    maxBuffer: 16 << 20,
  });

/** Starts the city (`gc start --once`) and stops it at the end. */
async function startCity(dir) {
  cleanups.push(async () => {
    await gcCli(dir, "stop").catch(() => undefined);
  });
  await gcCli(dir, "start", "--once");
}

/** One `gc run repl TEXT`; fails unless the turn completed with the REPL's answer in its output. */
async function gcRun(dir, text) {
  const { stdout } = await gcCli(dir, "run", "repl", text, "--timeout", "60s", "--json");
  const r = JSON.parse(stdout);
  if (r.status !== "completed" || !r.output.split("\n").some((l) => l.trimEnd() === `= ${text}`))
    throw new Error(`gc run ${text}: ${stdout}`);
}

/**
 * The raw turn: `exec(...tmuxArgs)` runs one tmux command in the pod or container; types
 * TEXT + Enter in one exec, then reads the screen until the answer and a bare prompt show.
 */
async function rawTurn(exec, target, text) {
  await exec("send-keys", "-t", target, "-l", text, ";", "send-keys", "-t", target, "Enter");
  const by = Date.now() + 60_000;
  for (;;) {
    const { stdout } = await exec("capture-pane", "-p", "-J", "-S", "-50", "-t", target);
    const lines = stdout.split("\n").map((l) => l.trimEnd());
    while (lines.length > 0 && lines.at(-1) === "") lines.pop();
    const at = lines.lastIndexOf(`= ${text}`);
    if (at !== -1 && lines.at(-1) === PROMPT.trimEnd() && at === lines.length - 2) return;
    if (Date.now() > by) throw new Error(`raw turn ${text}: no answer on screen:\n${stdout}`);
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
  const kubectlExec = (podName, ...args) =>
    sh("kubectl", ["--kubeconfig", server.kubeconfigPath, "exec", podName, "--", ...args]);
  const kubectl = (...args) => kubectlExec(pod, ...args);
  await p.peek("b", 50); // the channel opens here, once

  // The `gc run` city: one REPL pod, started by the built CLI.
  const city = replCity(
    "k8s",
    `  provider: k8s\n  k8s:\n    image: gc-test/agent:1\n    kubeconfig: ${server.kubeconfigPath}\n` +
      `    work_root: ${join(root, "k8s-pods")}\n`,
  );
  await startCity(city);
  const { stdout: podsJson } = await sh("kubectl", [
    "--kubeconfig",
    server.kubeconfigPath,
    "get",
    "pods",
    "-o",
    "json",
  ]);
  const replPod = JSON.parse(podsJson).items.find(
    (x) => x.metadata.annotations?.["gc.dev/session-name"] === "repl",
  )?.metadata.name;
  if (!replPod) throw new Error("bench/remote: the city's repl pod is not listed");
  const replTmux = (...args) => kubectlExec(replPod, "tmux", "-S", spec.tmuxSocket(replPod), ...args);
  let turn = 0;
  await gcRun(city, "warm"); // waits for the REPL's first prompt; warms the page cache
  await rawTurn(replTmux, spec.TMUX_TARGET, "rawwarm");

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
      () => gcRun(city, `g${++turn}`),
      () => rawTurn(replTmux, spec.TMUX_TARGET, `r${turn}`),
    );
    results.k8s[`latency${latency}`] = { peek, nudge, run };
  }
  server.faults.latencyMs = 0;
  // A steady observation pass over PODS pods of one city.
  const owner = "count";
  const q = new k8s.K8sProvider({
    city: owner,
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
      id: { owner, name, pod: names.podName(owner, name) },
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
  const dockerCli = (...args) => sh("docker", ["-H", `unix://${engine.socketPath}`, ...args]);
  const container = p.containerName("b");
  const pane = dockerScripts.PANE;
  const docker = (...args) => dockerCli("exec", container, ...args);
  await p.peek("b", 50);

  const city = replCity(
    "docker",
    `  provider: docker\n  docker: { host: ${engine.socketPath}, image: ${image} }\n`,
  );
  await startCity(city);
  const listed = (
    await dockerCli("ps", "--filter", `label=${dockerMod.LABEL_SESSION}=repl`, "--format", "{{.Names}}")
  ).stdout
    .split("\n")
    .filter(Boolean);
  if (listed.length !== 1) throw new Error(`bench/remote: repl containers listed: ${listed.join(", ")}`);
  const replTmux = (...args) => dockerCli("exec", listed[0], "tmux", ...args);
  await gcRun(city, "warm");
  await rawTurn(replTmux, pane, "rawwarm");

  let n = 0;
  const peek = await compare(
    () => p.peek("b", 50),
    () => docker("tmux", "capture-pane", "-p", "-J", "-S", "-50", "-t", pane),
  );
  const nudge = await compare(
    () => p.nudge("b", `n${++n}`),
    () => docker("tmux", "send-keys", "-t", pane, "-l", `r${n}`, ";", "send-keys", "-t", pane, "Enter"),
  );
  let turn = 0;
  const run = await compare(
    () => gcRun(city, `g${++turn}`),
    () => rawTurn(replTmux, pane, `r${turn}`),
  );
  results.docker = { peek, nudge, run };
}

try {
  await benchK8s();
  if (!values["no-docker"]) await benchDocker();
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
}

const verdicts = (r) => ({
  peek: target(r.peek.ratio, 1.5),
  nudge: target(r.nudge.ratio, 2),
});
if (values.json) {
  const k = results.k8s;
  const out = {
    load: loadReport(),
    k8s: {
      latency0: { ...k.latency0, verdicts: verdicts(k.latency0) },
      latency150: { ...k.latency150, verdicts: verdicts(k.latency150) },
      requestsPerPass: { ...k.requestsPerPass, verdict: target(k.requestsPerPass.requests, 1, "") },
    },
    docker:
      results.docker && !results.docker.skipped
        ? { ...results.docker, verdicts: verdicts(results.docker) }
        : results.docker,
  };
  console.log(JSON.stringify(out, null, 2));
} else {
  const row = (label, r, tgt = "") =>
    console.log(
      `  ${label.padEnd(7)} gc ${String(r.gcMs).padStart(6)} ms   raw ${String(r.rawMs).padStart(6)} ms   ` +
        `${r.ratio}× ${tgt}`.trimEnd(),
    );
  const rows = (r, raw) => {
    const v = verdicts(r);
    row("peek", r.peek, v.peek);
    row("nudge", r.nudge, v.nudge);
    row("gc run", r.run, `(no target; raw: ${raw} send-keys, then capture-pane until the answer)`);
  };
  console.log(`medians of ${ROUNDS} round(s), gc and raw alternating`);
  for (const latency of [0, 150]) {
    console.log(`k8s, ${latency} ms per request: gc against one \`kubectl exec\` of the same tmux command`);
    rows(results.k8s[`latency${latency}`], "kubectl exec");
  }
  const rp = results.k8s.requestsPerPass;
  console.log(
    `k8s requests per steady pass with ${rp.pods} pods: ${rp.requests} ${target(rp.requests, 1, "")}`,
  );
  if (results.docker?.skipped) console.log(`docker: skipped (${results.docker.skipped})`);
  else if (results.docker) {
    console.log("docker: gc against one `docker exec` of the same tmux command");
    rows(results.docker, "docker exec");
  }
}
