/** The /proc snapshot: real processes of this host, one scan shared by concurrent callers. */
import { spawn } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import { processTree, readProcessTable } from "../../internal/proc/process-table.js";

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
