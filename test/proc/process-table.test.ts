/** The /proc snapshot: real processes of this host, one scan shared by concurrent callers. */
import { spawn } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  parseStat,
  processTree,
  procStartTime,
  readArgv,
  readProcessTable,
  readStat,
} from "../../internal/proc/process-table.js";

describe("readProcessTable", () => {
  it("sees this process and a child of it; callers asking together share one scan", async () => {
    const child = spawn("sleep", ["1000"], { stdio: "ignore" });
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    await new Promise((r) => child.once("spawn", r));
    const first = readProcessTable();
    expect(readProcessTable()).toBe(first);
    const table = await first;
    const me = table.find((p) => p.pid === process.pid);
    expect(me?.state).toMatch(/^[RSD]$/);
    expect(me?.argv0).toMatch(/node/);
    const kid = processTree(table, process.pid).find((p) => p.pid === child.pid);
    expect(kid).toMatchObject({ ppid: process.pid, argv0: "sleep" });
    // A later caller gets a fresh scan.
    expect(readProcessTable()).not.toBe(first);
  });
});

describe("readArgv", () => {
  it("reads a process's whole command line; undefined once it is gone", async () => {
    // Its own group: `sh` forks the sleep (`; :` keeps it from exec'ing), and killing only
    // the shell would leave the sleep running, re-parented to init (seen after a CI run).
    const child = spawn("sh", ["-c", "sleep 1000; :", "a b"], { stdio: "ignore", detached: true });
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    };
    onTestFinished(killGroup);
    await new Promise((r) => child.once("spawn", r));
    expect((await readArgv(child.pid!))?.slice(0, 4)).toEqual(["sh", "-c", "sleep 1000; :", "a b"]);
    const gone = new Promise((r) => child.once("exit", r));
    killGroup();
    await gone;
    expect(await readArgv(child.pid!)).toBeUndefined();
  });
});

describe("parseStat / readStat", () => {
  it("reads the fields after the last ')' (a command name may hold spaces and parentheses)", () => {
    // pid (comm) state ppid pgrp session tty_nr tpgid flags … field 22 = starttime
    const after = [
      "S",
      "1",
      "4242",
      "4242",
      "34816",
      "4300",
      ...Array.from({ length: 44 }, (_, i) => String(i)),
    ];
    after[19] = "987654";
    const st = parseStat(`4242 (a) b (c)) ${after.join(" ")}`);
    expect(st).toMatchObject({
      pid: 4242,
      comm: "a) b (c)",
      state: "S",
      ppid: 1,
      pgid: 4242,
      sid: 4242,
      tpgid: 4300,
    });
    expect(st?.startTime).toBe("987654");
    expect(parseStat("garbage")).toBeUndefined();
  });

  it("a live process has a start time; a gone pid has none", async () => {
    const child = spawn("sleep", ["1000"], { stdio: "ignore" });
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    await new Promise((r) => child.once("spawn", r));
    expect(readStat(child.pid!)?.ppid).toBe(process.pid);
    expect(procStartTime(child.pid!)).toBe(Number(readStat(child.pid!)?.startTime));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(readStat(child.pid!)).toBeUndefined();
    expect(procStartTime(child.pid!)).toBeNull();
  });
});
