/**
 * Test helpers for the session store: temp city dirs and real child processes running the
 * store from TypeScript source (via fixtures/register-ts.mjs), with cleanup registered on the
 * current test so nothing leaks even when it fails.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { onTestFinished } from "vitest";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));

/** A temp dir removed when the current test finishes. */
export async function tempDir(prefix = "gc-store-"): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(d, { recursive: true, force: true }));
  return d;
}

/** A running store child process. */
export interface Child {
  readonly proc: ChildProcessWithoutNullStreams;
  readonly pid: number;
  /** Resolves the next stdout JSON line matching `pred` (rejects if the child exits first). */
  next(pred?: (msg: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Resolves with the exit code/signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything written to stderr so far. */
  stderr(): string;
}

/** Starts `store-child.ts MODE ...args`; killed (SIGKILL) when the current test finishes. */
export function spawnStoreChild(args: readonly string[]): Child {
  const proc = spawn(
    process.execPath,
    ["--import", join(FIXTURES, "register-ts.mjs"), join(FIXTURES, "store-child.ts"), ...args],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let err = "";
  proc.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on("exit", (code, signal) => resolve({ code, signal }));
  });
  onTestFinished(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exited;
  });
  const queue: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  let closed = false;
  const rl = createInterface({ input: proc.stdout });
  rl.on("line", (line) => {
    try {
      queue.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      queue.push({ raw: line });
    }
    for (const w of waiters.splice(0)) w();
  });
  rl.on("close", () => {
    closed = true;
    for (const w of waiters.splice(0)) w();
  });
  return {
    proc,
    pid: proc.pid ?? -1,
    exited,
    stderr: () => err,
    async next(pred = () => true) {
      for (;;) {
        const i = queue.findIndex(pred);
        if (i >= 0) return queue.splice(i, 1)[0] as Record<string, unknown>;
        if (closed) {
          const { code, signal } = await exited;
          throw new Error(`store child exited (${code ?? signal}) before reporting:\n${err}`);
        }
        await new Promise<void>((r) => waiters.push(r));
      }
    },
  };
}
