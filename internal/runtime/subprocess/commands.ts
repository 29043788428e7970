/**
 * Work on a held session's files and commands from this process (the provider runs them
 * locally, in the session's work dir): copying files in, and running a command with the
 * session's environment.
 */
import { cp, mkdir, stat } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import { describeError, InvalidNameError } from "../../base/errors.js";
import { OP_TIMEOUT_MS, run } from "../../proc/run.js";
import type { ExecCommandOptions, ExecCommandResult } from "../provider.js";

/** Copies `src` to `relDst` under `workDir`. Resolves when `src` is missing. */
export async function copyInto(src: string, workDir: string, relDst: string): Promise<void> {
  const base = resolve(workDir);
  const dst = relDst ? resolve(base, relDst) : base;
  if (dst !== base && !dst.startsWith(base + sep)) {
    throw new InvalidNameError("copy destination", relDst, "must stay inside the work dir");
  }
  let srcStat: Awaited<ReturnType<typeof stat>>;
  try {
    srcStat = await stat(src);
  } catch {
    return;
  }
  let target = dst;
  if (srcStat.isFile()) {
    const dstStat = await stat(dst).catch(() => undefined);
    if (dstStat?.isDirectory()) target = join(dst, basename(src));
  }
  if (resolve(src) === target) return;
  await mkdir(dirname(target), { recursive: true });
  await cp(src, target, { recursive: true, force: true });
}

/**
 * Runs `argv` directly (no shell) in `session.workDir` with `session.env` (both overridable
 * by `opts`). A program that cannot be found exits 127, one that cannot be run 126.
 * Timeout → OperationTimeoutError.
 */
export async function runInSession(
  argv: readonly string[],
  session: { readonly workDir: string; readonly env: Readonly<Record<string, string>> },
  opts: ExecCommandOptions,
): Promise<ExecCommandResult> {
  try {
    const res = await run(argv, {
      cwd: opts.cwd ?? session.workDir,
      env: { ...session.env, ...opts.env },
      stdin: opts.stdin,
      timeoutMs: opts.timeoutMs ?? OP_TIMEOUT_MS,
      signal: opts.signal,
      keepOutputOnCut: true,
    });
    return {
      exitCode: res.exitCode ?? 128 + signalNumber(res.signal),
      stdout: res.stdout,
      stderr: res.stderr,
    };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "EACCES") {
      return {
        exitCode: code === "ENOENT" ? 127 : 126,
        stdout: "",
        stderr: `${argv[0]}: ${describeError(e)}\n`,
      };
    }
    throw e;
  }
}

function signalNumber(sig: NodeJS.Signals | null): number {
  return sig ? (osConstants.signals[sig] ?? 0) : 0;
}
