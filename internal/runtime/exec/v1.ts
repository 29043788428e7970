/**
 * What gc does for a protocol v1 exec script that v1 itself cannot say. Each function is one
 * compensation, kept apart from the provider's call plumbing so the shared start lifecycle
 * can take them over unchanged:
 *
 * - {@link v1PromptCommand}: the initial prompt (and its flag) travel inside `command` as
 *   POSIX-quoted words, because a v1 script ignores the v2 `prompt` key; impossible cases
 *   are refused, never dropped.
 * - {@link classifyV1StartFailure}: the only error classes a v1 `start` can express are words
 *   on stderr ("already exists", "died during startup", a hook name).
 * - {@link V1_START_SETTLE_MS} / {@link diedDuringStartupDetail}: after a v1 `start` exits 0,
 *   gc lets the program settle, then confirms `is-running`; the last `peek` is the context.
 * - {@link frameMetaV1} / {@link unframeMetaV1}: a reversible framing that survives v1's
 *   trailing-newline trimming and tells an empty value from "unset".
 *
 * Pure; documented in docs/exec-protocol.md ("What gc does for a v1 script").
 */

import { UnsupportedError } from "../../base/errors.js";
import { shellQuote } from "../../base/shell-quote.js";
import { SHELL } from "../launch.js";
import type { StartConfig } from "../provider.js";

/**
 * Linux refuses any single exec argument longer than 128 KiB (MAX_ARG_STRLEN), and a v1
 * script typically hands `command` to `sh -c` as one argument. gc refuses a v1 command line
 * (prompt included) longer than this rather than let the script fail or truncate it.
 */
export const V1_MAX_COMMAND_BYTES = 128 * 1024 - 1024;

/**
 * How long gc waits after a v1 `start` exits 0 before asking `is-running`: long enough for a
 * program that cannot start (bad binary, syntax error, `exit 3`) to be gone.
 */
export const V1_START_SETTLE_MS = 250;

/** Marks a metadata value gc stored through a v1 script (see {@link frameMetaV1}). */
export const V1_META_FRAME = "#gc1";

/**
 * `command` for a v1 script: the declared command unchanged when there is no prompt;
 * otherwise exactly what the v2 path and the local providers run
 * (`/bin/sh -c '<command> "$@"' gc-session [<flag>] <prompt>`), written as one shell line
 * whose every word is single-quoted by {@link shellQuote} — so no prompt character is ever
 * interpreted, whatever it holds (quotes, `$()`, backticks, newlines, `#{}`, Unicode).
 * Run by the script's `/bin/sh -c`, the program's argv ends with the prompt byte for byte.
 * @throws UnsupportedError (nothing is started) when the prompt cannot be carried: an empty
 * command (a bare shell has no place for a prompt argument), a NUL character (no argv can hold
 * one), or a command line longer than {@link V1_MAX_COMMAND_BYTES}.
 */
export function v1PromptCommand(
  script: string,
  cfg: Pick<StartConfig, "command" | "prompt" | "promptFlag">,
): string {
  const prompt = cfg.prompt ?? "";
  if (prompt === "") return cfg.command;
  const refuse = (why: string) =>
    new UnsupportedError(
      `exec script ${script} speaks protocol v1, which can carry the initial prompt only inside "command", and ${why}; ` +
        "nothing was started (declare protocol 2 in the script's capabilities to pass the prompt as an argument)",
    );
  const command = cfg.command.trim();
  if (command === "") throw refuse("the command is empty (a bare shell takes no prompt argument)");
  if (prompt.includes("\0") || (cfg.promptFlag ?? "").includes("\0")) {
    throw refuse("the prompt contains a NUL character, which no program argument can hold");
  }
  const words = [SHELL, "-c", `${command} "$@"`, "gc-session"];
  if (cfg.promptFlag) words.push(cfg.promptFlag);
  words.push(prompt);
  const line = `exec ${words.map(shellQuote).join(" ")}`;
  const bytes = Buffer.byteLength(line);
  if (bytes > V1_MAX_COMMAND_BYTES) {
    throw refuse(
      `the command line with the prompt is ${bytes} bytes, over the ${V1_MAX_COMMAND_BYTES}-byte limit of one program argument`,
    );
  }
  return line;
}

/**
 * The hooks of `cfg` for a v1 script, which runs them in `work_dir` (it knows no `hook_dir`):
 * when the hook dir differs, each command becomes `cd -- '<hook_dir>' || exit 1` followed by
 * the command on its own line, and `session_setup_script` becomes a last `session_setup`
 * command of that form (executed directly when executable, else by `/bin/sh`). Pure.
 */
export function v1Hooks(
  cfg: Pick<
    StartConfig,
    "workDir" | "hookDir" | "preStart" | "sessionSetup" | "sessionSetupScript" | "sessionLive"
  >,
): Pick<StartConfig, "preStart" | "sessionSetup" | "sessionSetupScript" | "sessionLive"> {
  const hookDir = cfg.hookDir;
  if (!hookDir || hookDir === cfg.workDir) {
    return {
      preStart: cfg.preStart,
      sessionSetup: cfg.sessionSetup,
      sessionSetupScript: cfg.sessionSetupScript,
      sessionLive: cfg.sessionLive,
    };
  }
  const cd = `cd -- ${shellQuote(hookDir)} || exit 1\n`;
  const inDir = (cmds: readonly string[] | undefined) => cmds?.map((c) => `${cd}${c}`);
  const setup = [...(inDir(cfg.sessionSetup) ?? [])];
  if (cfg.sessionSetupScript) {
    const q = shellQuote(cfg.sessionSetupScript);
    setup.push(`${cd}if [ -x ${q} ]; then exec ${q}; else exec /bin/sh ${q}; fi`);
  }
  return {
    preStart: inDir(cfg.preStart),
    sessionSetup: setup.length > 0 ? setup : undefined,
    sessionSetupScript: undefined,
    sessionLive: inDir(cfg.sessionLive),
  };
}

/** How a failed v1 `start` classifies itself on stderr. */
export type V1StartFailure =
  | { readonly kind: "exists" }
  | { readonly kind: "died" }
  | { readonly kind: "hook"; readonly hook: string; readonly detail: string }
  | { readonly kind: "failed" };

const HOOKS = ["session_setup_script", "session_setup", "session_live", "pre_start"] as const;

/**
 * Reads a failed v1 `start`'s stderr: "already exists" (any case) → the name is taken;
 * "died during startup" or "exited during startup" → the program died; a line starting with
 * a hook name followed by `:` or ` failed` (`pre_start: exit 7`) → that hook failed.
 * Anything else is a plain failure.
 */
export function classifyV1StartFailure(stderr: string): V1StartFailure {
  if (/already exists/i.test(stderr)) return { kind: "exists" };
  if (/(died|exited) during startup/i.test(stderr)) return { kind: "died" };
  for (const raw of stderr.split("\n")) {
    const line = raw.trim();
    for (const hook of HOOKS) {
      if (line.startsWith(`${hook}:`) || line.startsWith(`${hook} failed`)) {
        const detail = line.slice(hook.length).replace(/^(:|\s+failed:?)\s*/, "");
        return { kind: "hook", hook, detail: detail || "failed" };
      }
    }
  }
  return { kind: "failed" };
}

/**
 * The detail of a {@link SessionDiedDuringStartupError} gc raises for a v1 script: what the
 * screen showed last (its final lines), or that nothing could be read.
 */
export function diedDuringStartupDetail(lastPeek: string | undefined): string {
  const shown = (lastPeek ?? "").replace(/\s+$/, "");
  if (shown === "") return "the program exited right after start (no screen output was captured)";
  const tail = shown.split("\n").slice(-20).join("\n");
  return `the program exited right after start; last screen:\n${tail}`;
}

/**
 * A metadata value as gc hands it to a v1 `set-meta`: the value followed by
 * {@link V1_META_FRAME}. The frame ends in a non-space, so trailing newlines and spaces survive
 * v1's output trimming, and an empty value is stored as the frame alone — not as "unset".
 */
export function frameMetaV1(value: string): string {
  return `${value}${V1_META_FRAME}`;
}

/**
 * The value from a v1 `get-meta` answer: trailing newlines (which the script may add) are
 * trimmed, then the frame is removed. Empty output is "unset" (`undefined`); a value that
 * gc did not frame (set by a person or another tool) is returned as printed.
 */
export function unframeMetaV1(stdout: string): string | undefined {
  const t = stdout.replace(/[\r\n]+$/, "");
  if (t === "") return undefined;
  return t.endsWith(V1_META_FRAME) ? t.slice(0, -V1_META_FRAME.length) : t;
}
