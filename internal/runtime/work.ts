/**
 * What a session's agent is doing — its *work*, beside its lifecycle state: `working`,
 * `idle`, `needs-input`, `error` or `unknown`. Classified from one {@link SessionLook} (the
 * screen and interaction a pass already reads, or an ACP session's turn state) by
 * {@link classifyLook}, a pure function; the screen rules are the ones the idle checks use
 * (dialogs.ts: busy markers, menus), plus the agents' error lines ({@link ERROR_MARKERS}).
 */
import { screenAwaitsChoice, screenLooksBusy } from "./dialogs.js";
import type { SessionLook } from "./provider.js";

/** The work states, in the order an operator's "needs you" view sorts them. */
export const WORK_STATES = ["needs-input", "error", "working", "idle", "unknown"] as const;
/** What a session's agent is doing. */
export type WorkState = (typeof WORK_STATES)[number];

/** A classification: the state and, for `needs-input` and `error`, what the agent says. */
export interface ObservedWork {
  readonly state: WorkState;
  /** The question (`needs-input`) or the agent's own error line (`error`). */
  readonly message?: string | undefined;
}

/**
 * Lines agents show while a model request fails (the API answered 429/5xx or not at all).
 * Read only from the bottom of the screen ({@link ERROR_WINDOW_LINES}): a transcript that
 * merely mentions an error scrolls out of it. Claude Code 2.1:
 * `API error · retrying in 1s · attempt 2/10` and, when it gives up, `API Error: 529 …`.
 */
export const ERROR_MARKERS: readonly RegExp[] = [
  /\bAPI error\b/i,
  /\bretrying in \d+(?:\.\d+)?\s*(?:ms|s|m)\b.*\battempt \d+/i,
  /\b(?:429|500|502|503|529)\b.*\b(?:too many requests|overloaded|rate limit(?:ed)?|service unavailable)\b/i,
];

/** Non-blank lines at the bottom of the screen that {@link ERROR_MARKERS} are read from. */
export const ERROR_WINDOW_LINES = 6;

/**
 * Without a busy marker or a prompt on the last line, output this recent means working
 * (a program streaming text without a marker); older means idle.
 */
export const WORK_QUIET_MS = 2_000;

/** What {@link classifyLook} needs besides the look. */
export interface ClassifyOptions {
  /** The session's declared ready prompt (`>>> `): a last line that starts with it is idle. */
  readonly readyPromptPrefix?: string | undefined;
  /** Now, epoch ms (injected for tests). */
  readonly now: number;
}

/** The screen's lines without trailing blanks (NBSP as space). Pure. */
function lines(screen: string): string[] {
  const out = screen
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((l) => l.replace(/\u00a0/g, " ").trimEnd());
  while (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out;
}

/** True when `look`'s screen shows an agent's busy marker (dialogs.ts `screenLooksBusy`). Pure. */
export function lookShowsBusyMarker(look: SessionLook): boolean {
  return look.screen !== undefined && screenLooksBusy(look.screen);
}

/** The last `n` non-blank lines of `screen`, trimmed of trailing blanks, oldest first. Pure. */
export function screenTail(screen: string, n: number): string[] {
  return lines(screen)
    .filter((l) => l.trim() !== "")
    .slice(-n);
}

/** The agent's error line at the bottom of `screen` (box borders trimmed), or `undefined`. Pure. */
export function screenErrorLine(screen: string): string | undefined {
  const tail = screenTail(screen, ERROR_WINDOW_LINES);
  for (let i = tail.length - 1; i >= 0; i--) {
    const l = tail[i]!;
    if (ERROR_MARKERS.some((re) => re.test(l))) return l.replace(/^[\s│|]+|[\s│|]+$/g, "");
  }
  return undefined;
}

/**
 * Classifies one look, first rule that applies:
 * 1. a protocol turn state (ACP): an open interaction → `needs-input`; the last turn's error →
 *    `error`; a running turn → `working`; else `idle`;
 * 2. an interaction (approval prompt, dialog, menu) → `needs-input` with its question;
 * 3. no screen → `unknown`;
 * 4. an error line at the bottom ({@link screenErrorLine}) → `error` with that line (an agent
 *    retrying a failed request shows it under its busy marker: the error wins);
 * 5. an agent's busy marker (dialogs.ts `screenLooksBusy`) → `working`;
 * 6. a menu or dialog gc reads no interaction from (`screenAwaitsChoice`) → `needs-input`;
 * 7. the last line is the declared ready prompt (the look's, else `opts`'), bare → `idle`;
 *    the prompt with text after it → `working` (a command runs, perhaps quietly);
 * 8. output within {@link WORK_QUIET_MS} → `working`, else `idle`.
 * Pure.
 */
export function classifyLook(look: SessionLook, opts: ClassifyOptions): ObservedWork {
  const question = look.interaction
    ? look.interaction.prompt || `${look.interaction.kind} (request ${look.interaction.requestId})`
    : undefined;
  if (look.turn) {
    if (question !== undefined) return { state: "needs-input", message: question };
    if (look.turn.error) return { state: "error", message: look.turn.error };
    return { state: look.turn.busy ? "working" : "idle" };
  }
  if (question !== undefined) return { state: "needs-input", message: question };
  if (look.screen === undefined) return { state: "unknown" };
  const err = screenErrorLine(look.screen);
  if (err !== undefined) return { state: "error", message: err };
  if (screenLooksBusy(look.screen)) return { state: "working" };
  if (screenAwaitsChoice(look.screen)) return { state: "needs-input", message: "a menu is on screen" };
  const prompt = (look.readyPromptPrefix ?? opts.readyPromptPrefix)?.trimEnd();
  const last = lines(look.screen).at(-1) ?? "";
  if (prompt && last.startsWith(prompt)) return { state: last === prompt ? "idle" : "working" };
  const at = look.lastActivity?.getTime();
  return at !== undefined && opts.now - at < WORK_QUIET_MS ? { state: "working" } : { state: "idle" };
}
