/**
 * The k8s provider's tmux control channel against the loopback API server: one exec
 * WebSocket per pod carries every steady-state screen, key and nudge operation (no new exec
 * per operation), and a channel lost mid-operation — the API server restarting, the
 * channel's tmux client killed in the pod — fails that operation cleanly or retries it,
 * leaves the session running, and the next operation works.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type KubeApi } from "../../../internal/runtime/k8s/api.js";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";
import { KILL_CHANNEL, settle } from "../../support/channel.js";

let server: ApiServer;
let root: string;
let n = 0;

beforeAll(async () => {
  server = await startApiServer({});
  root = await mkdtemp(join(tmpdir(), "gc-k8s-chan-"));
});

afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

/** A provider whose API requests (REST calls and exec upgrades) are counted. */
async function provider(city: string): Promise<{ p: K8sProvider; api: KubeApi }> {
  const api = await connect({ kubeconfig: server.kubeconfigPath });
  const p = new K8sProvider({
    city,
    cityDir: root,
    stateDir: root,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
    api,
  });
  return { p, api };
}

async function config(command: string): Promise<StartConfig> {
  const workDir = join(root, `w${++n}`);
  await mkdir(workDir, { recursive: true });
  return { command, workDir, env: {} };
}

describe("k8s tmux control channel", { timeout: 120_000 }, () => {
  it("steady state: a peek is one pod read and no exec, a nudge adds no exec either", async () => {
    const { p, api } = await provider(`chs-${process.pid}`);
    try {
      await p.start("s", await config("echo READY; exec cat"));
      await expect.poll(() => p.peek("s", 5), { timeout: 30_000 }).toContain("READY");
      const before = api.stats.requests;
      await p.peek("s", 5);
      // One GET of the pod (ownership and phase); the screen came over the open channel.
      expect(api.stats.requests - before).toBe(1);
      const beforeNudge = api.stats.requests;
      await p.nudge("s", "hello-channel");
      await p.nudge("s", "second-line");
      await expect.poll(() => p.peek("s", 10), { timeout: 15_000 }).toContain("second-line");
      const screen = await p.peek("s", 10);
      expect(screen.split("\n").filter((l) => l === "hello-channel").length).toBeGreaterThanOrEqual(1);
      // Two nudges and two peeks: one pod read each, no exec upgrade.
      expect(api.stats.requests - beforeNudge).toBe(4);
    } finally {
      await p.shutdown();
      await p.close();
    }
  });

  it("an API server restart mid-operation: the operation fails cleanly or retries, the session keeps running, the next operation works", async () => {
    const { p } = await provider(`chr-${process.pid}`);
    try {
      await p.start("r", await config("echo BEFORE-RESTART; exec cat"));
      await expect.poll(() => p.peek("r", 5), { timeout: 30_000 }).toContain("BEFORE-RESTART");
      const [pod] = [p.identity("r").pod];
      const uidBefore = (
        await (await p.api()).call((c) => c.readNamespacedPod({ name: pod, namespace: "default" }))
      ).metadata?.uid;
      const [, during] = await Promise.all([
        server.restart({ downMs: 300 }),
        settle(p.waitForIdle("r", 2_000)),
      ]);
      expect(["ok", "provider-error"]).toContain(during);
      await expect.poll(() => settle(p.peek("r", 5)), { timeout: 30_000 }).toBe("ok");
      expect(await p.peek("r", 5)).toContain("BEFORE-RESTART");
      await p.nudge("r", "after-restart");
      await expect.poll(() => p.peek("r", 10), { timeout: 15_000 }).toContain("after-restart");
      const uidAfter = (
        await (await p.api()).call((c) => c.readNamespacedPod({ name: pod, namespace: "default" }))
      ).metadata?.uid;
      expect(uidAfter).toBe(uidBefore);
      expect(await p.isRunning("r")).toBe(true);
    } finally {
      await p.shutdown();
      await p.close();
    }
  });

  it("the channel's tmux client killed in the pod: the next operations reconnect, the session keeps running", async () => {
    const { p } = await provider(`chk-${process.pid}`);
    try {
      await p.start("k", await config("echo ALIVE; exec cat"));
      await expect.poll(() => p.peek("k", 5), { timeout: 30_000 }).toContain("ALIVE");
      const kill = await p.execCommand("k", [
        "/bin/sh",
        "-c",
        KILL_CHANNEL,
        "gc-kill",
        `gc-tmux-${p.identity("k").pod} `,
      ]);
      expect(kill.stdout).toContain("killed");
      const during = await settle(p.peek("k", 5));
      expect(["ok", "provider-error"]).toContain(during);
      await expect.poll(() => p.peek("k", 5), { timeout: 30_000 }).toContain("ALIVE");
      await p.nudge("k", "after-kill");
      await expect.poll(() => p.peek("k", 10), { timeout: 15_000 }).toContain("after-kill");
      expect(await p.isRunning("k")).toBe(true);
    } finally {
      await p.shutdown();
      await p.close();
    }
  });
});

describe("k8s on a server that offers only v4.channel.k8s.io (Kubernetes ≤ 1.29)", {
  timeout: 120_000,
}, () => {
  let v4: ApiServer;
  let dir: string;

  beforeAll(async () => {
    v4 = await startApiServer({ streamProtocols: ["v4.channel.k8s.io"] });
    dir = await mkdtemp(join(tmpdir(), "gc-k8s-v4-"));
  });

  afterAll(async () => {
    await v4?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("staging files, session_setup_script, gc exec with stdin and a nudge all work", async () => {
    const p = new K8sProvider({
      city: `v4-${process.pid}`,
      cityDir: dir,
      stateDir: dir,
      settings: { image: "gc-test/agent:1", kubeconfig: v4.kubeconfigPath, work_root: dir },
    });
    const work = join(dir, "work");
    const overlay = join(dir, "overlay");
    await mkdir(work, { recursive: true });
    await mkdir(overlay, { recursive: true });
    await writeFile(join(overlay, "staged.txt"), "STAGED-CONTENT\n");
    await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho SETUP-RAN > setup-ran.txt\n", { mode: 0o755 });
    try {
      await p.start("v", {
        command: "echo V4-READY; exec cat",
        workDir: work,
        env: {},
        overlayDir: overlay,
        sessionSetupScript: join(dir, "setup.sh"),
      });
      await expect.poll(() => p.peek("v", 5), { timeout: 30_000 }).toContain("V4-READY");
      expect(await p.readSessionFile("v", "staged.txt")).toBe("STAGED-CONTENT\n");
      expect(await p.readSessionFile("v", "setup-ran.txt")).toBe("SETUP-RAN\n");
      const r = await p.execCommand("v", ["cat"], { stdin: "through-v4-stdin\n" });
      expect(r).toEqual({ exitCode: 0, stdout: "through-v4-stdin\n", stderr: "" });
      await p.nudge("v", "v4-nudge");
      // Submitted: the typed line and cat's echo of it, nothing left on the input line.
      await expect
        .poll(async () => (await p.peek("v", 10)).split("\n").filter((l) => l === "v4-nudge").length, {
          timeout: 15_000,
        })
        .toBe(2);
    } finally {
      await p.shutdown();
      await p.close();
    }
  });
});
