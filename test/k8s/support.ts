/**
 * Test support for the loopback API server: one server per test file (stopped after it, even on
 * failure), a client-node KubeConfig for it, and a runner for the real kubectl.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll } from "vitest";
import { type ApiServer, type ApiServerOptions, startApiServer } from "./apiserver/index.js";

/** A started server plus clients, valid inside tests of the file that called {@link useApiServer}. */
export interface ServerFixture {
  server: ApiServer;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
}

/** Starts a server before the file's tests and stops it after them. */
export function useApiServer(opts: ApiServerOptions = {}): ServerFixture {
  const fx = {} as ServerFixture;
  beforeAll(async () => {
    fx.server = await startApiServer(opts);
    fx.kc = new k8s.KubeConfig();
    fx.kc.loadFromFile(fx.server.kubeconfigPath);
    fx.core = fx.kc.makeApiClient(k8s.CoreV1Api);
  });
  afterAll(async () => {
    await fx.server?.stop();
  }, 60_000);
  return fx;
}

/** Output of one kubectl run. */
export interface KubectlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The real kubectl binary: the bundled 1.32 behind the Cloud SDK dispatcher when present (skips
 * the dispatcher's extra `/version` probe), else `kubectl` from PATH.
 */
export const KUBECTL = existsSync("/usr/lib/google-cloud-sdk/bin/kubectl.1.32")
  ? "/usr/lib/google-cloud-sdk/bin/kubectl.1.32"
  : "kubectl";

/** Runs kubectl against `server` (argv, no shell). */
export function kubectl(server: ApiServer, args: string[], input?: string | Buffer): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(KUBECTL, args, {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...server.kubectlEnv },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString("utf8");
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/** Pids of live processes carrying `NAME=value` in their environment. */
export function pidsTagged(name: string, value: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const env = readFileSync(`/proc/${e}/environ`, "latin1");
      const stat = readFileSync(`/proc/${e}/stat`, "latin1");
      if (/\) Z /.test(stat)) continue;
      if (env.split("\0").includes(`${name}=${value}`)) out.push(Number(e));
    } catch {
      // gone
    }
  }
  return out;
}

/** A minimal pod manifest with one container `main` running `sh -c script`. */
export function shellPod(name: string, script: string, extra: Record<string, unknown> = {}): k8s.V1Pod {
  return {
    metadata: { name, labels: { app: "loopback-test" } },
    spec: {
      containers: [{ name: "main", image: "busybox:1.36", command: ["sh", "-c", script], ...extra }],
    },
  };
}

/** The Debian interpreter that has the official client (`python3-kubernetes`). */
export const PYTHON = "/usr/bin/python3";

/**
 * Runs `script` with the official Python client (`python3-kubernetes`) against `server`:
 * `KUBECONFIG` is set, `sys.argv[1:]` are `args`; the script prints its result as JSON on
 * stdout. Rejects with the script's stderr when it fails.
 */
export function python(server: ApiServer, script: string, args: string[] = []): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ["-c", script, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        KUBECONFIG: server.kubeconfigPath,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString("utf8");
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`python exited ${code}: ${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}
