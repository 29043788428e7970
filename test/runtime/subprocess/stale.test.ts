import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pidAlive } from "../../../internal/proc/kill.js";
import { providerRoot, sessionPaths } from "../../../internal/runtime/subprocess/layout.js";
import type { HolderRecord } from "../../../internal/runtime/subprocess/protocol.js";
import { holdersUnder, makeCity, type TestCity, until } from "./helpers.js";

describe("subprocess stale sessions", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    await city?.cleanup();
  });
  const paths = (name: string) => sessionPaths(providerRoot(city.stateDir), name);
  const record = async (name: string) =>
    JSON.parse(await readFile(paths(name).record, "utf8")) as HolderRecord;

  it("listRunning: a killed holder's socket is cleaned, its orphan killed, and never listed", async () => {
    const name = "stale-killed";
    // The program ignores SIGHUP, so it outlives its holder's pty.
    await city.provider.start(name, await city.config("trap '' HUP; exec sleep 300"));
    const rec = await record(name);
    process.kill(rec.holderPid, "SIGKILL");
    await until("the holder to die", async () => !(await pidAlive(rec.holderPid)));
    expect(await pidAlive(rec.childPid)).toBe(true);
    await stat(paths(name).socket); // the socket file is left behind

    expect(await city.provider.isRunning(name)).toBe(false);
    expect(await city.provider.listRunning("stale-")).toEqual([]);
    await expect(stat(paths(name).socket)).rejects.toThrow();
    await expect(stat(paths(name).dir)).rejects.toThrow();
    await until("the orphaned program to die", async () => !(await pidAlive(rec.childPid)));

    await city.provider.start(name, await city.config("exec sleep 300"));
    expect(await city.provider.listRunning("stale-")).toEqual([name]);
    await city.provider.stop(name);
  });

  it("stop: cleans up after a holder that was killed", async () => {
    const name = "stale-stop";
    await city.provider.start(name, await city.config("trap '' HUP; exec sleep 300"));
    const rec = await record(name);
    process.kill(rec.holderPid, "SIGKILL");
    await until("the holder to die", async () => !(await pidAlive(rec.holderPid)));
    await city.provider.stop(name);
    await until("the orphaned program to die", async () => !(await pidAlive(rec.childPid)));
    await expect(stat(paths(name).dir)).rejects.toThrow();
  });

  it("listRunning: a half-created dir without a lock is removed; another city's leftovers are not", async () => {
    const junk = paths("stale-junk");
    await mkdir(junk.dir, { recursive: true });
    await writeFile(join(junk.dir, "leftover"), "{}");
    const foreign = paths("stale-foreign");
    await mkdir(foreign.dir, { recursive: true });
    const foreignRecord: HolderRecord = {
      protocol: 1,
      city: "another-city",
      name: "stale-foreign",
      holderPid: 999_999,
      childPid: 999_998,
      childStart: null,
      socket: foreign.socket,
      workDir: "/nonexistent",
      startedAt: Date.now(),
      exit: null,
    };
    await writeFile(foreign.record, JSON.stringify(foreignRecord));
    expect(await city.provider.listRunning("stale-")).toEqual([]);
    await expect(stat(junk.dir)).rejects.toThrow();
    expect((await stat(foreign.record)).isFile()).toBe(true);
    await city.provider.stop("stale-foreign");
    expect((await stat(foreign.record)).isFile()).toBe(true);
  });

  it("listRunning: a dir whose start lock is held by a live process is left alone", async () => {
    const p = paths("stale-starting");
    await mkdir(p.dir, { recursive: true });
    await mkdir(p.lock.slice(0, p.lock.lastIndexOf("/")), { recursive: true });
    await writeFile(p.lock, `${process.pid}\n`);
    expect(await city.provider.listRunning("stale-")).toEqual([]);
    expect((await stat(p.dir)).isDirectory()).toBe(true);
    // A stale lock does not block a start: here a live pid with another start time (pid reuse).
    await writeFile(p.lock, `${process.pid} 1\n`);
    await city.provider.start("stale-starting", await city.config("exec sleep 300"));
    expect(await city.provider.listRunning("stale-")).toEqual(["stale-starting"]);
    await expect(stat(p.lock)).rejects.toThrow();
    await city.provider.stop("stale-starting");
  });

  it("start: aborting at any point of the holder's boot leaves no holder, program or files", async () => {
    let aborted = 0;
    for (const delayMs of [0, 15, 30, 60, 120]) {
      const name = `stale-abort-${delayMs}`;
      const ac = new AbortController();
      const p = city.provider.start(name, await city.config("echo booted > booted.out; exec sleep 300"), {
        signal: ac.signal,
      });
      await sleep(delayMs);
      ac.abort(new Error("abort while booting"));
      const outcome = await p.then(
        () => "started",
        (e: unknown) => e,
      );
      if (outcome === "started") {
        // The whole start (holder boot included) was over before this point: nothing to abort.
        await city.provider.stop(name);
        continue;
      }
      aborted++;
      expect(String(outcome)).toContain("abort while booting");
      await expect(stat(paths(name).dir)).rejects.toThrow();
    }
    expect(aborted).toBeGreaterThan(0); // at least the abort at once, before anything ran
    expect(await holdersUnder(city.stateDir)).toEqual([]);
    expect(await city.provider.listRunning("stale-abort")).toEqual([]);
  });

  it("start: failing before its create (a missing copy source) leaves no holder, though one was started ahead", async () => {
    expect(await holdersUnder(city.stateDir)).toEqual([]);
    const cfg = await city.config("exec sleep 300", {
      copyFiles: [{ src: join(city.root, "no-such-file"), relDst: "" }],
    });
    await expect(city.provider.start("stale-nosrc", cfg)).rejects.toThrow("no-such-file");
    expect(await holdersUnder(city.stateDir)).toEqual([]);
    await expect(stat(paths("stale-nosrc").dir)).rejects.toThrow();
  });
});
