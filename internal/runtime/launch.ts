/**
 * Pure helpers every local provider uses to turn a {@link StartConfig} into a process:
 * the argv (the declared command run by `/bin/sh -c`, the prompt passed as an argument,
 * never spliced into the shell text) and the environment (GC_* identity variables).
 */
import { OWNER_ENV } from "../proc/census.js";
import type { StartConfig } from "./provider.js";

/** Shell used for the declared command and hooks. */
export const SHELL = "/bin/sh";

/**
 * argv for the session program. The declared `command` is shell text written by the user;
 * the prompt (and its flag) are appended as positional parameters (`"$@"`), so no prompt
 * character is ever interpreted by a shell. Empty command → a login-less `/bin/sh`.
 */
export function launchArgv(cfg: Pick<StartConfig, "command" | "prompt" | "promptFlag">): string[] {
  const command = cfg.command.trim();
  if (command === "") return [SHELL];
  const promptArgs = promptArgv(cfg);
  if (promptArgs.length === 0) return [SHELL, "-c", command];
  return [SHELL, "-c", `${command} "$@"`, "gc-session", ...promptArgs];
}

/** The variable that carries the command text to the session's shell (see {@link commandViaEnv}). */
export const COMMAND_ENV = "GC_START_COMMAND";
const FROM_ENV = `gc_c=$${COMMAND_ENV}; unset ${COMMAND_ENV}; eval "$gc_c"`;
/** {@link FROM_ENV} for a simple command: the shell execs the program (see {@link commandViaEnv}). */
const FROM_ENV_EXEC = `gc_c=$${COMMAND_ENV}; unset ${COMMAND_ENV}; eval "exec $gc_c"`;

/**
 * Whether `text` is one simple command that `exec TEXT` runs the same way: no list,
 * pipeline, redirection, subshell, group or substitution, and no leading assignment.
 */
/** Shell builtins and keywords: `exec WORD` would look for a program of that name instead. */
const SHELL_WORDS = new Set(
  (
    "exec exit return cd export unset set shift trap eval . source read wait umask ulimit alias " +
    "unalias command readonly local times type hash getopts if then else elif fi for while until " +
    "do done case esac break continue : ! [ [[ test true false echo printf kill pwd jobs fg bg"
  ).split(" "),
);

function isSimpleCommand(text: string): boolean {
  if (/[;&|<>(){}`!\n\\]/.test(text)) return false;
  const first = text.trimStart().split(/\s/, 1)[0] ?? "";
  return first !== "" && !first.includes("=") && !SHELL_WORDS.has(first);
}

/**
 * Moves the shell text of a launch argv (`/bin/sh -c TEXT [$0 ARGS…]`) into the environment,
 * so the command — and a secret interpolated into it — is not in any process's argv (`ps`).
 * The shell reads the text, unsets the variable (the program never inherits it) and
 * evaluates it with the same positional parameters. A simple command is exec'd, as `sh -c`
 * does with it: the program replaces the shell (an agent CLI such as Claude Code does not
 * get past its trust dialog when a shell stays its parent). Any other argv is returned as is. Pure.
 */
export function commandViaEnv(argv: readonly string[]): { argv: string[]; env: Record<string, string> } {
  if (argv.length < 3 || argv[0] !== SHELL || argv[1] !== "-c") return { argv: [...argv], env: {} };
  const rest = argv.length > 3 ? argv.slice(3) : ["gc-session"];
  const text = argv[2]!;
  return {
    argv: [SHELL, "-c", isSimpleCommand(text) ? FROM_ENV_EXEC : FROM_ENV, ...rest],
    env: { [COMMAND_ENV]: text },
  };
}

/** The prompt as extra arguments: `[flag, prompt]`, `[prompt]` or `[]`. Pure. */
export function promptArgv(cfg: Pick<StartConfig, "prompt" | "promptFlag">): string[] {
  if (cfg.prompt === undefined || cfg.prompt === "") return [];
  return cfg.promptFlag ? [cfg.promptFlag, cfg.prompt] : [cfg.prompt];
}

/**
 * Variables describing gc's own terminal or controller, never the session's: a session must
 * not believe it runs inside the operator's tmux or screen, inherit their terminal type or
 * window size, or think it is the controller. The one list every provider uses.
 */
export const NOT_INHERITED: ReadonlySet<string> = new Set([
  "TMUX",
  "TMUX_PANE",
  "STY",
  "WINDOW",
  "WINDOWID",
  "TERM",
  "TERMCAP",
  "TERM_PROGRAM",
  "TERM_PROGRAM_VERSION",
  "COLUMNS",
  "LINES",
  "GC_CONTROLLER_CHILD",
]);

/**
 * Variables of gc's own environment every session inherits (names; `X_*` matches a prefix).
 * Anything else in gc's environment — tokens, cloud credentials, the operator's shell
 * state — never reaches a session unless the city file names it in `session.inherit_env`
 * or declares it in an agent's `env`.
 */
export const DEFAULT_INHERITED_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "COLORTERM",
  "TZ",
  "TMPDIR",
  "XDG_RUNTIME_DIR",
];

/** True when `key` is named by `allow` (exact names; an entry ending in `*` is a prefix). Pure. */
export function envAllowed(key: string, allow: readonly string[]): boolean {
  return allow.some((a) => (a.endsWith("*") ? key.startsWith(a.slice(0, -1)) : a === key));
}

/**
 * The part of gc's environment a session inherits: {@link DEFAULT_INHERITED_ENV} plus
 * `extra` (the city's `session.inherit_env`), minus gc's own terminal variables. Pure; the
 * one rule every provider (and the start lifecycle) applies.
 */
export function inheritedEnv(base: NodeJS.ProcessEnv, extra: readonly string[] = []): Record<string, string> {
  const allow = [...DEFAULT_INHERITED_ENV, ...extra];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined && !NOT_INHERITED.has(k) && envAllowed(k, allow)) env[k] = v;
  }
  return env;
}

/**
 * {@link OWNER_ENV} (`GC_OWNER`) carries a local session's ownership tag: the city's owner
 * key (`<name>-<id>`, `ownerKey` in identity.ts — unlike `GC_CITY`, two cities never share
 * it). Every process of a session inherits it, so processes that outlived their tmux server
 * or holder (re-parented to init) are still found as this city's (proc/census.ts). Not part
 * of any fingerprint (only declared config is).
 */
export { OWNER_ENV };

/** The city as {@link sessionEnv} tags it: its name, plus the owner key for local sessions. */
export type SessionCity = string | { readonly name: string; readonly owner: string };

/**
 * `env` without {@link OWNER_ENV}: for gc's own long-lived processes (controller, tmux
 * server, holders), which may be started from inside a session and must never look like
 * one of its processes. Pure.
 */
export function withoutOwnerTag(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  delete out[OWNER_ENV];
  return out;
}

/**
 * The environment a session's program and hooks see: the allow-listed part of the caller's
 * base env ({@link inheritedEnv}), then the declared env, then identity variables
 * (`GC_SESSION`, `GC_CITY`, `GC_DIR`, and {@link OWNER_ENV} when `city` carries an owner
 * key — local providers do; docker/k8s/exec pass the name alone); the provider's own
 * terminal variables (`terminal`, e.g. the pty's `TERM`) go after the inherited part. Never
 * gc's whole environment. Pure.
 */
export function sessionEnv(
  base: NodeJS.ProcessEnv,
  name: string,
  cfg: Pick<StartConfig, "env" | "workDir" | "inheritEnv">,
  city: SessionCity,
  terminal: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = inheritedEnv(base, cfg.inheritEnv);
  Object.assign(env, terminal, cfg.env);
  env.GC_SESSION = name;
  if (typeof city === "string") {
    env.GC_CITY = city;
    delete env[OWNER_ENV]; // a declared value must not claim another city's ownership
  } else {
    env.GC_CITY = city.name;
    env[OWNER_ENV] = city.owner;
  }
  env.GC_DIR = cfg.workDir;
  return env;
}

/** Directory hooks run in: `hookDir`, else the work dir. */
export function hookDirOf(cfg: Pick<StartConfig, "hookDir" | "workDir">): string {
  return cfg.hookDir || cfg.workDir;
}
