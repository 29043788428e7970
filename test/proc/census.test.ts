/** Following processes seen by a census: the same process across exec, never a reused pid. */
import { spawn } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  ancestry,
  awaitEmptyCensus,
  type CensusEntry,
  orphanCandidates,
  selectOrphans,
  stillAlive,
} from "../../internal/proc/census.js";
import { signalName } from "../../internal/proc/kill.js";
import {
  type ProcEntry,
  parseEnviron,
  procStartTime,
  readEnviron,
  readProcessTable,
  readStartTime,
} from "../../internal/proc/process-table.js";

function proc(pid: number, ppid: number, state = "S"): ProcEntry {
  return {
    pid,
    ppid,
    pgid: pid,
    sid: pid,
    comm: `p${pid}`,
    state,
    startTime: String(pid),
    tpgid: 0,
    argv0: `p${pid}`,
  };
}
const env = (vars: Record<string, string>) => new Map(Object.entries(vars));

describe("parseEnviron", () => {
  it("splits NUL-separated KEY=value pairs; values may hold '='; the first of a duplicate wins", () => {
    const e = parseEnviron("GC_OWNER=c-1\0GC_SESSION=a=b\0EMPTY=\0junk\0GC_OWNER=c-2\0");
    expect([...e]).toEqual([
      ["GC_OWNER", "c-1"],
      ["GC_SESSION", "a=b"],
      ["EMPTY", ""],
    ]);
  });

  it("readEnviron of a process that is gone is undefined, not an error", async () => {
    const child = spawn("true");
    await new Promise((r) => child.once("exit", r));
    expect(await readEnviron(child.pid!)).toBeUndefined();
  });
});

describe("selectOrphans", () => {
  // 1 init; 10 tmux server (tree) → 11 live pane (tagged a); 20 controller → 21 hook (tagged a);
  // 30 old pane's agent, re-parented to init (tagged a) → 31 its child (untagged);
  // 40 orphan of session b; 50 orphan of another city; 60 a controller started inside a
  // session (tagged); 70 tagged, parent gone (exited mid-snapshot); 80 tagged zombie.
  const table = [
    proc(1, 0),
    proc(10, 1),
    proc(11, 10),
    proc(20, 1),
    proc(21, 20),
    proc(30, 1),
    proc(31, 30),
    proc(40, 1),
    proc(50, 1),
    proc(60, 1),
    proc(70, 999),
    proc(80, 1, "Z"),
  ];
  const tagA = { GC_OWNER: "c-1", GC_SESSION: "a" };
  const envs = new Map([
    [10, env({})],
    [11, env(tagA)],
    [20, env({ GC_CONTROLLER_CHILD: "1" })],
    [21, env(tagA)],
    [30, env(tagA)],
    [31, env({})],
    [40, env({ GC_OWNER: "c-1", GC_SESSION: "b" })],
    [50, env({ GC_OWNER: "c-2", GC_SESSION: "a" })],
    [60, env({ ...tagA, GC_CONTROLLER_CHILD: "1" })],
    [70, env(tagA)],
    [80, env(tagA)],
  ]);
  const exclude = new Set([10, 11]); // the backend tree

  it("selects tagged roots re-parented to init (or whose parent is gone) with their whole subtree", () => {
    expect(selectOrphans(table, envs, { owner: "c-1" }, exclude).map((p) => p.pid)).toEqual([30, 31, 40, 70]);
  });

  it("some sessions' orphans only, each with its root's session; never another city's, a controller, a process with a live parent, a zombie", () => {
    const a = new Set(["a"]);
    expect(selectOrphans(table, envs, { owner: "c-1", sessions: a }, exclude).map((p) => p.pid)).toEqual([
      30, 31, 70,
    ]);
    expect(selectOrphans(table, envs, { owner: "c-2", sessions: a }, exclude).map((p) => p.pid)).toEqual([
      50,
    ]);
    // Two sessions from one snapshot: an untagged child belongs to its root's session.
    expect(
      selectOrphans(table, envs, { owner: "c-1", sessions: new Set(["a", "b"]) }, exclude).map((p) => [
        p.pid,
        p.session,
      ]),
    ).toEqual([
      [30, "a"],
      [31, "a"],
      [40, "b"],
      [70, "a"],
    ]);
    expect(selectOrphans(table, envs, { owner: "c-1", sessions: new Set() }, exclude)).toEqual([]);
  });

  it("never selects an excluded process (a backend tree, gc itself and its ancestors) or below it", () => {
    const withSelf = new Set([...exclude, 30, 31]);
    expect(
      selectOrphans(table, envs, { owner: "c-1", sessions: new Set(["a"]) }, withSelf).map((p) => p.pid),
    ).toEqual([70]);
    // An unreadable environment (gone mid-read, another user's) selects nothing.
    expect(selectOrphans(table, new Map(), { owner: "c-1" }, exclude)).toEqual([]);
  });

  it("only processes whose parent is init or gone need their environment read", () => {
    expect(orphanCandidates(table, exclude).map((p) => p.pid)).toEqual([20, 30, 40, 50, 60, 70]);
  });

  it("ancestry: a pid and every ancestor in the table", () => {
    expect([...ancestry(table, 31)].sort((a, b) => a - b)).toEqual([1, 30, 31]);
  });
});

describe("awaitEmptyCensus with orphans", () => {
  it("kills entries the census flags orphan (never waits them out) and reports them once", async () => {
    const child = spawn("sleep", ["100000"], { stdio: "ignore" });
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    await new Promise((r) => child.once("spawn", r));
    const entry = (await readProcessTable()).find((p) => p.pid === child.pid)!;
    const seen: CensusEntry = { pid: entry.pid, comm: entry.comm, startTime: entry.startTime, orphan: true };
    const killed: CensusEntry[][] = [];
    const left = await awaitEmptyCensus(
      async () => stillAlive([seen]).then((l) => l.map((e) => ({ ...e, orphan: true as const }))),
      {
        before: [],
        killOrphansAfterMs: 0,
        timeoutMs: 60_000,
        onKill: (k) => killed.push([...k]),
      },
    );
    expect(left).toEqual([]);
    expect(killed.map((k) => k.map((e) => e.pid))).toEqual([[child.pid]]);
  });
});

describe("stillAlive", () => {
  it("follows a process that exec'd after it was seen; a different start time is another process", async () => {
    // `sh` waits for a line, then execs `sleep`: the comm changes, the process does not.
    const child = spawn("sh", ["-c", "read line; exec sleep 100000"], {
      stdio: ["pipe", "ignore", "ignore"],
    });
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    await new Promise((r) => child.once("spawn", r));
    const pid = child.pid!;
    const entry = (await readProcessTable()).find((p) => p.pid === pid)!;
    const seen: CensusEntry = { pid, comm: entry.comm, startTime: entry.startTime };
    expect(seen.comm).toBe("sh");
    child.stdin!.end("go\n");
    await expect.poll(async () => (await readProcessTable()).find((p) => p.pid === pid)?.comm).toBe("sleep");

    expect(await stillAlive([seen])).toEqual([{ pid, comm: "sleep", startTime: entry.startTime }]);
    // Same pid, other start time: a reused pid, not the process seen.
    expect(await stillAlive([{ ...seen, startTime: String(Number(entry.startTime) + 1) }])).toEqual([]);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(await stillAlive([seen])).toEqual([]);
  });
});

describe("procStartTime", () => {
  it("a zombie (ended, not yet reaped) has no start time: it owns nothing any more", async () => {
    // `true` ends at once; its parent becomes `sleep`, which never reaps it.
    const child = spawn("sh", ["-c", "true & exec sleep 100000"], { stdio: "ignore" });
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    await new Promise((r) => child.once("spawn", r));
    await expect
      .poll(async () => (await readProcessTable()).some((p) => p.ppid === child.pid && p.state === "Z"))
      .toBe(true);
    const z = (await readProcessTable()).find((p) => p.ppid === child.pid && p.state === "Z")!;
    expect(procStartTime(z.pid)).toBeNull();
    expect(await readStartTime(z.pid)).toBeNull();
    const start = Number((await readProcessTable()).find((p) => p.pid === child.pid)!.startTime);
    expect(procStartTime(child.pid!)).toBe(start);
    expect(await readStartTime(child.pid!)).toBe(start);
    expect(await readStartTime(2 ** 22 + 1)).toBeNull(); // no such pid
  });
});

describe("signalName", () => {
  it("names a signal number; undefined for none", () => {
    expect(signalName(15)).toBe("SIGTERM");
    expect(signalName(9)).toBe("SIGKILL");
    expect(signalName(0)).toBeUndefined();
    expect(signalName(999)).toBeUndefined();
  });
});
