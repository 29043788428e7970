/**
 * The constant shell scripts the docker provider runs inside session containers, and the
 * one quoting function that turns the session's environment into a sourced file. User
 * values never become script text: they travel as positional arguments, on stdin, or
 * quoted by {@link shQuote} (tested with hostile values). Pure.
 */
import { RUN_STDIN } from "../lifecycle/target-scripts.js";

/** Directory (a tmpfs: memory only, never on disk) holding the env file and the ready flag. */
export const RUN_DIR = "/run/gc";
/** The session's environment as `export K='v'` lines, mode 0600, sourced by every wrapper. */
export const ENV_FILE = `${RUN_DIR}/env.sh`;
/** Created once the tmux session exists; the container's main process waits for it. */
export const READY_FILE = `${RUN_DIR}/ready`;
/** Metadata directory in the container's filesystem (one file per key). */
export const META_DIR = "/.gc-meta";
/** The tmux session inside every container. */
export const TMUX_SESSION = "gc";
/** tmux target of the session's only pane. */
export const PANE = `${TMUX_SESSION}:`;
/**
 * Left by the container's first boot in its writable layer (kept across a restart, unlike
 * {@link RUN_DIR}); /tmp because any user can write there.
 */
export const BOOTED_FILE = "/tmp/.gc-booted";
/** How long the main process waits for {@link READY_FILE} before giving up (× 50 ms). */
export const BOOT_WAIT_TICKS = 2_400;

/**
 * The container's main process: waits (bounded) until gc has created the tmux session,
 * then attaches to it as the container's console client (`ignore-size`, so it never
 * shrinks the window). It exits when the session ends, so the container lives exactly as
 * long as the session's program.
 *
 * Its status is what tells the docker provider's `sessionEnd` a program's end from a kill
 * from outside: 0 whenever the session ended — its program exited however (any code, a
 * signal), also when it had already ended before the client could attach (tmux's own status
 * is then 1, hence no `exec`); non-zero only when the container's processes were signalled
 * from outside (an engine stop or restart, `docker stop`/`kill`: 128 + signal), gc's start
 * never raised the ready flag (125), or the container was restarted (124: a `docker restart`
 * killed the program; the restarted container ends at once, marked by {@link BOOTED_FILE}, rather
 * than running on without a session).
 */
export const BOOT_SCRIPT = [
  `[ -e ${BOOTED_FILE} ] && exit 124`,
  `: > ${BOOTED_FILE} 2>/dev/null`,
  "i=0",
  `while [ ! -e ${READY_FILE} ]; do i=$((i+1)); [ "$i" -gt ${BOOT_WAIT_TICKS} ] && exit 125; sleep 0.05; done`,
  `tmux -u attach-session -f ignore-size -t ${TMUX_SESSION}`,
  "exit 0",
].join("\n");

/**
 * Run once by `start` through the exec API, as `sh -c SETUP gc-setup COLS ROWS HISTORY
 * WORKDIR ARGV…` with the env file on stdin: stores the env file (0600, tmpfs), creates the
 * tmux session whose pane sources it, changes to the work dir and execs the program, then
 * raises the ready flag.
 */
export const SETUP_SCRIPT = [
  "umask 077",
  `cat > ${ENV_FILE} || exit 125`,
  "cols=$1 rows=$2 hist=$3; shift 3",
  `tmux -u -f /dev/null start-server \\; set-option -g history-limit "$hist" \\; new-session -d -s ${TMUX_SESSION} -x "$cols" -y "$rows" -- /bin/sh -c '. ${ENV_FILE}; cd "$1" || exit 127; shift; exec "$@"' gc-session "$@" || exit 126`,
  `: > ${READY_FILE}`,
].join("\n");

/**
 * Runs a command in the session's environment: `sh -c EXEC gc-exec CWD N K1 V1 … -- ARGV…`
 * sources the env file, exports the N overrides, changes to CWD and execs ARGV.
 */
export const EXEC_SCRIPT = [
  `[ -r ${ENV_FILE} ] && . ${ENV_FILE}`,
  "c=$1 n=$2; shift 2",
  'while [ "$n" -gt 0 ]; do export "$1=$2"; shift 2; n=$((n-1)); done',
  "shift",
  'cd "$c" || exit 1',
  'exec "$@"',
].join("\n");

/** A hook command run in the container: `sh -c HOOK gc-hook WORKDIR COMMAND`. */
export const HOOK_SCRIPT = [
  `[ -r ${ENV_FILE} ] && . ${ENV_FILE}`,
  'cd "$1" || exit 127',
  'exec /bin/sh -c "$2"',
].join("\n");

/**
 * Runs a script received on stdin in the session's environment (any interpreter, via its
 * shebang): `sh -c SCRIPT gc-script WORKDIR` — the env file, then the shared {@link RUN_STDIN}.
 */
export const STDIN_SCRIPT = [`[ -r ${ENV_FILE} ] && . ${ENV_FILE}`, RUN_STDIN].join("\n");

/** Names of every process in the container, one per line. */
export const COMM_SCRIPT = "cat /proc/[0-9]*/comm 2>/dev/null; true";

/**
 * `s` as one POSIX-sh word: single-quoted, with each `'` written as `'\''`. Safe for every
 * string without NUL (newlines, `$()`, backticks, `#{}`, Unicode stay literal). Pure.
 */
export function shQuote(s: string): string {
  if (s.includes("\0")) throw new TypeError("shQuote: NUL cannot be passed to a shell");
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** True when `k` can be an exported shell variable. */
export function validEnvKey(k: string): boolean {
  return ENV_KEY_RE.test(k);
}

/**
 * The env file: one `export K='v'` line per variable, sorted. Pure.
 * @throws TypeError for a key that is not a shell variable name or a value with NUL.
 */
export function envFile(env: Readonly<Record<string, string>>): string {
  const keys = Object.keys(env).sort();
  const lines: string[] = [];
  for (const k of keys) {
    if (!validEnvKey(k)) throw new TypeError(`environment variable name ${JSON.stringify(k)} is not valid`);
    lines.push(`export ${k}=${shQuote(env[k]!)}`);
  }
  return `${lines.join("\n")}\n`;
}
