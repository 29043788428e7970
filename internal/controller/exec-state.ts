/**
 * A stateful shell over a stateless exec, for `gc exec`: each command runs wrapped as
 * restore → run → capture, so `cd` and `export` persist between calls of one session. The
 * state (working directory and the environment changes) lives in
 * `<city>/.gc/exec-shell/<session>.state` and is dropped when the session stops or restarts.
 * The wrapper is a constant script: user values only ever travel as positional arguments.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isSecretKey } from "../runtime/secrets.js";

/** One session's shell state. */
export interface ShellState {
  /** Working directory to restore; `undefined` = the session's own. */
  readonly cwd: string | undefined;
  /** Variables set or changed relative to the session's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Variables of the session's environment that were unset. */
  readonly unset: readonly string[];
  /** The session incarnation the state belongs to (see {@link incarnationOf}). */
  readonly incarnation: string;
  readonly updatedAt: number;
}

/** Shell builtins whose effect on the shell (cwd, env) must persist: always wrapped. */
export const STATE_BUILTINS: ReadonlySet<string> = new Set(["cd", "export", "unset", "source", "."]);

/** Variables the shell maintains itself; never part of the state. */
const VOLATILE = new Set(["PWD", "OLDPWD", "SHLVL", "_"]);
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The wrapper, run as `sh -c WRAPPER gc-exec NONCE CWD N K1 V1 … M U1 … -- ARGV…`.
 * It prints the environment it was given (NUL-separated, after its cwd), a begin marker,
 * restores the state, runs `"$@"` in this shell (so `cd`/`export` take effect here), then
 * prints an end marker, the resulting cwd and environment, and exits with the command's status.
 */
const WRAPPER = [
  "n=$1; c=$2; shift 2",
  "printf '%s\\000' \"$PWD\"; env -0 2>/dev/null",
  "printf '\\n%s:B\\n' \"$n\"",
  "k=$1; shift",
  'while [ "$k" -gt 0 ]; do export "$1=$2"; shift 2; k=$((k - 1)); done',
  "k=$1; shift",
  'while [ "$k" -gt 0 ]; do unset "$1"; shift; k=$((k - 1)); done',
  "shift",
  'if [ -n "$c" ]; then cd -- "$c" || printf \'gc exec: cannot restore the working directory %s\\n\' "$c" >&2; fi',
  '"$@"',
  "r=$?",
  "printf '\\n%s:E\\n' \"$n\"",
  "printf '%s\\000' \"$PWD\"; env -0 2>/dev/null",
  'exit "$r"',
].join("\n");

/**
 * Shell builtins with no program of their own (`exit 3`, `eval …`, `umask`): run in the
 * wrapper shell like every command once there is state, so they behave the same before the
 * first `cd` as after it (not "command not found", 127).
 */
const SHELL_ONLY = new Set([
  "exit",
  "return",
  "exec",
  "eval",
  "set",
  "shift",
  "trap",
  "readonly",
  "times",
  "wait",
  "umask",
  "ulimit",
  "alias",
  "unalias",
  "type",
  "command",
  "hash",
  "getopts",
  ":",
]);

/** True when `argv` must run in the wrapper shell even without saved state. Pure. */
export function needsShell(argv: readonly string[]): boolean {
  return argv.length > 0 && (STATE_BUILTINS.has(argv[0]!) || SHELL_ONLY.has(argv[0]!));
}

/** A fresh random marker for one call. */
export function newNonce(): string {
  return `gc-exec-${randomBytes(12).toString("hex")}`;
}

/** The argv that runs `argv` wrapped with `state` restored. Pure. */
export function wrapArgv(argv: readonly string[], state: ShellState | undefined, nonce: string): string[] {
  const env = Object.entries(state?.env ?? {}).filter(([k]) => ENV_NAME_RE.test(k) && !VOLATILE.has(k));
  const unset = (state?.unset ?? []).filter((k) => ENV_NAME_RE.test(k) && !VOLATILE.has(k));
  return [
    "sh",
    "-c",
    WRAPPER,
    "gc-exec",
    nonce,
    state?.cwd ?? "",
    String(env.length),
    ...env.flat(),
    String(unset.length),
    ...unset,
    "--",
    // `source` is not POSIX (dash lacks it); `.` is the same builtin.
    ...(argv[0] === "source" ? [".", ...argv.slice(1)] : argv),
  ];
}

/** The shell's view before and after the command. */
export interface ShellSnapshot {
  readonly cwd: string;
  /** `undefined` when the shell could not list its environment (`env -0` missing). */
  readonly env: Map<string, string> | undefined;
}

/** What {@link unwrapOutput} found in the wrapper's stdout. */
export interface Unwrapped {
  /** The command's own stdout. */
  readonly stdout: string;
  readonly before: ShellSnapshot | undefined;
  /** `undefined` when the command ended the shell (e.g. `exit`): keep the old state. */
  readonly after: ShellSnapshot | undefined;
}

function parseSnapshot(block: string): ShellSnapshot {
  const parts = block.split("\0");
  const cwd = parts.shift() ?? "";
  const entries = parts.filter((p) => p.length > 0);
  if (entries.length === 0) return { cwd, env: undefined };
  const env = new Map<string, string>();
  for (const e of entries) {
    const eq = e.indexOf("=");
    if (eq > 0) env.set(e.slice(0, eq), e.slice(eq + 1));
  }
  return { cwd, env };
}

/** Splits the wrapper's stdout into the command's stdout and the two snapshots. Pure. */
export function unwrapOutput(stdout: string, nonce: string): Unwrapped {
  const begin = `\n${nonce}:B\n`;
  const end = `\n${nonce}:E\n`;
  const b = stdout.indexOf(begin);
  if (b < 0) return { stdout, before: undefined, after: undefined };
  const before = parseSnapshot(stdout.slice(0, b));
  const rest = stdout.slice(b + begin.length);
  const e = rest.lastIndexOf(end);
  if (e < 0) return { stdout: rest, before, after: undefined };
  return { stdout: rest.slice(0, e), before, after: parseSnapshot(rest.slice(e + end.length)) };
}

/**
 * The command's own stdout in the wrapper's stdout of a call cut short (deadline, abort),
 * which has no end marker, or only a piece of one: "" until the begin marker (what precedes
 * it is the session's cwd and environment, never the command's), then everything up to the
 * end marker — or to a piece of it at the very end that reaches into the nonce's random part
 * (a shorter piece cannot be told from the command's own output and is kept). The snapshots
 * are not read: a cut call changes no state. Pure.
 */
export function unwrapCutOutput(stdout: string, nonce: string): string {
  const begin = `\n${nonce}:B\n`;
  const end = `\n${nonce}:E\n`;
  const b = stdout.indexOf(begin);
  if (b < 0) return "";
  const rest = stdout.slice(b + begin.length);
  const e = rest.indexOf(end);
  if (e >= 0) return rest.slice(0, e);
  // A piece of the end marker is stripped only once it reaches into the random part of the
  // nonce: output that merely ends like its fixed start ("\ngc") is the command's.
  const fixed = "\ngc-exec-".length;
  for (let k = Math.min(end.length - 1, rest.length); k > fixed; k--) {
    if (rest.endsWith(end.slice(0, k))) return rest.slice(0, rest.length - k);
  }
  return rest;
}

/**
 * The state after a wrapped call: the cwd when it differs from where the session's shell
 * starts, and the environment difference between the session's own environment (`before`)
 * and the end of the command. Keeps `prev` when nothing was captured. Pure.
 */
export function nextShellState(
  prev: ShellState | undefined,
  u: Unwrapped,
  incarnation: string,
  now: number,
): ShellState | undefined {
  if (!u.before || !u.after) return prev;
  const cwd = u.after.cwd && u.after.cwd !== u.before.cwd ? u.after.cwd : undefined;
  let env: Record<string, string> = { ...(prev?.env ?? {}) };
  let unset: string[] = [...(prev?.unset ?? [])];
  if (u.before.env && u.after.env) {
    env = {};
    unset = [];
    for (const [k, v] of u.after.env) {
      // A secret-named export never reaches the state file: it lasts for that one call.
      if (VOLATILE.has(k) || !ENV_NAME_RE.test(k) || isSecretKey(k)) continue;
      if (u.before.env.get(k) !== v) env[k] = v;
    }
    for (const k of u.before.env.keys()) {
      if (!VOLATILE.has(k) && ENV_NAME_RE.test(k) && !u.after.env.has(k)) unset.push(k);
    }
  }
  return { cwd, env, unset: unset.sort(), incarnation, updatedAt: now };
}

/** True when the state changes nothing (no file needed). Pure. */
export function isEmptyState(s: ShellState | undefined): boolean {
  return !s || (s.cwd === undefined && Object.keys(s.env).length === 0 && s.unset.length === 0);
}

/** Identity of one run of a session: a restarted session starts with a fresh shell state. */
export function incarnationOf(rec: { generation: number; startedAt: number | null } | undefined): string {
  return rec ? `${rec.generation}:${rec.startedAt ?? 0}` : "untracked";
}

function dir(stateDir: string): string {
  return join(stateDir, "exec-shell");
}

/** `<stateDir>/exec-shell/<session>.state`. */
export function shellStatePath(stateDir: string, session: string): string {
  return join(dir(stateDir), `${session}.state`);
}

/** The saved state, or `undefined` (none, unreadable, or of another incarnation). */
export async function loadShellState(
  stateDir: string,
  session: string,
  incarnation: string,
): Promise<ShellState | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(shellStatePath(stateDir, session), "utf8"));
  } catch {
    return undefined;
  }
  const s = raw as Partial<ShellState> | null;
  if (!s || typeof s !== "object" || s.incarnation !== incarnation) return undefined;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.env ?? {})) if (typeof v === "string") env[k] = v;
  return {
    cwd: typeof s.cwd === "string" ? s.cwd : undefined,
    env,
    unset: Array.isArray(s.unset) ? s.unset.filter((k): k is string => typeof k === "string") : [],
    incarnation,
    updatedAt: typeof s.updatedAt === "number" ? s.updatedAt : 0,
  };
}

/** Saves (or, when empty, removes) the state atomically; files 0600 in a 0700 directory. */
export async function saveShellState(stateDir: string, session: string, state: ShellState | undefined) {
  if (!state || isEmptyState(state)) {
    await dropShellState(stateDir, session);
    return;
  }
  await mkdir(dir(stateDir), { recursive: true, mode: 0o700 });
  const path = shellStatePath(stateDir, session);
  const tmp = `${path}.${randomUUID()}.tmp`;
  await writeFile(tmp, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  await rename(tmp, path);
}

/** Removes the session's shell state. Idempotent. */
export async function dropShellState(stateDir: string, session: string): Promise<void> {
  await rm(shellStatePath(stateDir, session), { force: true });
}

/** Sessions that have a saved shell state. */
export async function listShellStates(stateDir: string): Promise<string[]> {
  try {
    return (await readdir(dir(stateDir))).filter((f) => f.endsWith(".state")).map((f) => f.slice(0, -6));
  } catch {
    return [];
  }
}
