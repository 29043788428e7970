/**
 * What a session's agent is doing — its *work*, beside its lifecycle state: `working`,
 * `idle`, `needs-input`, `error` or `unknown`. Classified from one {@link SessionLook} (the
 * screen and interaction a pass already reads, or an ACP session's turn state) by
 * {@link classifyLook}, a pure function; the screen rules are the ones the idle checks use
 * (classify.ts: busy markers, menus), plus the agents' error lines ({@link ERROR_MARKERS}),
 * and the session's own markers from its preset ({@link ScreenRules}).
 */
import { markerRegExp, type ScreenRules, screenShowsMarker } from "../agent-screens.js";
import type { SessionLook } from "../provider.js";
import { screenAwaitsChoice, screenLooksBusy } from "./classify.js";

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
  /**
   * The session's own screen knowledge (its preset's ready prompt, ready, busy and error
   * markers; a session's `StartConfig` is one). Its `readyPromptPrefix` wins over the option's.
   */
  readonly rules?: ScreenRules | undefined;
  /** Now, epoch ms (injected for tests). */
  readonly now: number;
  /**
   * Classifies the screen ({@link classifyScreen}, the default): a caller that looks at the
   * same sessions pass after pass gives a {@link ScreenWorkMemo}'s, so an unchanged screen is
   * not read again.
   */
  readonly classifyScreen?: typeof classifyScreen | undefined;
}

/** The last screen split by {@link lines}: one look's screen is split once, not per rule. */
let lastLines: { readonly screen: string; readonly lines: readonly string[] } | undefined;

/** The screen's lines without trailing blanks (NBSP as space). Pure (the result is shared: never change it). */
function lines(screen: string): readonly string[] {
  if (lastLines?.screen === screen) return lastLines.lines;
  const out = screen
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((l) => l.replace(/\u00a0/g, " ").trimEnd());
  while (out.length > 0 && out[out.length - 1] === "") out.pop();
  lastLines = { screen, lines: out };
  return out;
}

/** True when `look`'s screen shows an agent's busy marker (dialogs.ts `screenLooksBusy`). Pure. */
export function lookShowsBusyMarker(look: SessionLook, rules: ScreenRules = {}): boolean {
  return look.screen !== undefined && screenShowsBusy(look.screen, rules);
}

/** An agent's builtin busy marker (screen/classify.ts) or one of the session's own. Pure. */
function screenShowsBusy(screen: string, rules: ScreenRules): boolean {
  return screenLooksBusy(screen) || screenShowsMarker(screen, rules.busyMarkers);
}

/** The last `n` non-blank lines of `screen`, trimmed of trailing blanks, oldest first. Pure. */
export function screenTail(screen: string, n: number): string[] {
  return lines(screen)
    .filter((l) => l.trim() !== "")
    .slice(-n);
}

/**
 * The agent's error line at the bottom of `screen` (box borders trimmed), or `undefined`:
 * the lowest of the last {@link ERROR_WINDOW_LINES} non-blank lines that shows one of
 * {@link ERROR_MARKERS} or of `extra` (a preset's `error_markers`, regular expression
 * sources, case-insensitive). Pure.
 */
export function screenErrorLine(screen: string, extra: readonly string[] = []): string | undefined {
  const markers = [...ERROR_MARKERS, ...extra.map(markerRegExp)];
  const tail = screenTail(screen, ERROR_WINDOW_LINES);
  for (let i = tail.length - 1; i >= 0; i--) {
    const l = tail[i]!;
    if (markers.some((re) => re.test(l))) return l.replace(/^[\s│|]+|[\s│|]+$/g, "");
  }
  return undefined;
}

/**
 * Classifies one look, first rule that applies:
 * 1. a protocol turn state (ACP): an open interaction → `needs-input`; the last turn's error →
 *    `error`; a running turn → `working`; else `idle`;
 * 2. an interaction (approval prompt, dialog, menu) → `needs-input` with its question;
 * 3. no screen → `unknown`;
 * 4. an error line at the bottom ({@link screenErrorLine}, with the session's error markers)
 *    → `error` with that line (an agent retrying a failed request shows it under its busy
 *    marker: the error wins);
 * 5. an agent's busy marker (screen/classify.ts `screenLooksBusy`) or one of the session's
 *    busy markers → `working`;
 * 6. a menu or dialog gc reads no interaction from (`screenAwaitsChoice`) → `needs-input`;
 * 7. one of the session's ready markers → `idle`;
 * 8. the last line is the declared ready prompt (the rules', else the look's, else
 *    `opts.readyPromptPrefix`), bare → `idle`; the prompt with text after it → `working` (a
 *    command runs, perhaps quietly);
 * 9. output within {@link WORK_QUIET_MS} → `working`, else `idle`.
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
  const rules = opts.rules ?? {};
  const prompt = rules.readyPromptPrefix ?? look.readyPromptPrefix ?? opts.readyPromptPrefix;
  const byScreen = (opts.classifyScreen ?? classifyScreen)(look.screen, rules, prompt);
  if (byScreen !== undefined) return byScreen;
  const at = look.lastActivity?.getTime();
  return at !== undefined && opts.now - at < WORK_QUIET_MS ? { state: "working" } : { state: "idle" };
}

/**
 * What the screen alone says, rules 4–8 of {@link classifyLook}: an error line, a busy
 * marker, a menu, a ready marker, or the ready prompt `readyPrompt` on the last line (the
 * session's `rules` add their markers). `undefined` when it says none of these (then the
 * time since the last output decides). Pure.
 */
export function classifyScreen(
  screen: string,
  rules: ScreenRules,
  readyPrompt: string | undefined,
): ObservedWork | undefined {
  const err = screenErrorLine(screen, rules.errorMarkers);
  if (err !== undefined) return { state: "error", message: err };
  if (screenShowsBusy(screen, rules)) return { state: "working" };
  if (screenAwaitsChoice(screen)) return { state: "needs-input", message: "a menu is on screen" };
  if (screenShowsMarker(screen, rules.readyMarkers)) return { state: "idle" };
  const prompt = readyPrompt?.trimEnd();
  const last = lines(screen).at(-1) ?? "";
  if (prompt && last.startsWith(prompt)) return { state: last === prompt ? "idle" : "working" };
  return undefined;
}

/**
 * {@link classifyScreen} remembered per session: a session whose screen text, rules and prompt
 * are the ones it was last classified with (a quiet agent, read again pass after pass) gets the
 * same answer without its screen being read again. Keeps one entry per session.
 */
export class ScreenWorkMemo {
  private readonly last = new Map<
    string,
    { screen: string; rules: ScreenRules; prompt: string | undefined; work: ObservedWork | undefined }
  >();

  /**
   * The classifier for `session`, to give {@link classifyLook} as `classifyScreen`: the same
   * screen, prompt and rules (marker lists compared by identity: a city's config keeps them
   * from pass to pass) get the answer remembered.
   */
  forSession(session: string): typeof classifyScreen {
    return (screen, rules, prompt) => {
      const hit = this.last.get(session);
      if (hit && hit.screen === screen && hit.prompt === prompt && sameRules(hit.rules, rules))
        return hit.work;
      const work = classifyScreen(screen, rules, prompt);
      this.last.set(session, { screen, rules, prompt, work });
      return work;
    };
  }

  /** Forgets every session but `keep` (the ones still looked at). */
  retain(keep: ReadonlySet<string>): void {
    for (const name of this.last.keys()) if (!keep.has(name)) this.last.delete(name);
  }
}

/** Whether `a` and `b` hold the same markers (lists by identity) and prompt. Pure. */
function sameRules(a: ScreenRules, b: ScreenRules): boolean {
  return (
    a.readyPromptPrefix === b.readyPromptPrefix &&
    a.readyMarkers === b.readyMarkers &&
    a.busyMarkers === b.busyMarkers &&
    a.errorMarkers === b.errorMarkers
  );
}
