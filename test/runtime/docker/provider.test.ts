import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pty from "@lydell/node-pty";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { EXEC_ALIVE, EXEC_TREE } from "../../../conformance/provider-cases.js";
import { createProvider, type DockerProvider, LABEL_CITY } from "../../../internal/runtime/docker/index.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { attachChildArgs } from "../../support/attach.js";
import { DOCKER_SKIP, startTestEngine, type TestEngine } from "../../support/docker.js";

const LONG = "exec sleep 300";

describe.skipIf(DOCKER_SKIP !== undefined)(
  `DockerProvider against a real dockerd${DOCKER_SKIP ? ` (skipped: ${DOCKER_SKIP})` : ""}`,
  () => {
    let te: TestEngine;
    let root: string;
    let seq = 0;
    beforeAll(async () => {
      te = await startTestEngine();
      root = await mkdtemp(join(tmpdir(), "gc-docker-test-"));
    }, 120_000);
    afterAll(async () => {
      await te?.engine.stop();
      if (root) await rm(root, { recursive: true, force: true });
    }, 60_000);

    /** A provider for a fresh city; every container of that city is removed after the test. */
    function provider(
      settings: Record<string, unknown> = {},
      city = `t${process.pid}-${++seq}`,
      cityId?: string,
    ): DockerProvider {
      const p = createProvider({
        city,
        cityId,
        cityDir: root,
        stateDir: root,
        settings: { host: te.socketPath, image: te.image, ...settings },
      });
      onTestFinished(async () => {
        const d = await p.engine.docker();
        const left = await d.listContainers({ all: true, filters: { label: [p.ownerLabel] } });
        await Promise.all(
          left.map((c) =>
            d
              .getContainer(c.Id)
              .remove({ force: true })
              .catch(() => undefined),
          ),
        );
      });
      return p;
    }

    async function config(command: string, extra: Partial<StartConfig> = {}): Promise<StartConfig> {
      const workDir = join(root, `w${++seq}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {}, ...extra };
    }

    async function ours(p: DockerProvider, all = true) {
      const d = await p.engine.docker();
      return d
        .listContainers({ all, filters: { label: [`${LABEL_CITY}`] } })
        .then((l) => l.filter((c) => c.Labels[LABEL_CITY] === p.ownerLabel.split("=")[1]));
    }

    it("settings: memory, cpus, pids_limit, user, network none and mounts take effect in the container", async () => {
      const shared = await mkdtemp(join(root, "mnt-"));
      const ro = await mkdtemp(join(root, "ro-"));
      await writeFile(join(ro, "in.txt"), "read me");
      await chmod(ro, 0o755);
      await chmod(shared, 0o777);
      const p = provider({
        memory: "64m",
        cpus: 0.5,
        pids_limit: 40,
        user: "1000:1000",
        network: "none",
        mounts: [
          { source: shared, target: "/shared", read_only: false },
          { source: ro, target: "/ro", read_only: true },
        ],
      });
      const cfg = await config(LONG);
      await chmod(cfg.workDir, 0o777);
      await p.start("lim", cfg);
      const d = await p.engine.docker();
      const info = await d.getContainer(p.containerName("lim")).inspect();
      expect(info.HostConfig.Memory).toBe(64 * 1024 * 1024);
      expect(info.HostConfig.NanoCpus).toBe(500_000_000);
      expect(info.HostConfig.PidsLimit).toBe(40);
      expect(info.HostConfig.NetworkMode).toBe("none");
      expect(info.Config.User).toBe("1000:1000");
      const sh = (script: string) => p.execCommand("lim", ["/bin/sh", "-c", script]);
      expect((await sh("id -u; id -g")).stdout).toBe("1000\n1000\n");
      // The kernel enforces the limits: the container's own cgroup files say so.
      expect((await sh("cat /sys/fs/cgroup/memory/memory.limit_in_bytes")).stdout.trim()).toBe(
        String(64 * 1024 * 1024),
      );
      expect((await sh("cat /sys/fs/cgroup/pids/pids.max")).stdout.trim()).toBe("40");
      expect((await sh("cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us")).stdout.trim()).toBe("50000");
      expect((await sh("ls /sys/class/net")).stdout.trim()).toBe("lo");
      expect((await sh("cat /ro/in.txt")).stdout).toBe("read me");
      expect((await sh("echo x > /ro/no.txt")).exitCode).not.toBe(0);
      expect((await sh("echo shared > /shared/out.txt")).exitCode).toBe(0);
      expect(await readFile(join(shared, "out.txt"), "utf8")).toBe("shared\n");
    });

    it("env: secret values reach the program but never the container's inspect output or labels", async () => {
      const p = provider();
      const secret = `s3cr3t-${Math.random().toString(36).slice(2)}`;
      const cfg = await config(`printf '%s|%s' "$API_TOKEN" "$PLAIN" > env.out; ${LONG}`, {
        env: { API_TOKEN: secret, PLAIN: "visible" },
      });
      await p.start("sec", cfg);
      await expect
        .poll(() => readFile(join(cfg.workDir, "env.out"), "utf8").catch(() => ""))
        .toBe(`${secret}|visible`);
      const d = await p.engine.docker();
      const inspect = JSON.stringify(await d.getContainer(p.containerName("sec")).inspect());
      expect(inspect).not.toContain(secret);
      expect(inspect).not.toContain("visible"); // no declared env in Config.Env at all
      expect(inspect).toContain(`GC_SESSION=sec`);
      // gc exec sees the same environment as the program.
      const r = await p.execCommand("sec", ["/bin/sh", "-c", 'printf %s "$API_TOKEN"']);
      expect(r.stdout).toBe(secret);
    });

    it("work_dir copy: the work dir is uploaded; the program's writes stay in the container", async () => {
      const p = provider({ work_dir: "copy" });
      const cfg = await config(`cat seed.txt > out.txt; ${LONG}`);
      await writeFile(join(cfg.workDir, "seed.txt"), "seeded ✓");
      await p.start("cp", cfg);
      await expect.poll(async () => (await p.execCommand("cp", ["cat", "out.txt"])).stdout).toBe("seeded ✓");
      expect(existsSync(join(cfg.workDir, "out.txt"))).toBe(false);
      const d = await p.engine.docker();
      const info = await d.getContainer(p.containerName("cp")).inspect();
      expect(info.Mounts.filter((m) => m.Type === "bind")).toEqual([]);
    });

    /** The pids an EXEC_TREE command wrote to `file` in the work dir of `name` (a second exec). */
    async function treePids(p: DockerProvider, name: string, file: string): Promise<string[]> {
      const r = await p.execCommand(name, ["cat", file]);
      return r.exitCode === 0 ? r.stdout.trim().split(" ") : [];
    }
    /** True while one of `pids` is a live process in the container of `name` (a second exec). */
    async function anyAlive(p: DockerProvider, name: string, pids: readonly string[]): Promise<boolean> {
      return (await p.execCommand(name, ["sh", "-c", EXEC_ALIVE, "gc-alive", ...pids])).exitCode === 0;
    }
    /** The container's run dir, listed by a plain exec (an execCommand would list its own group file). */
    async function runDir(p: DockerProvider, name: string): Promise<string> {
      const r = await p.engine.exec(p.containerName(name), {
        argv: ["ls", "-a", "/run/gc"],
        timeoutMs: 30_000,
      });
      return r.stdout;
    }

    it("execCommand past timeoutMs: GC_TIMEOUT, and the command and its child are killed in the container", async () => {
      const p = provider();
      await p.start("ekt", await config(LONG));
      const cut = p.execCommand("ekt", ["sh", "-c", EXEC_TREE, "gc-tree", "t.pids"], { timeoutMs: 3_000 });
      await expect(cut).rejects.toMatchObject({ code: "GC_TIMEOUT" });
      const pids = await treePids(p, "ekt", "t.pids");
      expect(pids).toHaveLength(2);
      await expect.poll(() => anyAlive(p, "ekt", pids)).toBe(false);
      await expect.poll(() => runDir(p, "ekt")).not.toContain("gc-exec-");
    });

    it("execCommand aborted: rejects with the reason, and the command and its child (ignoring SIGTERM) are killed", async () => {
      const p = provider();
      await p.start("eka", await config(LONG));
      const ac = new AbortController();
      onTestFinished(() => ac.abort());
      const reason = new Error("test-abort");
      const cut = p.execCommand("eka", ["sh", "-c", EXEC_TREE, "gc-tree", "a.pids", "stubborn"], {
        signal: ac.signal,
        timeoutMs: 600_000,
      });
      cut.catch(() => undefined);
      await expect.poll(() => treePids(p, "eka", "a.pids")).toHaveLength(2);
      const pids = await treePids(p, "eka", "a.pids");
      expect(await anyAlive(p, "eka", pids)).toBe(true);
      ac.abort(reason);
      await expect(cut).rejects.toBe(reason);
      await expect.poll(() => anyAlive(p, "eka", pids)).toBe(false);
      await expect.poll(() => runDir(p, "eka")).not.toContain("gc-exec-");
    });

    it("start: an image that does not exist is a clear error and leaves no container", async () => {
      const p = provider({ image: "gc-no-such-image:never" });
      const cfg = await config(LONG);
      await expect(p.start("noimg", cfg)).rejects.toThrow(/image "gc-no-such-image:never" not found/);
      expect(await ours(p)).toEqual([]);
      expect(await p.isRunning("noimg")).toBe(false);
    });

    it("sessionEnd: the program's own end (exit 0 or 3, a signal, the OOM killer) is `program`; docker stop, kill and rm -f are `infrastructure`", async () => {
      const p = provider({ memory: "64m" });
      // Each program ends when told (a file in its bind-mounted work dir), never on a timer.
      const WAIT = "while [ ! -e end ]; do sleep 0.1; done; ";
      const programs: Record<string, string> = {
        exit0: `${WAIT}exit 0`,
        exit3: `${WAIT}exit 3`,
        killed: `${WAIT}kill -9 $$`,
        oom: `${WAIT}dd if=/dev/zero of=/dev/null bs=200M count=1; exit 0`,
      };
      const dirs: Record<string, string> = {};
      await Promise.all(
        Object.entries(programs).map(async ([n, cmd]) => {
          const cfg = await config(cmd);
          dirs[n] = cfg.workDir;
          await p.start(n, cfg);
        }),
      );
      await Promise.all(["stopped", "dkilled", "removed"].map(async (n) => p.start(n, await config(LONG))));
      expect(await p.sessionEnd("exit0")).toBeUndefined(); // running
      await Promise.all(Object.values(dirs).map((dir) => writeFile(join(dir, "end"), "")));
      const d = await p.engine.docker();
      await d.getContainer(p.containerName("stopped")).stop({ t: 5 });
      await d.getContainer(p.containerName("dkilled")).kill();
      await d.getContainer(p.containerName("removed")).remove({ force: true });
      await expect.poll(() => p.listRunning(""), { timeout: 30_000 }).toEqual([]);
      const ends = Object.fromEntries(
        await Promise.all(
          [...Object.keys(programs), "stopped", "dkilled", "removed"].map(async (n) => [
            n,
            await p.sessionEnd(n),
          ]),
        ),
      );
      expect(ends).toEqual({
        exit0: "program",
        exit3: "program",
        killed: "program",
        oom: "program",
        stopped: "infrastructure",
        dkilled: "infrastructure",
        removed: "infrastructure",
      });
      expect((await d.getContainer(p.containerName("oom")).inspect()).State.OOMKilled).toBe(true);
    });

    it("start: a program that exits at once is reported dead (SessionDiedDuringStartupError), and leaves no container", async () => {
      const p = provider();
      for (const [n, cmd] of [
        ["quick0", "true"],
        ["quick3", "sh -c 'exit 3'"],
      ] as const) {
        await expect(p.start(n, await config(cmd))).rejects.toMatchObject({
          name: "SessionDiedDuringStartupError",
          message: expect.stringContaining("the program exited"),
        });
        expect(await p.isRunning(n)).toBe(false);
      }
      expect(await ours(p)).toEqual([]);
    });

    it("ownership: another city's container with the same session name is never listed, read or stopped — even when both cities have the same name", async () => {
      // Two cities named alike in two directories: their ownership keys (<name>-<id>) differ.
      const city = `same-${process.pid}-${++seq}`;
      const a = provider({}, city, "aaaaaaaaaa");
      const b = provider({}, city, "bbbbbbbbbb");
      expect(a.ownerLabel).toBe(`${LABEL_CITY}=${city}-aaaaaaaaaa`);
      expect(a.containerName("same")).not.toBe(b.containerName("same"));
      const cfgB = await config(`printf %s "$GC_CITY" > city.out; ${LONG}`);
      await Promise.all([a.start("same", await config(LONG)), b.start("same", cfgB)]);
      // GC_CITY stays the human name; only labels and names carry the id.
      await expect.poll(() => readFile(join(cfgB.workDir, "city.out"), "utf8").catch(() => "")).toBe(city);
      await b.setMeta("same", "who", "b");
      expect(await a.listRunning("")).toEqual(["same"]);
      await expect(a.getMeta("same", "who")).resolves.toBeUndefined();
      await a.stop("same");
      expect(await a.isRunning("same")).toBe(false);
      expect(await b.isRunning("same")).toBe(true);
      expect(await b.getMeta("same", "who")).toBe("b");
    });

    it("shutdown: removes this city's containers, exited ones too, and no other city's", async () => {
      const a = provider({}, `shA-${process.pid}`);
      const b = provider({}, `shB-${process.pid}`);
      // "done" exits when told (a file in its bind-mounted work dir), never on a timer: a
      // start slower than a fixed lifetime (a loaded machine) would make it die "during startup".
      const doneCfg = await config("until [ -e exit.now ]; do sleep 0.1; done");
      await Promise.all([
        a.start("done", doneCfg),
        a.start("live", await config(LONG)),
        b.start("live", await config(LONG)),
      ]);
      await writeFile(join(doneCfg.workDir, "exit.now"), "");
      await expect.poll(() => a.isRunning("done"), { timeout: 30_000 }).toBe(false);
      expect(await ours(a)).toHaveLength(2); // the exited container is still there
      await a.shutdown();
      expect(await ours(a)).toEqual([]);
      expect(await b.isRunning("live")).toBe(true);
    });

    it("engine restart: sessions that died with the engine are reported gone, metadata of the dead is readable, the name restarts", async () => {
      const p = provider();
      await Promise.all([p.start("r1", await config(LONG)), p.start("r2", await config(LONG))]);
      await p.setMeta("r1", "k", "before");
      expect(await p.listRunning("")).toEqual(["r1", "r2"]);
      expect(await p.sessionEnd("r1")).toBeUndefined(); // running
      await te.engine.restart();
      expect(await p.listRunning("")).toEqual([]);
      // Killed with the engine, not by their programs: an infrastructure loss, not a crash.
      expect(await p.sessionEnd("r1")).toBe("infrastructure");
      expect(await p.sessionEnd("r2")).toBe("infrastructure");
      expect(await p.isRunning("r1")).toBe(false);
      expect(await p.processAlive("r1", [])).toBe(false);
      expect(await p.getMeta("r1", "k")).toBe("before"); // the dead container is still there
      await p.start("r1", await config(LONG));
      expect(await p.listRunning("")).toEqual(["r1"]);
      expect(await p.getMeta("r1", "k")).toBeUndefined();
    });

    it("attach: a real terminal sees the session, C-b d detaches, the session keeps running", async () => {
      const city = `att-${process.pid}`;
      const p = provider({}, city);
      await p.start("att", await config("echo HELLO-FROM-CONTAINER; exec cat"));
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "TMUX") env[k] = v;
      const term = pty.spawn(
        process.execPath,
        attachChildArgs({
          provider: "docker",
          city,
          cityDir: root,
          session: "att",
          settings: { host: te.socketPath, image: te.image },
        }),
        {
          name: "xterm-256color",
          cols: 100,
          rows: 30,
          cwd: root,
          env: { ...env, TERM: "xterm-256color" },
        },
      );
      let screen = "";
      term.onData((d) => {
        screen += d;
      });
      const exited = new Promise<{ exitCode: number }>((resolve) => term.onExit(resolve));
      try {
        await expect.poll(() => screen.includes("HELLO-FROM-CONTAINER"), { timeout: 30_000 }).toBe(true);
        await expect.poll(() => p.isAttached("att"), { timeout: 15_000 }).toBe(true);
        term.write("typed-through-attach\r");
        await expect
          .poll(async () => (await p.peek("att", 20)).includes("typed-through-attach"), { timeout: 15_000 })
          .toBe(true);
        term.write("\x02d"); // the tmux prefix (C-b), then d: detach
        const { exitCode } = await exited;
        expect(screen).toContain("GC-ATTACH-RETURNED");
        expect(exitCode).toBe(0);
        expect(await p.isRunning("att")).toBe(true);
        await expect.poll(() => p.isAttached("att")).toBe(false);
      } finally {
        term.kill();
      }
    });
  },
);
