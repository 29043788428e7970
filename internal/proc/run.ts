/**
 * The single spawn helper every provider uses: argv arrays only (never a shell string built
 * from user values), stdin as data, a deadline, cancellation, and the whole process group
 * killed on timeout or abort.
 */
import { spawn } from "node:child_process";
import { HookFailedError, OperationTimeoutError } from "../base/errors.js";
import { OutputCapture } from "./capture.js";
import { KILL_GRACE_MS } from "./kill.js";

/** Default deadline for one operation. */
export const OP_TIMEOUT_MS = 30_000;

/** Options for {@link run}. */
export interface RunOptions {
  readonly cwd?: string | undefined;
  /** Full environment of the child (defaults to this process's). */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** Written to the child's stdin, then stdin is closed. */
  readonly stdin?: string | Buffer | undefined;
  /** Deadline; the process group is killed and {@link OperationTimeoutError} thrown past it. */
  readonly timeoutMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Grace between SIGTERM and SIGKILL of the group. */
  readonly killGraceMs?: number | undefined;
  /** Cap on captured stdout/stderr bytes each (default 16 MiB, proc/capture.ts). */
  readonly maxOutputBytes?: number | undefined;
  /** On a deadline or abort, hang what the child printed on the error (`capturedOutputOf`). */
  readonly keepOutputOnCut?: boolean | undefined;
}

/** What a finished child did. */
export interface RunResult {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `argv[0]` with `argv[1..]` (no shell) in its own process group and collects output.
 * Resolves with the exit status whatever it is. Rejects with {@link OperationTimeoutError}
 * on the deadline and with `signal.reason` on abort — in both cases after the whole group
 * is dead, carrying what the child printed until then with `keepOutputOnCut`. Rejects with
 * the spawn error when the program cannot be started.
 */
export function run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const [file, ...args] = argv;
  if (!file) return Promise.reject(new TypeError("run: empty argv"));
  opts.signal?.throwIfAborted();
  return new Promise<RunResult>((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    const capture = new OutputCapture({ maxBytes: opts.maxOutputBytes, keepOnCut: opts.keepOutputOnCut });
    child.stdout.on("data", capture.stdout);
    child.stderr.on("data", capture.stderr);
    let failure: unknown;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    let forceClose: NodeJS.Timeout | undefined;
    const terminate = (reason: unknown) => {
      failure ??= reason;
      const grace = opts.killGraceMs ?? KILL_GRACE_MS;
      if (child.pid !== undefined) {
        // Kill the whole group: grandchildren keep pipes open otherwise (gascity's WaitDelay).
        killGroup(child.pid, grace);
      }
      // A grandchild that left the group (setsid) may still hold our pipes: stop waiting for them.
      forceClose ??= setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        if (!settled) {
          settled = true;
          cleanup();
          reject(capture.cut(failure));
        }
      }, grace + 500);
    };
    const onAbort = () => terminate(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      const ms = opts.timeoutMs;
      timer = setTimeout(
        () => terminate(new OperationTimeoutError(`${file} ${args[0] ?? ""}`.trim(), ms)),
        ms,
      );
    }
    child.stdin.on("error", () => {
      // EPIPE when the child does not read stdin: not an error of ours
    });
    child.once("error", (e) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(e);
    });
    child.once("close", (code, sig) => {
      if (settled) return;
      settled = true;
      cleanup();
      if (failure !== undefined) {
        reject(capture.cut(failure));
        return;
      }
      resolve({ exitCode: code, signal: sig, ...capture.text() });
    });
    function cleanup() {
      if (timer) clearTimeout(timer);
      if (forceClose) clearTimeout(forceClose);
      opts.signal?.removeEventListener("abort", onAbort);
    }
    child.stdin.end(opts.stdin ?? "");
  });
}

function killGroup(pgid: number, graceMs: number): void {
  try {
    process.kill(-pgid, "SIGTERM");
  } catch {
    return; // group already gone
  }
  setTimeout(() => {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // exited within the grace period
    }
  }, graceMs).unref();
}

/** Options for {@link runHooks}. */
export interface HookOptions {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

/**
 * Runs each declared shell command (the user's own hook text) with `/bin/sh -c`, in order.
 * @throws HookFailedError naming `hook` on the first non-zero exit, with its stderr.
 */
export async function runHooks(hook: string, commands: readonly string[], opts: HookOptions): Promise<void> {
  for (const cmd of commands) {
    const r = await run(["/bin/sh", "-c", cmd], {
      cwd: opts.cwd,
      env: opts.env,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs ?? OP_TIMEOUT_MS,
    });
    if (r.exitCode !== 0) {
      const why = r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`;
      throw new HookFailedError(hook, `${JSON.stringify(cmd)}: ${why}`);
    }
  }
}
