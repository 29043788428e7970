/** The /proc snapshot: real processes of this host, one scan shared by concurrent callers. */
import { spawn } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  type ProcEntry,
  parseStat,
  processTree,
  procStartTime,
  readArgv,
  readProcessTable,
  readStat,
  withGroups,
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

describe("withGroups", () => {
  // A tmux-like server (pid 10, its own group) with one pane (20, its own group after setsid)
  // that runs a pipeline group (30 leads, 31 in it) and a child that left the tree inside the
  // pane's group (40, reparented to init); a pane just forked (50) is still in the server's group.
  const p = (pid: number, ppid: number, pgid: number): ProcEntry => ({
    pid,
    ppid,
    pgid,
    sid: pgid,
    comm: "x",
    state: "S",
    startTime: "1",
    tpgid: 0,
    argv0: "x",
  });
  const table = [
    p(1, 0, 1),
    p(10, 1, 10),
    p(20, 10, 20),
    p(30, 20, 30),
    p(31, 30, 30),
    p(40, 1, 20),
    p(50, 10, 10),
    p(60, 1, 66),
  ];
  const pids = (members: ProcEntry[]) => members.map((m) => m.pid).sort((a, b) => a - b);
  it.each([
    {
      what: "a pane: its tree and the groups it leads, with a double-forked child",
      root: 20,
      skip: [],
      want: [20, 30, 31, 40],
    },
    {
      what: "a pane before its setsid: never its parent's (the server's) group",
      root: 50,
      skip: [],
      want: [50],
    },
    { what: "a group whose leader is gone goes with a member", root: 60, skip: [], want: [60] },
    { what: "groups of skipped pids are never added", root: 20, skip: [30], want: [20, 30, 31, 40] },
    { what: "a skipped leader keeps its group out", root: 30, skip: [30], want: [30, 31] },
  ])("$what", ({ root, skip, want }) => {
    expect(pids(withGroups(table, processTree(table, root), new Set(skip)))).toEqual(want);
  });
});
