/**
 * End-to-end: the built `gc` with `session.provider: k8s` against the loopback API server,
 * checked with the real `kubectl`: start makes one pod per agent, a core change replaces
 * exactly that pod, peek/nudge/run work through exec, and stop deletes every pod and Secret.
 */
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import pty from "@lydell/node-pty";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ownerKey } from "../../internal/runtime/identity.js";
import { type ApiServer, startApiServer } from "../k8s/apiserver/index.js";
import { GC_BIN, makeCity, runGc, storedCityId, type TestCity, until } from "../support/city.js";
import { has } from "../support/needs.js";

const hasKubectl = has("kubectl");

let server: ApiServer;

beforeAll(async () => {
  server = await startApiServer({});
});
/** Work roots of the cities started: host dirs (loopback pods share the host's filesystem). */
const workRoots: string[] = [];

afterAll(async () => {
  await server?.stop(); // no pod is left to write in a work root
  for (const d of workRoots) rmSync(d, { recursive: true, force: true });
});

/** Runs the real kubectl asynchronously (the API server lives in this process). */
function kubectl(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("kubectl", ["--server", server.url, "--insecure-skip-tls-verify", ...args], {
      env: { ...process.env, ...server.kubectlEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `kubectl get <kind> -l gc.dev/city=<city>`: names, sorted. */
async function kubectlNames(kind: string, city: TestCity): Promise<string[]> {
  const r = await kubectl(
    "get",
    kind,
    "-l",
    `gc.dev/city=${ownerKey(city.name, storedCityId(city.dir))}`,
    "-o",
    "name",
  );
  if (r.code !== 0) throw new Error(`kubectl get ${kind}: ${r.stderr}`);
  return r.stdout.split("\n").filter(Boolean).sort();
}

/** Pod uid by session name, through kubectl -o json. */
async function podUids(city: TestCity): Promise<Record<string, string>> {
  const r = await kubectl(
    "get",
    "pods",
    "-l",
    `gc.dev/city=${ownerKey(city.name, storedCityId(city.dir))}`,
    "-o",
    "json",
  );
  if (r.code !== 0) throw new Error(`kubectl get pods: ${r.stderr}`);
  const list = JSON.parse(r.stdout) as {
    items: { metadata: { uid: string; annotations: Record<string, string> } }[];
  };
  return Object.fromEntries(
    list.items.map((p) => [p.metadata.annotations["gc.dev/session-name"], p.metadata.uid]),
  );
}

/** The pods' work root of city `name`. */
function workRoot(name: string): string {
  return `/tmp/gc-k8s-e2e-${name}`;
}

function cityYaml(alphaCommand: string): string {
  return `workspace:
  name: @NAME@
session:
  provider: k8s
  k8s:
    image: gc-test/agent:1
    kubeconfig: ${server.kubeconfigPath}
    work_root: ${workRoot("@NAME@")}
daemon:
  interval: 1h
agents:
  - name: alpha
    start_command: "${alphaCommand}"
    work_dir: ./alpha
  - name: beta
    start_command: "exec cat"
    work_dir: ./beta
    env:
      API_TOKEN: e2e-secret-value
`;
}

describe.skipIf(!hasKubectl)("gc on k8s (loopback API server, real kubectl)", { timeout: 240_000 }, () => {
  it("start, drift replaces exactly that pod, peek/nudge/run, stop deletes every pod and Secret", async () => {
    const city = makeCity(cityYaml("exec sleep 100000"));
    workRoots.push(workRoot(city.name));
    // A pod of another city in the same namespace, named like one of ours: never listed by
    // the ownership label, never touched by gc.
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: {
          name: "alpha-other-city",
          labels: { "app.kubernetes.io/managed-by": "gc", "gc.dev/city": "other-city" },
          annotations: { "gc.dev/city": "other-city", "gc.dev/session-name": "alpha" },
        },
        spec: { containers: [{ name: "agent", image: "gc-test/agent:1", command: ["sleep", "3600"] }] },
      },
    });
    const start = await city.gc(["start", "--once"], { timeoutMs: 120_000 });
    expect(start.stderr).toBe("");
    expect(start.code).toBe(0);

    // kubectl lists exactly the city's sessions by the ownership label.
    const pods = await kubectlNames("pods", city);
    expect(pods).toHaveLength(2);
    expect(pods).not.toContain("pod/alpha-other-city");
    expect((await kubectl("get", "pods", "-o", "name")).stdout.split("\n").filter(Boolean)).toHaveLength(3);
    expect(Object.keys(await podUids(city)).sort()).toEqual(["alpha", "beta"]);
    expect(await kubectlNames("secrets", city)).toHaveLength(1);
    const podJson = (
      await kubectl(
        "get",
        "pods",
        "-l",
        `gc.dev/city=${ownerKey(city.name, storedCityId(city.dir))}`,
        "-o",
        "json",
      )
    ).stdout;
    expect(podJson).not.toContain("e2e-secret-value");

    // peek / nudge / run through exec into the pod's tmux session.
    const nudge = await city.gc(["nudge", "beta", "hello from gc"]);
    expect(nudge.code, nudge.stderr).toBe(0);
    await until("the nudge on beta's screen", async () => {
      const r = await city.gc(["peek", "beta"]);
      return r.code === 0 && r.stdout.split("\n").filter((l) => l === "hello from gc").length >= 2;
    });
    // gc status shows its activity (the pod listing carries none: each session is asked).
    const st = JSON.parse((await city.gc(["status", "--json"])).stdout) as {
      sessions: { name: string; lastActivity: string | null; attached: boolean }[];
    };
    expect(st.sessions.find((x) => x.name === "beta")?.lastActivity).toEqual(expect.any(String));
    const run = await city.gc(["run", "beta", "second turn", "--timeout", "20s", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { status: string }).status).toBe("completed");

    // gc attach: this terminal (a real pty) on beta's pod over the exec WebSocket with a TTY;
    // C-b d detaches and beta keeps running.
    const term = pty.spawn(process.execPath, [GC_BIN, "--city", city.dir, "attach", "beta"], {
      name: "xterm-256color",
      cols: 100,
      rows: 30,
      cwd: city.dir,
      env: { ...(process.env as Record<string, string>), TMUX: "", TERM: "xterm-256color", NO_COLOR: "1" },
    });
    let screen = "";
    term.onData((d) => {
      screen += d;
    });
    const detached = new Promise<{ exitCode: number }>((resolve) => term.onExit(resolve));
    try {
      await until("beta's screen in the attached terminal", async () => screen.includes("hello from gc"));
      term.write("\x02d");
      expect((await detached).exitCode, screen).toBe(0);
    } finally {
      term.kill("SIGKILL");
    }
    expect((await city.gc(["peek", "beta"])).code).toBe(0);
    // A terminal that reports no size (script(1) on a pipe: 0×0) leaves the window's size
    // alone; sent as is, it shrank the window to 1×1 for good.
    const zero = spawn(
      "script",
      ["-qec", `${process.execPath} ${GC_BIN} --city ${city.dir} attach beta`, "/dev/null"],
      {
        env: { ...process.env, TMUX: "" },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let zeroOut = "";
    zero.stdout.setEncoding("utf8").on("data", (d: string) => (zeroOut += d));
    const zeroDone = new Promise<number | null>((resolve) => zero.on("close", resolve));
    try {
      await until("the attached screen (0×0 terminal)", () => zeroOut.includes("hello from gc"));
      zero.stdin.write("\x02d");
      expect(await zeroDone, zeroOut).toBe(0);
    } finally {
      zero.kill("SIGKILL");
    }
    const lines = (await city.gc(["peek", "beta"])).stdout.split("\n");
    expect(lines.filter((l) => l === "hello from gc").length).toBeGreaterThanOrEqual(2);

    // A core change to alpha replaces alpha's pod only.
    const before = await podUids(city);
    city.write(cityYaml("exec sleep 200000"));
    const drift = await city.gc(["drift", "--json"]);
    expect(drift.stdout).toContain("alpha");
    const again = await city.gc(["start", "--once"], { timeoutMs: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    const after = await until("alpha's pod replaced", async () => {
      const u = await podUids(city);
      return u.alpha && u.alpha !== before.alpha ? u : undefined;
    });
    expect(after.beta).toBe(before.beta);

    // stop deletes every pod and Secret of the city.
    const stop = await city.gc(["stop"], { timeoutMs: 120_000 });
    expect(stop.code, stop.stderr).toBe(0);
    expect(await kubectlNames("pods", city)).toEqual([]);
    expect(await kubectlNames("secrets", city)).toEqual([]);
    // The other city's pod is still there.
    const all = await kubectl("get", "pods", "-o", "name");
    expect(all.stdout.split("\n").filter(Boolean)).toEqual(["pod/alpha-other-city"]);
  });

  it("the same city in another directory does not start a second fleet: it refuses, naming the holder", async () => {
    const city = makeCity(cityYaml("exec sleep 100000"));
    workRoots.push(workRoot(city.name));
    const start = await city.gc(["start", "--once"], { timeoutMs: 120_000 });
    expect(start.code, start.stderr).toBe(0);
    const uids = await podUids(city);
    expect(Object.keys(uids).sort()).toEqual(["alpha", "beta"]);
    // A second checkout: the city file and its stored identity (.gc/city.json), elsewhere.
    const other = realpathSync(mkdtempSync(join(tmpdir(), "gc-city-copy-")));
    try {
      cpSync(join(city.dir, "city.yaml"), join(other, "city.yaml"));
      mkdirSync(join(other, ".gc"), { mode: 0o700 });
      cpSync(join(city.dir, ".gc", "city.json"), join(other, ".gc", "city.json"));
      expect(storedCityId(other)).toBe(storedCityId(city.dir));
      const second = await runGc(["--city", other, "start", "--once"], { timeoutMs: 120_000 });
      expect(`${second.stdout}\n${second.stderr}`).toContain(`${hostname()}:${city.dir} holds lease`);
      // One fleet: the same two pods, untouched.
      expect(await podUids(city)).toEqual(uids);
      const stopOther = await runGc(["--city", other, "stop"], { timeoutMs: 60_000 });
      expect(`${stopOther.stdout}\n${stopOther.stderr}`).toContain("holds lease");
      expect(await podUids(city)).toEqual(uids);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    const stop = await city.gc(["stop"], { timeoutMs: 120_000 });
    expect(stop.code, stop.stderr).toBe(0);
    expect(await kubectlNames("pods", city)).toEqual([]);
  });
});
