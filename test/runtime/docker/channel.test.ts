/**
 * The docker provider's tmux control channel against a real dockerd: one hijacked exec per
 * container carries every steady-state screen, key and nudge operation (no new exec per
 * operation), and a channel lost mid-operation — its tmux client killed in the container,
 * the container restarted — fails that operation cleanly or retries it, never hangs, and
 * the next operation works.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { createProvider, type DockerProvider } from "../../../internal/runtime/docker/index.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { KILL_CHANNEL, settle } from "../../support/channel.js";
import { DOCKER_SKIP, startTestEngine, type TestEngine } from "../../support/docker.js";

describe.skipIf(DOCKER_SKIP !== undefined)(
  `docker tmux control channel${DOCKER_SKIP ? ` (skipped: ${DOCKER_SKIP})` : ""}`,
  { timeout: 120_000 },
  () => {
    let te: TestEngine;
    let root: string;
    let seq = 0;
    beforeAll(async () => {
      te = await startTestEngine();
      root = await mkdtemp(join(tmpdir(), "gc-docker-chan-"));
    }, 120_000);
    afterAll(async () => {
      await te?.engine.stop();
      if (root) await rm(root, { recursive: true, force: true });
    }, 60_000);

    function provider(): DockerProvider {
      const p = createProvider({
        city: `ch${process.pid}-${++seq}`,
        cityDir: root,
        stateDir: root,
        settings: { host: te.socketPath, image: te.image },
      });
      onTestFinished(async () => {
        await p.shutdown().catch(() => undefined);
        await p.close();
      });
      return p;
    }

    async function config(command: string): Promise<StartConfig> {
      const workDir = join(root, `w${++seq}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {} };
    }

    async function execIds(p: DockerProvider, name: string): Promise<number> {
      const d = await p.engine.docker();
      const info = await d.getContainer(p.containerName(name)).inspect();
      return (info.ExecIDs ?? []).length;
    }

    it("steady state: peeks, keys and a nudge open no exec", async () => {
      const p = provider();
      await p.start("s", await config("echo READY; exec cat"));
      await expect.poll(() => p.peek("s", 5), { timeout: 30_000 }).toContain("READY");
      const before = await execIds(p, "s");
      for (let i = 0; i < 5; i++) await p.peek("s", 5);
      await p.nudge("s", "hello-channel");
      await p.sendKeys("s", ["x", "Enter"]);
      await expect
        .poll(async () => (await p.peek("s", 10)).split("\n").filter((l) => l === "hello-channel").length, {
          timeout: 15_000,
        })
        .toBe(2);
      expect(await execIds(p, "s")).toBe(before);
    });

    it("the channel's exec killed mid-operation: the operation settles, the session keeps running, the next operation works", async () => {
      const p = provider();
      await p.start("k", await config("echo ALIVE; exec cat"));
      await expect.poll(() => p.peek("k", 5), { timeout: 30_000 }).toContain("ALIVE");
      const d = await p.engine.docker();
      const idBefore = (await d.getContainer(p.containerName("k")).inspect()).Id;
      const [kill, during] = await Promise.all([
        p.execCommand("k", ["/bin/sh", "-c", KILL_CHANNEL, "gc-kill", ""]),
        settle(p.waitForIdle("k", 2_000)),
      ]);
      expect(kill.stdout).toContain("killed");
      expect(["ok", "provider-error"]).toContain(during);
      await expect.poll(() => p.peek("k", 5), { timeout: 30_000 }).toContain("ALIVE");
      await p.nudge("k", "after-kill");
      await expect.poll(() => p.peek("k", 10), { timeout: 15_000 }).toContain("after-kill");
      expect(await p.isRunning("k")).toBe(true);
      expect((await d.getContainer(p.containerName("k")).inspect()).Id).toBe(idBefore);
    });

    it("docker restart mid-operation: the operation settles cleanly and the next one answers", async () => {
      const p = provider();
      await p.start("r", await config("echo UP; exec cat"));
      await expect.poll(() => p.peek("r", 5), { timeout: 30_000 }).toContain("UP");
      const d = await p.engine.docker();
      const c = d.getContainer(p.containerName("r"));
      const [, during] = await Promise.all([c.restart({ t: 0 }), settle(p.waitForIdle("r", 5_000))]);
      expect(["ok", "provider-error"]).toContain(during);
      // The restart ended the session (the container's processes were killed): the next
      // operations say so instead of hanging on the lost stream.
      expect(await settle(p.peek("r", 5))).toBe("ok");
      expect(await p.waitForIdle("r", 1_000)).toBe("gone");
    });
  },
);
