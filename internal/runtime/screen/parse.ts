/**
 * The pure screen parser: menus (numbered, or a list with a cursor marker or a highlighted
 * row) and catalogued dialogs read from a screen's text, with which option the cursor is on,
 * and whether a frame is live or a leftover. A screen may be a styled capture (SGR escapes
 * kept, styled.ts): its plain text is parsed, and a row drawn highlighted is the cursor of a
 * list without a marker glyph. No I/O; the classifier (classify.ts) and the key driver
 * (keys.ts) build on it.
 */
import { DIALOG_CATALOGUE, type DialogSpec } from "./catalogue.js";
import { type HighlightedRow, readScreen } from "./styled.js";

/** One option as rendered. */
export interface MenuOption {
  /** The number shown (`2` for `2. No, exit`), or the option's position for unnumbered lists. */
  readonly number: number;
  readonly label: string;
  /** The cursor marker is on this option. */
  readonly selected: boolean;
}

/** A menu found on screen. */
export interface ParsedMenu {
  readonly options: readonly MenuOption[];
  /** Index into `options` of the option under the cursor; -1 when not exactly one has it. */
  readonly selected: number;
  /** The question above the options (its non-empty lines, at most six), not a logo above it. */
  readonly context: readonly string[];
}

/** Cursor markers: Claude `❯`, Codex `›`/`>`, Gemini `●`, others. */
const CURSOR_MARKS = "❯›>▶►→➜●";

const OPTION_RE = new RegExp(`^(?:([${CURSOR_MARKS}])\\s*)?(\\d{1,2})[.)]\\s+(\\S.*?)\\s*$`, "u");

/** Text led by a cursor or prompt glyph and a blank. */
const PROMPT_LED_RE = new RegExp(`^[${CURSOR_MARKS}](?:\\s|$)`, "u");

/** An unnumbered option under the cursor: marker, blanks, label. */
const MARKED_RE = new RegExp(`^(\\s*)([${CURSOR_MARKS}])(\\s+)(\\S.*?)\\s*$`, "u");

const BORDER_RE = /^[\s│┃║╎┆|]+|[\s│┃║╎┆|]+$/gu;

const BOX_SIDE_RE = /[│┃║]/gu;

/** A line that ends a dialog's block: its box's bottom edge (not a nested box's) or a rule. */
const BLOCK_END_RE = /^\s*[╰└─━═]{3,}/u;

const RULE_RE = /^[─━═╭╮╰╯┌┐└┘\s-]+$/u;

/** NBSP → space, box borders and surrounding blanks removed. Pure. */
export function normalizeLine(line: string): string {
  return line.replace(/\u00a0/g, " ").replace(BORDER_RE, "");
}

/** Box sides → blanks, keeping every column where it is (for reading indentation). */
function columnsOf(line: string): string {
  return line
    .replace(/\u00a0/g, " ")
    .replace(BOX_SIDE_RE, " ")
    .trimEnd();
}

function numberedRuns(
  lines: readonly string[],
  from: number,
  to: number,
): { line: number; opt: MenuOption }[][] {
  type Hit = { line: number; opt: MenuOption };
  const runs: Hit[][] = [];
  let run: Hit[] = [];
  for (let i = from; i < to; i++) {
    const m = OPTION_RE.exec(normalizeLine(lines[i]!));
    if (!m) continue;
    const opt: MenuOption = { number: Number(m[2]), label: m[3]!, selected: m[1] !== undefined };
    const prev = run[run.length - 1];
    if (prev && opt.number === prev.opt.number + 1 && i - prev.line <= 3) run.push({ line: i, opt });
    else {
      if (run.length >= 2) runs.push(run);
      run = opt.number === 1 ? [{ line: i, opt }] : [];
    }
  }
  if (run.length >= 2) runs.push(run);
  return runs;
}

/**
 * An unnumbered option list in `lines[from, to)`: the first line carrying a cursor marker,
 * plus the lines right above and below it whose text starts in the same column with blanks
 * where the marker would be (a blank line ends the list). Returns the first line index too.
 */
function markedList(
  lines: readonly string[],
  from: number,
  to: number,
): { first: number; options: MenuOption[] } | undefined {
  for (let i = from; i < to; i++) {
    const row = columnsOf(lines[i]!);
    const m = MARKED_RE.exec(row);
    if (!m) continue;
    const col = m[1]!.length + m[2]!.length + m[3]!.length;
    const sibling = (j: number): string | undefined => {
      if (j < from || j >= to) return undefined;
      const r = columnsOf(lines[j]!);
      if (r.length <= col || r.slice(0, col).trim() !== "" || r[col] === " ") return undefined;
      return r.slice(col).trim();
    };
    let first = i;
    while (sibling(first - 1) !== undefined) first--;
    let last = i;
    while (sibling(last + 1) !== undefined) last++;
    if (last === first) continue;
    const options: MenuOption[] = [];
    for (let j = first; j <= last; j++) {
      const label = j === i ? m[4]! : sibling(j)!;
      options.push({ number: j - first + 1, label, selected: j === i });
    }
    return { first, options };
  }
  return undefined;
}

/**
 * An unnumbered option list in `lines[from, to)` whose cursor is a highlighted row (no marker
 * glyph): the first highlighted row in range, plus the lines right above and below it whose
 * text starts in the column its highlighted text starts in (a blank line ends the list).
 */
function highlightedList(
  lines: readonly string[],
  from: number,
  to: number,
  highlights: readonly HighlightedRow[],
): { first: number; options: MenuOption[] } | undefined {
  for (const h of highlights) {
    // A highlighted line led by a prompt glyph is an input line (Codex's composer, Claude's
    // echoed prompt drawn on a background colour), not a list's cursor: a list whose cursor
    // is a glyph is read by markedList.
    if (h.row < from || h.row >= to || PROMPT_LED_RE.test(h.text)) continue;
    const col = h.start;
    const sibling = (j: number): string | undefined => {
      if (j < from || j >= to) return undefined;
      const r = columnsOf(lines[j]!);
      if (r.length <= col || r.slice(0, col).trim() !== "" || r[col] === " ") return undefined;
      return r.slice(col).trim();
    };
    let first = h.row;
    while (sibling(first - 1) !== undefined) first--;
    let last = h.row;
    while (sibling(last + 1) !== undefined) last++;
    if (last === first) continue;
    const options: MenuOption[] = [];
    for (let j = first; j <= last; j++) {
      const label = j === h.row ? h.text : sibling(j)!;
      options.push({ number: j - first + 1, label, selected: j === h.row });
    }
    return { first, options };
  }
  return undefined;
}

/**
 * The options of a numbered run, with the cursor read from a highlighted row when no option
 * carries a marker glyph.
 */
function runOptions(
  run: readonly { line: number; opt: MenuOption }[],
  highlights: readonly HighlightedRow[],
): MenuOption[] {
  const options = run.map((h) => h.opt);
  if (options.some((o) => o.selected) || highlights.length === 0) return options;
  const lit = new Set(highlights.map((h) => h.row));
  return run.map((h) => (lit.has(h.line) ? { ...h.opt, selected: true } : h.opt));
}

function menuOf(options: readonly MenuOption[], context: readonly string[]): ParsedMenu {
  const marked = options.flatMap((o, i) => (o.selected ? [i] : []));
  return { options, selected: marked.length === 1 ? marked[0]! : -1, context };
}

/** The paragraph right above line `first` (blank lines just above skipped), at most `max` lines. */
function paragraphAbove(lines: readonly string[], first: number, max: number): string[] {
  const out: string[] = [];
  let i = first - 1;
  while (i >= 0 && normalizeLine(lines[i]!).trim() === "") i--;
  for (; i >= 0 && out.length < max; i--) {
    const l = normalizeLine(lines[i]!).trim();
    if (l === "" || RULE_RE.test(l)) break;
    out.unshift(l);
  }
  return out;
}

/**
 * Finds the last numbered menu (options `1..n`, n ≥ 2, at most two continuation lines
 * between options) on `screen` that is not a leftover frame (other text drawn below its
 * block) and reads which option carries the cursor marker. Its
 * context is the paragraph right above the options (the question, not a logo above it).
 * Without one, an unnumbered list with a cursor (`❯ OpenAI` over `  Anthropic`, as qwen's
 * and cline's menus are drawn) is a menu too when it is the last thing on screen (only key
 * hints below it) and its labels are short: a program showing one waits for a choice
 * whether it numbers its options or not. On a styled capture, a row drawn highlighted
 * (reverse video or a background colour, styled.ts) is the cursor where no option carries a
 * marker glyph: a numbered option, or an unnumbered list of rows starting in its column. Pure.
 */
export function parseMenu(screen: string): ParsedMenu | undefined {
  const { text, highlights } = readScreen(screen);
  const lines = text.split("\n");
  const best = numberedRuns(lines, 0, lines.length)
    .filter((run) => !isStale(lines, blockEndFrom(lines, run[run.length - 1]!.line)))
    .pop();
  if (best) {
    return menuOf(runOptions(best, highlights), paragraphAbove(lines, best[0]!.line, 3));
  }
  const marked = markedList(lines, 0, lines.length) ?? highlightedList(lines, 0, lines.length, highlights);
  if (
    !marked ||
    marked.options.some((o) => o.label.length > MARKED_LABEL_MAX) ||
    isStale(lines, marked.first + marked.options.length - 1)
  )
    return undefined;
  return menuOf(marked.options, paragraphAbove(lines, marked.first, 3));
}

/** Longest label of an unnumbered menu found outside a catalogued dialog. */
const MARKED_LABEL_MAX = 60;

/** Where a catalogued dialog's question is: the lines it spans and the end of its block. */
interface Located {
  readonly start: number;
  readonly end: number;
  readonly blockEnd: number;
}

/** The screen's lines normalized and trimmed, joined by one space, with each line's offset in it. */
interface FlatScreen {
  readonly flat: string;
  readonly offsets: readonly number[];
}

function flatten(lines: readonly string[]): FlatScreen {
  const offsets: number[] = [];
  let flat = "";
  for (const l of lines) {
    offsets.push(flat.length);
    flat += `${normalizeLine(l).trim()} `;
  }
  return { flat, offsets };
}

/** Where the last match of `question` is on screen (`screen`: {@link flatten} of `lines`). */
function locateQuestion(lines: readonly string[], screen: FlatScreen, question: RegExp): Located | undefined {
  const { flat, offsets } = screen;
  const re = new RegExp(
    question.source,
    question.flags.includes("g") ? question.flags : `${question.flags}g`,
  );
  let last: RegExpExecArray | undefined;
  for (let m = re.exec(flat); m; m = re.exec(flat)) {
    last = m;
    if (m[0] === "") re.lastIndex++;
  }
  if (!last) return undefined;
  const lineAt = (off: number) => {
    let i = 0;
    while (i + 1 < offsets.length && offsets[i + 1]! <= off) i++;
    return i;
  };
  const start = lineAt(last.index);
  const end = lineAt(last.index + Math.max(0, last[0].length - 1));
  return { start, end, blockEnd: blockEndFrom(lines, end) };
}

/** The line ending the block that holds line `from`: the next box bottom or rule (at most 30 lines on). */
function blockEndFrom(lines: readonly string[], from: number): number {
  let i = from + 1;
  while (i < lines.length && i - from <= 30 && !BLOCK_END_RE.test(lines[i]!)) i++;
  return i;
}

/**
 * The last line a dialog or menu drew: its block's closing edge (box bottom or rule) when it
 * has one, else its last option's line (`lastOption`, plus that option's continuation
 * lines); without options, the block's end as found. A frame without a closing edge has no
 * other bound: the 30-line window of {@link blockEndFrom} would take in whatever the program
 * drew after it (a screen read with its scrollback keeps the answered frame above the ready
 * prompt). Pure.
 */
function drawnEnd(lines: readonly string[], blockEnd: number, lastOption: number | undefined): number {
  if ((blockEnd < lines.length && BLOCK_END_RE.test(lines[blockEnd]!)) || lastOption === undefined)
    return blockEnd;
  return optionEnd(lines, lastOption);
}

/** The option at `line` with its continuation lines: at most two, right below, indented deeper. */
function optionEnd(lines: readonly string[], line: number): number {
  const indent = (l: string) => columnsOf(l).search(/\S/);
  const own = indent(lines[line]!);
  let i = line;
  while (i + 1 < lines.length && i - line < 2 && indent(lines[i + 1]!) > own) i++;
  return i;
}

/**
 * The menu belonging to the question at `loc`: a numbered run or a marked list in the
 * question's block, whichever comes first; its context is the question's lines, `last` the
 * line of its last option. Pure.
 */
function menuBelow(
  lines: readonly string[],
  loc: Located,
  highlights: readonly HighlightedRow[],
): { menu: ParsedMenu; last: number } | undefined {
  const from = loc.end + 1;
  const numbered = numberedRuns(lines, from, loc.blockEnd)[0];
  const marked =
    markedList(lines, from, loc.blockEnd) ?? highlightedList(lines, from, loc.blockEnd, highlights);
  const first = Math.min(numbered?.[0]?.line ?? Infinity, marked?.first ?? Infinity);
  if (first === Infinity) return undefined;
  const context = lines
    .slice(loc.start, first)
    .map((l) => normalizeLine(l).trim())
    .filter((l) => l !== "" && !RULE_RE.test(l))
    .slice(0, 6);
  if (numbered && numbered[0]!.line === first)
    return {
      menu: menuOf(runOptions(numbered, highlights), context),
      last: numbered[numbered.length - 1]!.line,
    };
  return { menu: menuOf(marked!.options, context), last: marked!.first + marked!.options.length - 1 };
}

/**
 * The options of a `row` dialog ({@link DialogSpec.row}) in its block below the question:
 * the first line whose text, split where two or more blanks are, starts with labels of the
 * spec's options (at least two); its leading run of such labels (key hints after them are
 * left out). The cursor is read on the first option for a `cursorOnFirst` dialog, else
 * nowhere. Pure.
 */
function rowBelow(
  lines: readonly string[],
  loc: Located,
  spec: DialogSpec,
): { menu: ParsedMenu; last: number } | undefined {
  const known = (label: string) => spec.options.some((o) => o.label.test(label));
  for (let i = loc.end + 1; i < loc.blockEnd && i < lines.length; i++) {
    const labels: string[] = [];
    for (const part of normalizeLine(lines[i]!)
      .trim()
      .split(/\s{2,}/)) {
      if (!known(part)) break;
      labels.push(part);
    }
    if (labels.length < 2) continue;
    const context = lines
      .slice(loc.start, i)
      .map((l) => normalizeLine(l).trim())
      .filter((l) => l !== "" && !RULE_RE.test(l))
      .slice(0, 6);
    const options = labels.map((label, n) => ({
      number: n + 1,
      label,
      selected: spec.cursorOnFirst === true && n === 0,
    }));
    return { menu: menuOf(options, context), last: i };
  }
  return undefined;
}

/** Result of {@link matchDialog}. `menu` is empty (no options) for an `input` dialog. */
export type DialogMatch =
  | {
      readonly status: "match";
      readonly spec: DialogSpec;
      readonly menu: ParsedMenu;
      readonly roles: readonly string[];
    }
  | {
      readonly status: "unfamiliar";
      readonly spec: DialogSpec;
      readonly reason: string;
      readonly menu?: ParsedMenu | undefined;
    };

/**
 * The first catalogued dialog of the given kinds whose question (and extra patterns) are on
 * `screen` (plain or styled, see {@link parseMenu}), with its options read from the question's block. Options no spec entry knows
 * get role `other` and are tolerated; `match` only when every `required` role is offered,
 * no option is ambiguous, no role repeats and exactly one option carries the cursor.
 * Otherwise `unfamiliar` with the reason. `undefined` when no catalogued dialog is on
 * screen. Pure.
 */
export function matchDialog(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
  kinds: readonly DialogSpec["kind"][] = ["startup", "approval", "operator"],
  opts: { readonly textBelow?: boolean } = {},
): DialogMatch | undefined {
  const { text, highlights } = readScreen(screen);
  const lines = text.split("\n");
  const flatScreen = flatten(lines);
  // Every question needs some text: a blank screen shows no dialog (an idle pane's usual face).
  if (flatScreen.flat.trim() === "") return undefined;
  const flat = flatScreen.flat.slice(0, -1);
  // The dialog on screen is the lowest one: a dialog answered earlier may still be drawn
  // above a newer one (or above the program's input area) and must never be answered again.
  let best: { spec: DialogSpec; loc: Located; below: ReturnType<typeof menuBelow> } | undefined;
  for (const spec of catalogue) {
    if (!(spec.detect ?? []).every((re) => re.test(flat))) continue;
    const loc = locateQuestion(lines, flatScreen, spec.question);
    if (!loc) continue;
    const below = spec.row ? rowBelow(lines, loc, spec) : menuBelow(lines, loc, highlights);
    if (
      spec.kind !== "approval" &&
      !opts.textBelow &&
      isStale(lines, drawnEnd(lines, loc.blockEnd, below?.last))
    )
      continue;
    if (!best || loc.start > best.loc.start) best = { spec, loc, below };
  }
  if (!best || !kinds.includes(best.spec.kind)) return undefined;
  const { spec, loc, below } = best;
  if (spec.input) {
    return {
      status: "match",
      spec,
      menu: { options: [], selected: -1, context: questionLines(lines, loc) },
      roles: [],
    };
  }
  return classify(spec, below?.menu);
}

/**
 * A startup or sign-in dialog is drawn at the bottom of the screen, followed at most by key
 * hints ("Enter to confirm · Esc to cancel"); any other text below the last line it drew
 * ({@link drawnEnd}) means the program has moved on and the dialog is a leftover frame
 * (Gemini CLI restarts after its trust dialog and draws below the old box; a program that
 * clears its screen leaves the answered frame in the scrollback an exec script's `peek`
 * returns, above its ready prompt), which must never be answered again.
 */
function isStale(lines: readonly string[], drawn: number): boolean {
  return lines.slice(drawn + 1).some((l) => {
    const t = normalizeLine(l).trim();
    return t !== "" && !RULE_RE.test(t) && !KEY_HINT_RE.test(t);
  });
}

const KEY_HINT_RE = /^\(?(?:Press |Use )?(?:enter|esc|↑|↓|tab|ctrl)\b/i;

function questionLines(lines: readonly string[], loc: Located): string[] {
  return lines
    .slice(loc.start, loc.end + 1)
    .map((l) => normalizeLine(l).trim())
    .filter((l) => l !== "");
}

function classify(spec: DialogSpec, menu: ParsedMenu | undefined): DialogMatch {
  if (!menu) return { status: "unfamiliar", spec, reason: "no options under the question" };
  const roles: string[] = [];
  for (const o of menu.options) {
    const hits = spec.options.filter((os) => os.label.test(o.label));
    if (hits.length > 1) {
      return { status: "unfamiliar", spec, menu, reason: `ambiguous option ${JSON.stringify(o.label)}` };
    }
    roles.push(hits[0]?.role ?? "other");
  }
  const known = roles.filter((r) => r !== "other");
  if (new Set(known).size !== known.length) {
    return { status: "unfamiliar", spec, menu, reason: "two options with the same meaning" };
  }
  const required = spec.required ?? (spec.safeRole ? [spec.safeRole] : []);
  const missing = required.filter((r) => !roles.includes(r));
  if (missing.length > 0) {
    return {
      status: "unfamiliar",
      spec,
      menu,
      reason: `no ${missing.join("/")} option among ${menu.options.map((o) => JSON.stringify(o.label)).join(", ")}`,
    };
  }
  if (menu.selected < 0) {
    return { status: "unfamiliar", spec, menu, reason: "cannot tell which option the cursor is on" };
  }
  return { status: "match", spec, menu, roles };
}

/**
 * Reads the menu of the dialog being answered from a fresh screen (or `undefined` when gone).
 * `textBelow`: text printed below the dialog does not make it a leftover frame — used while
 * moving the cursor of a dialog already seen live (a program's stray log lines can land under
 * its own dialog), never to decide that a confirmed dialog is still there.
 */
export type MenuReader = (screen: string, opts?: { readonly textBelow?: boolean }) => ParsedMenu | undefined;

/** A reader for `spec`: the menu of that dialog only (never another list on screen). */
export function readerFor(spec: DialogSpec): MenuReader {
  return (screen, opts) => matchDialog(screen, [spec], [spec.kind], opts)?.menu;
}

/** True when both menus show the same option labels in the same order. Pure. */
export function sameLabels(a: ParsedMenu, b: ParsedMenu): boolean {
  return a.options.length === b.options.length && a.options.every((o, i) => o.label === b.options[i]!.label);
}
