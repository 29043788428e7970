/**
 * Nudge delivery into a terminal, one implementation for every provider that has a screen
 * (tmux, subprocess; docker and k8s through the tmux channel): what the text becomes before
 * it is typed ({@link terminalText}) and the decision whether the program took it
 * ({@link deliverText}). Providers supply the terminal as a {@link DeliveryTerminal} (read the
 * screen, paste, press Enter); the decision is made here only.
 *
 * The rule: a nudge is delivered only when the screen shows the program took it — the input
 * line that showed the text changed (cleared, redrawn elsewhere) or the cursor left it, or the
 * program exited. A spinner or a clock elsewhere on screen is not evidence. When nothing shows
 * either way (a program that echoes nothing) the result is an error that says the text was
 * sent but not confirmed; `sent` on the error tells a caller not to send it again.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { NudgeNotDeliveredError } from "../../base/errors.js";
import { screenAwaitsChoice } from "./classify.js";

/** One look at a terminal: its visible rows (trailing blanks dropped) and the cursor. */
export interface TerminalState {
  readonly rows: readonly string[];
  readonly cursorX: number;
  readonly cursorY: number;
  /** Lines scrolled off the top so far, when the terminal knows (a settle check only). */
  readonly history?: number | undefined;
  /**
   * The same rows with their SGR escapes (screen/styled.ts), when the terminal keeps them:
   * what menus are read from, so one whose cursor is a highlighted row is seen.
   */
  readonly styled?: string | undefined;
}

/** The screen menus are read from: the styled rows when the terminal keeps them. */
function choiceScreen(st: TerminalState): string {
  return st.styled ?? st.rows.join("\n");
}

/** What {@link deliverText} needs from a session's terminal. */
export interface DeliveryTerminal {
  /** The screen now; `undefined` when the program is gone. */
  state(): Promise<TerminalState | undefined>;
  /**
   * Types `text` as one paste, without Enter: inside bracketed-paste markers when the
   * program enabled that mode (newlines then arrive inside the paste), else as typed keys.
   */
  paste(text: string): Promise<void>;
  /** Presses Enter (one CR, written on its own). */
  submit(): Promise<void>;
  /** Presses Backspace once (takes back a newline an Enter put into the input). */
  erase(): Promise<void>;
}

/** Timing of {@link deliverText}. */
export interface DeliveryTiming {
  /** How long one Enter may take to show on screen before it counts as swallowed. */
  readonly confirmMs: number;
  /** Screen poll interval. Default 25 ms. */
  readonly pollMs?: number | undefined;
  /** Enter presses at most while the text visibly stays on its input line. Default 3. */
  readonly enterAttempts?: number | undefined;
  /**
   * Text of several lines: `paste` (default) types it as one paste and submits it once;
   * `lines` types and submits each line on its own, each confirmed before the next (preset
   * `multiline`).
   */
  readonly multiline?: "paste" | "lines" | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** How the text was taken: `gone` = the program exited (it may have read it first). */
export type DeliveryOutcome = "delivered" | "gone";

/** The last characters of the text's last line gc looks for on screen. */
const TAIL_CHARS = 16;
/** Lines of the screen quoted in an error. */
const QUOTED_LINES = 6;

/**
 * The text a terminal program receives for nudge `text`. By default terminal control is
 * neutralised, so a nudge can only ever type characters: ESC becomes `␛` (so `ESC[201~`
 * cannot end a bracketed paste early and no escape sequence reaches the program), other C0
 * controls and DEL become their control pictures (`␃` for Ctrl-C), C1 controls become
 * U+FFFD, and CRLF or a lone CR becomes a newline (a CR would press Enter mid-text). Tab and
 * newline stay. `raw: true` passes the text unchanged (`gc nudge --raw`). Pure.
 */
export function terminalText(text: string, opts: { readonly raw?: boolean | undefined } = {}): string {
  if (opts.raw) return text;
  return text.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return "\u2421";
    return "\ufffd";
  });
}

/** The last line of `text` (trailing blanks dropped), at most {@link TAIL_CHARS} characters; "" when it cannot be matched on screen. Pure. */
export function textTail(text: string): string {
  const last =
    text
      .split(/\r?\n|\r/)
      .pop()
      ?.trimEnd() ?? "";
  if (last.includes("\t")) return ""; // tabs are drawn as spaces
  return [...last].slice(-TAIL_CHARS).join("");
}

/** Where the typed text shows: the lowest row holding its tail (the cursor's row first). Pure. */
export function inputRowOf(st: TerminalState, tail: string): number {
  if (tail === "") return -1;
  // A line wrapped at the screen's edge may split the tail: its last few characters then.
  for (const t of [tail, [...tail].slice(-6).join("")]) {
    if ((st.rows[st.cursorY] ?? "").includes(t)) return st.cursorY;
    for (let i = st.rows.length - 1; i >= 0; i--) if (st.rows[i]!.includes(t)) return i;
  }
  return -1;
}

/**
 * True when `after` shows that the program took what sat on `typed`'s input line: the
 * program's input line (row `row`, or the cursor's row when the text is not visible) holds
 * something else now (a scroll moves it too), or the cursor left it. Anything else changing
 * (a spinner, a clock, a status line, the scrollback of a program that clears its screen on
 * every frame) is not evidence. Pure.
 */
export function inputTaken(typed: TerminalState, after: TerminalState, row: number): boolean {
  if (after.cursorY !== typed.cursorY) return true;
  const r = row >= 0 ? row : typed.cursorY;
  if ((after.rows[r] ?? "") !== (typed.rows[r] ?? "")) return true;
  return row < 0 && after.cursorX !== typed.cursorX;
}

/** A cursor row's text left of the cursor, without box borders and indent: "" on a fresh input line. */
const BOX_EDGES = /[│┃|]/g;

/**
 * True when Enter opened a new line in the program's input instead of submitting it (Gemini
 * CLI takes an Enter that comes within 40 ms of a paste as a newline): the typed text's line
 * is still on screen, unchanged, and the cursor went from it to the start of the line right
 * under it, an empty input line with the rest of the program (a footer) still drawn below. A
 * line-reading program that took Enter shows nothing under its cursor's line. Pure.
 */
export function enterMadeNewline(
  typed: TerminalState,
  after: TerminalState,
  row: number,
  tail: string,
): boolean {
  if (row < 0 || typed.cursorY !== row) return false;
  const at = inputRowOf(after, tail);
  if (at < 0 || after.rows[at] !== typed.rows[row] || after.cursorY !== at + 1) return false;
  const fresh = (after.rows[after.cursorY] ?? "").slice(0, after.cursorX).replace(BOX_EDGES, "");
  return fresh.trim() === "" && after.rows.slice(after.cursorY + 1).some((r) => r.trim() !== "");
}

function sameState(a: TerminalState, b: TerminalState): boolean {
  return (
    a.cursorX === b.cursorX &&
    a.cursorY === b.cursorY &&
    (a.history ?? 0) === (b.history ?? 0) &&
    a.rows.length === b.rows.length &&
    a.rows.every((r, i) => r === b.rows[i])
  );
}

/** The last non-blank lines of a screen, quoted for an error message. Pure. */
export function quoteScreen(st: TerminalState): string {
  const lines = st.rows.map((r) => r.trim()).filter((r) => r !== "");
  if (lines.length === 0) return "the screen is blank";
  return `the screen shows: ${lines
    .slice(-QUOTED_LINES)
    .map((l) => JSON.stringify(l.length > 120 ? `${l.slice(0, 117)}...` : l))
    .join(" / ")}`;
}

/**
 * Types `text` into the terminal and confirms the program took it. Refuses before typing
 * when a menu or dialog waits for a choice (typing would answer it). After the paste, waits
 * for it to show and the screen to settle; then presses Enter and watches the input line:
 * taken ({@link inputTaken}, on two looks in a row when the text was visible) → delivered.
 * While the text visibly stays on its line (a program that swallows early Enters, as Codex
 * does while "Waiting for startup"), Enter is pressed again, at most `enterAttempts` times in
 * all, each after a window that doubles per attempt (`confirmMs`, then twice, …); a paste
 * still being drawn extends the wait before the first Enter (up to {@link MOVING_CAP}
 * windows); an Enter the program took as a newline in its input ({@link enterMadeNewline}) is
 * taken back with Backspace first. An Enter is never repeated when the text is not visible.
 * Resolves `gone` when the program exits meanwhile. With `multiline:
 * "lines"`, text of several lines is delivered line by line this way (an empty line: Enter
 * alone), each confirmed before the next.
 * @throws NudgeNotDeliveredError saying what is on screen; `sent` is false only when nothing
 * was typed.
 */
export async function deliverText(
  session: string,
  term: DeliveryTerminal,
  text: string,
  timing: DeliveryTiming,
): Promise<DeliveryOutcome> {
  if (timing.multiline !== "lines" || !text.includes("\n")) return deliverOne(session, term, text, timing);
  // One line at a time, each confirmed: a line that fails after others went is reported as
  // sent (the caller must not send the whole text again).
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    try {
      if ((await deliverOne(session, term, line, timing)) === "gone") return "gone";
    } catch (e) {
      if (i === 0 || !(e instanceof NudgeNotDeliveredError)) throw e;
      throw new NudgeNotDeliveredError(
        session,
        `line ${i + 1} of ${lines.length} (the lines before it were taken): ${e.message.replace(/^nudge to .*? not delivered: /s, "")}`,
        { cause: e, sent: true },
      );
    }
  }
  return "delivered";
}

/**
 * How many confirm windows the wait for a paste to settle may last while the screen keeps
 * changing (a long paste still being echoed on a busy machine).
 */
const MOVING_CAP = 4;

/** {@link deliverText} of one paste (an empty `text`: Enter alone, confirmed the same way). */
async function deliverOne(
  session: string,
  term: DeliveryTerminal,
  text: string,
  timing: DeliveryTiming,
): Promise<DeliveryOutcome> {
  const { signal } = timing;
  const pollMs = timing.pollMs ?? 25;
  const fail = (detail: string, sent: boolean) => new NudgeNotDeliveredError(session, detail, { sent });
  const before = await term.state();
  if (!before) return "gone";
  if (screenAwaitsChoice(choiceScreen(before))) {
    throw fail(
      `a menu or dialog is waiting for a choice; typing would answer it (${quoteScreen(before)})`,
      false,
    );
  }
  const tail = textTail(text);
  if (text !== "") await term.paste(text);
  // The paste shows once the screen changed; it has settled once it stops changing (or,
  // when its tail shows, as soon as it is there and stable for two polls).
  // A paste that is still being drawn (a program echoing a long text on a busy machine)
  // keeps the wait going, up to a cap.
  let typed = before;
  let changed = false;
  let stableSince = Date.now();
  const settleCap = Date.now() + MOVING_CAP * timing.confirmMs;
  while (text !== "" && Date.now() < settleCap && Date.now() - stableSince < 2 * timing.confirmMs) {
    await sleep(pollMs, undefined, { signal });
    const st = await term.state();
    if (!st) return "gone";
    if (!sameState(st, typed)) {
      changed = true;
      typed = st;
      stableSince = Date.now();
    } else if (
      changed &&
      Date.now() - stableSince >= 2 * pollMs &&
      (tail === "" || inputRowOf(st, tail) >= 0)
    )
      break;
  }
  const row = inputRowOf(typed, tail);
  const visible = row >= 0 || (tail === "" && changed);
  if (screenAwaitsChoice(choiceScreen(typed)) && !screenAwaitsChoice(choiceScreen(before))) {
    // The text opened a menu (a `/` command palette): Enter would choose from it.
    throw fail(`the text opened a menu; Enter was not pressed (${quoteScreen(typed)})`, true);
  }
  const attempts = visible ? (timing.enterAttempts ?? 3) : 1;
  let last = typed;
  let newlines = 0;
  for (let i = 0; i < attempts; i++) {
    await term.submit();
    // Each attempt's window doubles: a program that takes a while to act on its first Enter
    // (opencode creating its session on a busy machine) is not hurried with a second one.
    const by = Date.now() + timing.confirmMs * 2 ** i;
    let newline = false;
    // Taken only when two looks in a row say so: a look can catch a frame half drawn (a
    // full-screen program redraws all its rows at once, the terminal may show part of it),
    // whose rows differ from the typed ones whatever the program did with Enter.
    let taken = false;
    while (Date.now() < by) {
      await sleep(pollMs, undefined, { signal });
      const st = await term.state();
      if (!st) return "gone";
      last = st;
      if (visible && enterMadeNewline(typed, st, row, tail)) {
        newline = true;
        break;
      }
      const now = inputTaken(typed, st, row);
      if (now && (taken || !visible)) return "delivered";
      taken = now;
    }
    if (taken) return "delivered";
    if (!visible) break;
    if (!newline) continue;
    // The Enter became a newline in the input: take it back, and once the text's line has
    // the cursor again (the input as typed), press Enter again.
    newlines++;
    await term.erase();
    const back = Date.now() + timing.confirmMs;
    while (Date.now() < back) {
      await sleep(pollMs, undefined, { signal });
      const st = await term.state();
      if (!st) return "gone";
      last = st;
      if (inputRowOf(st, tail) === st.cursorY && !enterMadeNewline(typed, st, row, tail)) break;
    }
  }
  if (newlines > 0 && enterMadeNewline(typed, last, row, tail)) {
    throw fail(
      `the program took each of ${attempts} Enter presses as a new line in its input, not a submission (${quoteScreen(last)})`,
      true,
    );
  }
  if (!visible) {
    throw fail(
      `the text was sent, but the screen shows no sign the program took it (it showed neither the text nor a change after Enter; ${quoteScreen(last)})`,
      true,
    );
  }
  throw fail(
    `the text is still on the input line after ${attempts} Enter presses (${quoteScreen(last)})`,
    true,
  );
}
