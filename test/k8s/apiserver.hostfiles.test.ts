/**
 * The loopback node shares the host's filesystem with its pods, so the tmux socket a gc pod
 * makes (`GC_TMUX_SOCKET`, plus `<socket>.conf`, and tmux's `<socket>.lock` when a server start
 * was cut short) is a host file: the node must kill that tmux server and remove the files when
 * the pod is deleted (gracefully or at once) and when the server stops, but never the files of
 * a newer pod of the same name.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";
import { POD_MARKER, podHostFiles, startApiServer } from "./apiserver/index.js";
import { pidsTagged, shellPod, useApiServer } from "./support.js";

const fx = useApiServer();
const NS = "default";
const dir = realpathSync(mkdtempSync(join(tmpdir(), "gck-host-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes the conf, then serves a tmux session on the socket, like gc's boot script. */
const SCRIPT = [
  'S="$GC_TMUX_SOCKET"',
  "printf 'set -g remain-on-exit on\\n' > \"$S.conf\"",
  'rm -f "$S"',
  'tmux -S "$S" -f "$S.conf" new-session -d -s main "sleep 1000" || exit 1',
  "exec sleep 1000",
].join("\n");

function tmuxPod(name: string, socket: string): k8s.V1Pod {
  return shellPod(name, SCRIPT, { env: [{ name: "GC_TMUX_SOCKET", value: socket }] });
}

function hasSession(socket: string): boolean {
  return spawnSync("tmux", ["-S", socket, "has-session", "-t", "main"], { stdio: "ignore" }).status === 0;
}

function filesOf(socket: string): boolean[] {
  return [existsSync(socket), existsSync(`${socket}.conf`)];
}

async function startTmuxPod(core: k8s.CoreV1Api, name: string, socket: string): Promise<string> {
  const pod = await core.createNamespacedPod({ namespace: NS, body: tmuxPod(name, socket) });
  await expect.poll(() => hasSession(socket), { timeout: 10_000 }).toBe(true);
  expect(filesOf(socket)).toEqual([true, true]);
  return pod.metadata!.uid!;
}

describe("host files of a pod (gc's tmux socket)", () => {
  it("podHostFiles: the socket named by GC_TMUX_SOCKET and its .conf; nothing for relative or absent values", () => {
    const pod = (env: { name: string; value?: string }[]) => ({
      metadata: { name: "p" },
      spec: { containers: [{ name: "main", image: "x", env }] },
    });
    expect(podHostFiles(pod([{ name: "GC_TMUX_SOCKET", value: "/tmp/gc-tmux-p" }]))).toEqual([
      "/tmp/gc-tmux-p",
      "/tmp/gc-tmux-p.conf",
      "/tmp/gc-tmux-p.lock",
    ]);
    expect(podHostFiles(pod([{ name: "GC_TMUX_SOCKET", value: "rel" }]))).toEqual([]);
    expect(podHostFiles(pod([{ name: "OTHER", value: "/tmp/x" }]))).toEqual([]);
  });

  it("a graceful delete kills the pod's tmux server and removes the socket and .conf", async () => {
    const socket = join(dir, "graceful");
    const uid = await startTmuxPod(fx.core, "host-graceful", socket);
    await fx.core.deleteNamespacedPod({ name: "host-graceful", namespace: NS, gracePeriodSeconds: 1 });
    await expect.poll(() => filesOf(socket), { timeout: 10_000 }).toEqual([false, false]);
    expect(pidsTagged(POD_MARKER, uid)).toEqual([]);
  });

  it("a delete at once (grace 0) does too, and removes a tmux .lock left by a cut-short server start", async () => {
    const socket = join(dir, "now");
    const uid = await startTmuxPod(fx.core, "host-now", socket);
    writeFileSync(`${socket}.lock`, ""); // as a tmux client killed while starting a server leaves it
    await fx.core.deleteNamespacedPod({ name: "host-now", namespace: NS, gracePeriodSeconds: 0 });
    await expect.poll(() => filesOf(socket), { timeout: 10_000 }).toEqual([false, false]);
    expect(existsSync(`${socket}.lock`)).toBe(false);
    expect(pidsTagged(POD_MARKER, uid)).toEqual([]);
  });

  it("a pod of the same name created right after the delete keeps its own socket", async () => {
    const socket = join(dir, "same");
    await startTmuxPod(fx.core, "host-same", socket);
    await fx.core.deleteNamespacedPod({ name: "host-same", namespace: NS, gracePeriodSeconds: 0 });
    const uid = await startTmuxPod(fx.core, "host-same", socket);
    // Long after the first pod's cleanup: the second one's server still answers on its files.
    await expect.poll(() => pidsTagged(POD_MARKER, uid).length, { timeout: 5_000 }).toBeGreaterThan(0);
    expect(hasSession(socket)).toBe(true);
    expect(filesOf(socket)).toEqual([true, true]);
    await fx.core.deleteNamespacedPod({ name: "host-same", namespace: NS, gracePeriodSeconds: 0 });
    await expect.poll(() => filesOf(socket), { timeout: 10_000 }).toEqual([false, false]);
  });

  it("stopping the server removes the files of every pod still running", async () => {
    const server = await startApiServer();
    try {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(server.kubeconfigPath);
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const sockets = [join(dir, "stop-a"), join(dir, "stop-b")];
      await Promise.all(sockets.map((s, i) => startTmuxPod(core, `host-stop-${i}`, s)));
      await server.stop();
      expect(sockets.map(filesOf)).toEqual([
        [false, false],
        [false, false],
      ]);
      expect(sockets.map(hasSession)).toEqual([false, false]);
    } finally {
      await server.stop();
    }
  });
});
