/**
 * Running an exec session script: resolving `exec:<script>` to a file, the environment every
 * call gets, and one call (`<script> <op> [name] [args]`, no shell) with a deadline, stdin as
 * data and the whole process group killed on timeout or abort. Used by the exec provider and
 * its probe.
 */
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { isGcError, OperationTimeoutError, ProviderError } from "../../base/errors.js";
import { run } from "../../proc/run.js";
import { EXEC_PROTOCOL_VERSION, type ExecOperationName } from "./protocol.js";

/** Default deadline of one script call. */
export const EXEC_OP_TIMEOUT_MS = 30_000;
/** Default deadline of `start` (it waits for readiness and runs hooks). */
export const EXEC_START_TIMEOUT_MS = 120_000;
/**
 * Grace between SIGTERM and SIGKILL of a timed-out script's process group. Short, so a
 * script that traps SIGTERM still fails within its deadline plus one second.
 */
export const EXEC_KILL_GRACE_MS = 500;

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const st = await stat(path);
    if (!st.isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves the script of `exec:<script>`: an absolute path as is; a path containing `/`
 * relative to `baseDir`; a bare name on `PATH` (from `env`).
 * @throws ProviderError when it is not an executable file.
 */
export async function resolveScript(
  script: string,
  baseDir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  if (script === "") throw new ProviderError("exec", 'empty script path in "exec:"');
  if (isAbsolute(script) || script.includes("/")) {
    const path = resolve(baseDir, script);
    if (await isExecutableFile(path)) return path;
    throw new ProviderError("exec", `script ${JSON.stringify(path)} is not an executable file`);
  }
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const path = resolve(dir, script);
    if (await isExecutableFile(path)) return path;
  }
  throw new ProviderError(
    "exec",
    `script ${JSON.stringify(script)} not found on PATH (use ./${script} for a file in the city directory)`,
  );
}

/** What every call of one script shares. */
export interface ScriptContext {
  /** Absolute script path. */
  readonly script: string;
  /** Full environment of each call (see {@link scriptEnv}). */
  readonly env: NodeJS.ProcessEnv;
  /** Working directory of each call. */
  readonly cwd: string;
}

/**
 * The environment a script call gets: `base`, then `extra`, then `GC_EXEC_STATE_DIR`,
 * `GC_CITY` and `GC_EXEC_PROTOCOL` (the version gc speaks). `TMUX` is removed so a
 * controller running inside tmux does not leak its own server into scripts. Pure.
 */
export function scriptEnv(
  base: NodeJS.ProcessEnv,
  extra: Readonly<Record<string, string>> | undefined,
  stateDir: string,
  city: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, ...extra };
  delete env.TMUX;
  env.GC_EXEC_STATE_DIR = stateDir;
  env.GC_CITY = city;
  env.GC_EXEC_PROTOCOL = String(EXEC_PROTOCOL_VERSION);
  return env;
}

/** Options of one call. */
export interface CallOptions {
  readonly stdin?: string | undefined;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** How a call ended (it ran to completion; timeouts and aborts reject instead). */
export interface CallResult {
  readonly exit: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `<script> <op> <name>` — how errors name a call. */
export function describeCall(ctx: ScriptContext, op: ExecOperationName, name: string | undefined): string {
  return `${ctx.script} ${op}${name !== undefined ? ` ${name}` : ""}`;
}

/**
 * Runs `<script> <op> [name] [args…]` directly (no shell) in its own process group.
 * Resolves with the exit code and output, whatever the code.
 * @throws OperationTimeoutError (`GC_TIMEOUT`) naming script, operation and session when
 * the deadline passes — after the whole process group is dead.
 * @throws the signal's reason when aborted (also after the group is dead).
 * @throws ProviderError when the script cannot be executed or dies from a signal.
 */
export async function callScript(
  ctx: ScriptContext,
  op: ExecOperationName,
  name: string | undefined,
  args: readonly string[],
  opts: CallOptions,
): Promise<CallResult> {
  const argv = [ctx.script, op, ...(name !== undefined ? [name] : []), ...args];
  const what = describeCall(ctx, op, name);
  try {
    const r = await run(argv, {
      cwd: ctx.cwd,
      env: ctx.env,
      stdin: opts.stdin,
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      killGraceMs: EXEC_KILL_GRACE_MS,
    });
    if (r.exitCode === null) {
      throw new ProviderError("exec", `${what}: killed by ${r.signal ?? "a signal"}${stderrTail(r.stderr)}`);
    }
    return { exit: r.exitCode, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    if (opts.signal?.aborted && e === opts.signal.reason) throw e;
    if (isGcError(e, "GC_TIMEOUT"))
      throw new OperationTimeoutError(`exec ${what}`, opts.timeoutMs, { cause: e });
    if (isGcError(e)) throw e;
    throw new ProviderError("exec", `${what}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

function stderrTail(stderr: string): string {
  const t = stderr.trim();
  return t ? `: ${t}` : "";
}

/** The per-city directory given to scripts as `GC_EXEC_STATE_DIR`: `<stateDir>/exec`. */
export function execStateDir(stateDir: string): string {
  return join(stateDir, "exec");
}
