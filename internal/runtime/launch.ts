/**
 * Pure helpers every local provider uses to turn a {@link StartConfig} into a process:
 * the argv (the declared command run by `/bin/sh -c`, the prompt passed as an argument,
 * never spliced into the shell text) and the environment (GC_* identity variables).
 */
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

/** The prompt as extra arguments: `[flag, prompt]`, `[prompt]` or `[]`. Pure. */
export function promptArgv(cfg: Pick<StartConfig, "prompt" | "promptFlag">): string[] {
  if (cfg.prompt === undefined || cfg.prompt === "") return [];
  return cfg.promptFlag ? [cfg.promptFlag, cfg.prompt] : [cfg.prompt];
}

/**
 * Variables describing gc's own terminal or controller, never the session's: a session must
 * not believe it runs inside the operator's tmux or inherit their window size.
 */
export const NOT_INHERITED: ReadonlySet<string> = new Set([
  "TMUX",
  "TMUX_PANE",
  "COLUMNS",
  "LINES",
  "GC_CONTROLLER_CHILD",
]);

/**
 * The environment a session's program and hooks see: the caller's base env, then the
 * declared env, then identity variables (`GC_SESSION`, `GC_CITY`, `GC_DIR`). gc's own terminal variables
 * (`TMUX`, `COLUMNS`, …) are not passed on. Pure.
 */
export function sessionEnv(
  base: NodeJS.ProcessEnv,
  name: string,
  cfg: Pick<StartConfig, "env" | "workDir">,
  city: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !NOT_INHERITED.has(k)) env[k] = v;
  Object.assign(env, cfg.env);
  env.GC_SESSION = name;
  env.GC_CITY = city;
  env.GC_DIR = cfg.workDir;
  return env;
}

/** Directory hooks run in: `hookDir`, else the work dir. */
export function hookDirOf(cfg: Pick<StartConfig, "hookDir" | "workDir">): string {
  return cfg.hookDir || cfg.workDir;
}
