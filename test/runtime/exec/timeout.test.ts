/**
 * Deadlines and cancellation of exec script calls: a hanging script (which even ignores
 * SIGTERM, as does its child) fails with GC_TIMEOUT within its timeout plus one second, and
 * no process of its process group survives; aborting rejects with the signal's reason.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import { MOCK_SCRIPT, recordedArgv, type TestProvider, testProvider } from "./mock.js";

const TIMEOUT_MS = 1_000;

/** Live (non-zombie) processes whose process group is `pgid`, from /proc. */
async function groupMembers(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited while we looked
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") out.push(Number(entry));
  }
  return out;
}

/** The hanging script's pid; throws until its whole line is written (the file exists empty first). */
async function hangPid(t: TestProvider): Promise<number> {
  const text = await readFile(join(t.execDir, "hang.pid"), "utf8");
  if (!text.endsWith("\n")) throw new Error("hang.pid not written yet");
  return Number(text.trim());
}

/** Kills whatever a failed test left of the hanging group, so nothing outlives the suite. */
function reapGroupAfter(t: TestProvider): void {
  onTestFinished(async () => {
    try {
      process.kill(-(await hangPid(t)), "SIGKILL");
    } catch {
      // already gone, or it never hung
    }
    await t.cleanup();
  });
}

describe("exec provider: timeouts and aborts", () => {
  it("isRunning: a script that hangs for good fails with GC_TIMEOUT and leaves no process", async () => {
    const t = await testProvider({ env: { MOCK_HANG: "is-running" }, settings: { timeout: TIMEOUT_MS } });
    reapGroupAfter(t);
    const err = await t.provider.isRunning("hung-1").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isGcError(err, "GC_TIMEOUT"), String(err)).toBe(true);
    const message = (err as Error).message;
    expect(message).toContain(MOCK_SCRIPT);
    expect(message).toContain("is-running hung-1");
    expect(await groupMembers(await hangPid(t))).toEqual([]);
  });

  it("start: a hanging start times out (GC_TIMEOUT naming start) and is cleaned up with stop", async () => {
    const t = await testProvider({ env: { MOCK_HANG: "start" }, settings: { start_timeout: "1s" } });
    reapGroupAfter(t);
    const err = await t.provider.start("hung-2", { command: "x", workDir: "/tmp", env: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isGcError(err, "GC_TIMEOUT"), String(err)).toBe(true);
    expect((err as Error).message).toContain("start hung-2");
    expect(await groupMembers(await hangPid(t))).toEqual([]);
    const calls = await recordedArgv(join(t.execDir, "argv"));
    expect(calls).toContainEqual(["stop", "hung-2"]);
  });

  it("peek: aborting rejects with the signal's reason and leaves no process", async () => {
    const t = await testProvider({ env: { MOCK_HANG: "peek" } });
    reapGroupAfter(t);
    const ac = new AbortController();
    const reason = new Error("operator pressed Ctrl-C");
    const p = t.provider.peek("hung-3", 10, { signal: ac.signal });
    // wait until the script is really hanging, then abort
    await vi.waitFor(() => hangPid(t), { timeout: 5_000, interval: 25 });
    ac.abort(reason);
    await expect(p).rejects.toBe(reason);
    expect(await groupMembers(await hangPid(t))).toEqual([]);
  });

  it("start: an already-aborted signal rejects at once without calling the script", async () => {
    const t = await testProvider();
    onTestFinished(t.cleanup);
    const ac = new AbortController();
    const reason = new Error("aborted before");
    ac.abort(reason);
    await expect(
      t.provider.start("never", { command: "x", workDir: "/tmp", env: {} }, { signal: ac.signal }),
    ).rejects.toBe(reason);
    const calls = await recordedArgv(join(t.execDir, "argv"));
    expect(calls.filter((c) => c[0] !== "capabilities")).toEqual([]);
  });
});
