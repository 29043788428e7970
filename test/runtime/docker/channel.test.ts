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
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
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

    it("docker restart mid-operation: the operations settle cleanly, gc restarts nothing, the next operations tell the truth", async () => {
      const p = provider();
      await p.start("r", await config("echo UP; exec cat"));
      await expect.poll(() => p.peek("r", 5), { timeout: 30_000 }).toContain("UP");
      const d = await p.engine.docker();
      const c = d.getContainer(p.containerName("r"));
      const idBefore = (await c.inspect()).Id;
      const [, idle, nudge, peek] = await Promise.all([
        c.restart({ t: 0 }),
        settle(p.waitForIdle("r", 5_000)),
        settle(p.nudge("r", "during-restart")),
        settle(p.peek("r", 5)),
      ]);
      for (const outcome of [idle, nudge, peek]) expect(["ok", "provider-error"]).toContain(outcome);
      // The restart killed the program: the restarted container ends at once (status 124)
      // instead of running on without a session, and that reads as an infrastructure end.
      await expect.poll(() => p.isRunning("r"), { timeout: 30_000 }).toBe(false);
      const info = await c.inspect();
      expect(info.Id).toBe(idBefore);
      expect(info.State.ExitCode).toBe(124);
      expect(await p.sessionEnd("r")).toBe("infrastructure");
      // gc made no container of its own meanwhile, and the next operations answer at once.
      const mine = await d.listContainers({ all: true, filters: { label: [p.ownerLabel] } });
      expect(mine.map((m) => m.Id)).toEqual([idBefore]);
      expect(await p.peek("r", 5)).toBe("");
      expect(await p.waitForIdle("r", 1_000)).toBe("gone");
      await p.nudge("r", "after-restart");
      // The name is free again for a fresh start, which works.
      await p.start("r", await config("echo AGAIN; exec cat"));
      await expect.poll(() => p.peek("r", 5), { timeout: 30_000 }).toContain("AGAIN");
      await p.nudge("r", "after-start");
      await expect.poll(() => p.peek("r", 10), { timeout: 15_000 }).toContain("after-start");
    });

    it("the channel's exec killed mid-nudge: the nudge settles cleanly, its text lands at most once, the next nudge works", async () => {
      const p = provider();
      await p.start("n", await config("echo READY-N; exec cat"));
      await expect.poll(() => p.peek("n", 5), { timeout: 30_000 }).toContain("READY-N");
      const d = await p.engine.docker();
      const idBefore = (await d.getContainer(p.containerName("n")).inspect()).Id;
      const [kill, during] = await Promise.all([
        p.execCommand("n", ["/bin/sh", "-c", KILL_CHANNEL, "gc-kill", ""]),
        settle(p.nudge("n", "mid-kill")),
      ]);
      expect(kill.stdout).toContain("killed");
      expect(["ok", "provider-error"]).toContain(during);
      await p.nudge("n", "after-kill");
      await expect.poll(() => p.peek("n", 20), { timeout: 15_000 }).toContain("after-kill");
      const lines = (await p.peek("n", 50)).split("\n");
      // cat echoes each submitted line once more: at most twice per nudge that landed.
      expect(lines.filter((l) => l === "mid-kill").length).toBeLessThanOrEqual(2);
      expect(await p.isRunning("n")).toBe(true);
      expect((await d.getContainer(p.containerName("n")).inspect()).Id).toBe(idBefore);
    });

    it("idle waits over the channel are driven by %output: O(1) screen reads for a quiet or a silent busy session", async () => {
      const p = provider();
      const d = await p.engine.docker();
      async function counted(name: string, command: string, marker: string): Promise<() => number> {
        await p.start(name, await config(command));
        await expect.poll(() => p.peek(name, 5), { timeout: 30_000 }).toContain(marker);
        const ch = p.channel((await d.getContainer(p.containerName(name)).inspect()).Id);
        let reads = 0;
        const list = ch.client.commandList.bind(ch.client);
        vi.spyOn(ch.client, "commandList").mockImplementation((argvs, o) => {
          if (argvs.some((a) => a[0] === "capture-pane")) reads++;
          return list(argvs, o);
        });
        return () => reads;
      }
      onTestFinished(() => {
        vi.restoreAllMocks();
      });
      const quiet = await counted("q", "echo QUIET; exec sleep 1000", "QUIET");
      expect(await p.waitForIdle("q", 10_000)).toBe("idle");
      expect(quiet()).toBeLessThanOrEqual(3);
      const busy = await counted(
        "b",
        "echo 'working (esc to interrupt)'; exec sleep 1000",
        "esc to interrupt",
      );
      expect(await p.waitForIdle("b", 3_000)).toBe("timeout");
      // Polling every 100 ms would have read ~30 times.
      expect(busy()).toBeLessThanOrEqual(4);
    });
  },
);
