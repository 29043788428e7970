/** Following processes seen by a census: the same process across exec, never a reused pid. */
import { spawn } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import { type CensusEntry, stillAlive } from "../../internal/proc/census.js";
import { procStartTime, readProcessTable } from "../../internal/proc/process-table.js";

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
    expect(procStartTime(child.pid!)).toBe(
      Number((await readProcessTable()).find((p) => p.pid === child.pid)!.startTime),
    );
  });
});
