/**
 * The remote-exec kill scripts (lifecycle/target-scripts.ts) run by the local `sh`, standing
 * in for a container's: RUN_GROUP passes stdin and the exit status through and leaves no file,
 * KILL_GROUP kills the whole group (SIGTERM ignored → SIGKILL) with and without `setsid` on
 * PATH, and does nothing for a command that is not running. The providers' own tests prove the
 * same through docker and the k8s API server.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { pidAlive } from "../../internal/proc/kill.js";
import { run } from "../../internal/proc/run.js";
import { KILL_GROUP, RUN_GROUP } from "../../internal/runtime/lifecycle/target-scripts.js";

/** `sleep` in the background, both pids to `$1`, then wait; both ignore SIGTERM. */
const STUBBORN_TREE = `trap '' TERM; sleep 1000 & echo "$$ $!" > "$1"; wait`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "gc-kill-on-cut-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Starts RUN_GROUP detached (a group leader, as a container runtime starts an exec), never waited for by gc. */
function startWrapped(id: string, argv: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn("/bin/sh", ["-c", RUN_GROUP, "gc-exec", dir, id, ...argv], {
    env,
    detached: true,
    stdio: "ignore",
  });
  onTestFinished(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return { child, exited };
}

async function pidsIn(file: string): Promise<number[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  const pids = text.trim().split(" ").filter(Boolean).map(Number);
  return pids.length === 2 ? pids : [];
}

function kill(id: string, env: NodeJS.ProcessEnv = process.env) {
  return run(["/bin/sh", "-c", KILL_GROUP, "gc-kill", dir, id, "5"], { env, timeoutMs: 30_000 });
}

describe("RUN_GROUP / KILL_GROUP", () => {
  it("RUN_GROUP passes stdin and the exit status through and leaves no file", async () => {
    const r = await run(["/bin/sh", "-c", RUN_GROUP, "gc-exec", dir, "id-pass", "sh", "-c", "cat; exit 7"], {
      stdin: "piped ✓",
      timeoutMs: 30_000,
    });
    expect(r.exitCode).toBe(7);
    expect(r.stdout).toBe("piped ✓");
    expect(await readdir(dir)).toEqual([]);
  });

  it("RUN_GROUP starts the command with SIGINT and SIGQUIT at their defaults (not as a background job)", async () => {
    const r = await run(
      ["/bin/sh", "-c", RUN_GROUP, "gc-exec", dir, "id-int", "sh", "-c", "kill -INT $$; echo survived"],
      { timeoutMs: 30_000 },
    );
    expect(r.stdout).toBe("");
    expect(r.exitCode).toBe(128 + 2);
    expect(await readdir(dir)).toEqual([]);
  });

  it("KILL_GROUP kills the group under setsid (SIGTERM ignored → SIGKILL) and removes the file", async () => {
    const pidFile = join(dir, "tree.pids");
    const w = startWrapped("id-setsid", ["sh", "-c", STUBBORN_TREE, "tree", pidFile]);
    await expect.poll(() => pidsIn(pidFile)).toHaveLength(2);
    const pids = await pidsIn(pidFile);
    await expect.poll(() => readdir(dir)).toContain("gc-exec-id-setsid.pgid");
    expect((await kill("id-setsid")).exitCode).toBe(0);
    for (const pid of pids) await expect.poll(() => pidAlive(pid)).toBe(false);
    expect(await w.exited).toBe(128 + 9); // the wrapper outlives its group and reports the KILL
    expect(await readdir(dir)).toEqual(["tree.pids"]);
  });

  it("without setsid on PATH the wrapper's own group is recorded and killed", async () => {
    const bin = join(dir, "bin");
    await mkdir(bin);
    for (const tool of ["sh", "sleep", "rm", "cat"]) {
      const where = (await run(["/bin/sh", "-c", 'command -v "$1"', "sh", tool])).stdout.trim();
      await symlink(where, join(bin, tool));
    }
    const env = { ...process.env, PATH: bin };
    const pidFile = join(dir, "tree.pids");
    const w = startWrapped("id-plain", ["sh", "-c", STUBBORN_TREE, "tree", pidFile], env);
    await expect.poll(() => pidsIn(pidFile)).toHaveLength(2);
    const pids = await pidsIn(pidFile);
    await expect.poll(() => readFile(join(dir, "gc-exec-id-plain.pgid"), "utf8")).toBe(`${w.child.pid}\n`);
    expect((await kill("id-plain", env)).exitCode).toBe(0);
    for (const pid of pids) await expect.poll(() => pidAlive(pid)).toBe(false);
    await w.exited;
    expect((await readdir(dir)).sort()).toEqual(["bin", "tree.pids"]);
  });

  it("KILL_GROUP for a command that is not running does nothing and leaves nothing", async () => {
    expect((await kill("never-ran")).exitCode).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });
});
