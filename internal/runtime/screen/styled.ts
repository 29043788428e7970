/**
 * Styled screens: a capture that keeps the terminal's colours and attributes as SGR escapes
 * (tmux `capture-pane -e`, or the subprocess holder's emulator cells written the same way),
 * read into the plain text the rest of gc uses plus the rows drawn highlighted — reverse video
 * or a background colour marking the selected row of a list, the cursor of a menu drawn
 * without a `❯`/`›`/`>` glyph (Ink select lists with highlight colours, curses menus).
 * Pure; the parser (parse.ts) reads menus from it.
 */

/** A row drawn highlighted: the selected row of a list. */
export interface HighlightedRow {
  /** Line index in the plain text. */
  readonly row: number;
  /** Index in that line of the first visible character of the highlighted run. */
  readonly start: number;
  /** Index just past its last visible character. */
  readonly end: number;
  /** The highlighted text, trimmed. */
  readonly text: string;
}

/**
 * One line of a styled screen: its plain text and, per UTF-16 unit of it, the cell's paint
 * (`""` for the default background; `bg:<colour>` for a background colour; `inv:<fg>/<bg>`
 * for reverse video).
 */
export interface PaintedLine {
  readonly text: string;
  readonly paints: readonly string[];
}

/** A styled screen read: the plain text (lines right-trimmed) and its highlighted rows. */
export interface ReadScreen {
  readonly text: string;
  readonly highlights: readonly HighlightedRow[];
}

const ESC = "\x1b";

/** Box sides a highlighted row may sit between (drawn outside the highlight). */
const BORDER = new Set(["│", "┃", "║", "|", "╎", "┆"]);

interface Pen {
  fg: string;
  bg: string;
  inverse: boolean;
}

function paintOf(p: Pen): string {
  if (p.inverse) return `inv:${p.fg}/${p.bg}`;
  return p.bg === "" ? "" : `bg:${p.bg}`;
}

/**
 * An extended colour after `38`/`48` in `params` from index `i` (the `5;n` and `2;r;g;b`
 * forms, `:`-separated sub-parameters too, with or without the colour-space slot), and the
 * index after it.
 */
function extendedColour(params: readonly string[], i: number): { colour: string; next: number } {
  const head = params[i] ?? "";
  if (head.includes(":")) {
    const sub = head.split(":");
    if (sub[1] === "5") return { colour: `p${Number(sub[2] ?? 0)}`, next: i + 1 };
    if (sub[1] === "2") {
      const rgb = sub.length >= 6 ? sub.slice(3, 6) : sub.slice(2, 5);
      return { colour: `#${rgb.map((n) => Number(n || 0)).join(",")}`, next: i + 1 };
    }
    return { colour: "", next: i + 1 };
  }
  const mode = params[i + 1];
  if (mode === "5") return { colour: `p${Number(params[i + 2] ?? 0)}`, next: i + 3 };
  if (mode === "2") {
    const rgb = params.slice(i + 2, i + 5).map((n) => Number(n || 0));
    return { colour: `#${rgb.join(",")}`, next: i + 5 };
  }
  return { colour: "", next: i + 2 };
}

/** Applies one SGR parameter list (the text between `ESC[` and `m`) to `pen`. */
function applySgr(pen: Pen, body: string): void {
  const params = body === "" ? ["0"] : body.split(";");
  for (let i = 0; i < params.length; ) {
    const raw = params[i]!;
    const code = Number(raw.split(":")[0] || 0);
    if (code === 38 || code === 48) {
      const { colour, next } = extendedColour(params, i);
      if (code === 38) pen.fg = colour;
      else pen.bg = colour;
      i = next;
      continue;
    }
    if (code === 0) {
      pen.fg = "";
      pen.bg = "";
      pen.inverse = false;
    } else if (code === 7) pen.inverse = true;
    else if (code === 27) pen.inverse = false;
    else if (code >= 30 && code <= 37) pen.fg = `p${code - 30}`;
    else if (code >= 90 && code <= 97) pen.fg = `p${code - 90 + 8}`;
    else if (code === 39) pen.fg = "";
    else if (code >= 40 && code <= 47) pen.bg = `p${code - 40}`;
    else if (code >= 100 && code <= 107) pen.bg = `p${code - 100 + 8}`;
    else if (code === 49) pen.bg = "";
    i++;
  }
}

/**
 * Reads a styled capture into painted lines: SGR escapes set the pen (which carries over line
 * ends, as tmux writes it), every other escape (other CSI sequences, OSC strings such as
 * hyperlinks, two-character escapes) is dropped. Pure.
 */
export function paintLines(styled: string): PaintedLine[] {
  const pen: Pen = { fg: "", bg: "", inverse: false };
  const out: PaintedLine[] = [];
  let text = "";
  let paints: string[] = [];
  let paint = "";
  for (let i = 0; i < styled.length; ) {
    const ch = styled[i]!;
    if (ch === "\n") {
      out.push({ text, paints });
      text = "";
      paints = [];
      i++;
      continue;
    }
    if (ch === ESC) {
      const kind = styled[i + 1];
      if (kind === "[") {
        let j = i + 2;
        while (j < styled.length && !/[@-~]/.test(styled[j]!)) j++;
        if (styled[j] === "m") {
          applySgr(pen, styled.slice(i + 2, j));
          paint = paintOf(pen);
        }
        i = j + 1;
      } else if (kind === "]" || kind === "P" || kind === "_" || kind === "^") {
        // A string sequence, ended by BEL or ST (ESC \).
        let j = i + 2;
        while (j < styled.length && styled[j] !== "\x07" && !(styled[j] === ESC && styled[j + 1] === "\\"))
          j++;
        i = styled[j] === "\x07" ? j + 1 : j + 2;
      } else i += 2;
      continue;
    }
    if (ch === "\r") {
      i++;
      continue;
    }
    text += ch;
    paints.push(paint);
    i++;
  }
  out.push({ text, paints });
  return out;
}

/** A blank (any white space but a line end) at the end of a line, or of the text. */
const TRAILING_BLANK = /[^\S\n](?:\n|$)/;

/**
 * The plain text of a styled capture: escapes (and carriage returns) dropped, lines
 * right-trimmed. A capture with escapes is read by {@link readScreen} (kept: the classifier
 * reading the same capture next does not parse it again); one without is the text itself
 * when no line has blanks to trim. Pure.
 */
export function stripStyles(styled: string): string {
  if (styled.includes(ESC)) return readScreen(styled).text;
  const text = styled.includes("\r") ? styled.replaceAll("\r", "") : styled;
  return TRAILING_BLANK.test(text)
    ? text
        .split("\n")
        .map((l) => l.trimEnd())
        .join("\n")
    : text;
}

function isVisible(ch: string): boolean {
  return ch.trim() !== "" && !BORDER.has(ch);
}

/**
 * The rows drawn highlighted as the selected row of a list is: all of the row's visible text
 * (box sides aside) lies in ONE contiguous run of cells of one non-default paint (reverse
 * video, or a background colour), and
 * - the rows right above and below carry that paint nowhere over the run's text (a coloured
 *   block, two rows highlighted together, or a program's background colour is not a selection);
 * - the run is not a bar: one starting in the first column, padded with highlighted blanks
 *   after its text up to the widest line's end (a status bar; a capture that trims trailing
 *   blanks loses the padding, and the menu parser's list rules decide);
 * - a highlighted word inside other text, and coloured text (a foreground colour only), are
 *   never highlighted rows. Pure.
 */
export function highlightedRows(lines: readonly PaintedLine[]): HighlightedRow[] {
  const width = Math.max(0, ...lines.map((l) => l.text.length));
  const out: HighlightedRow[] = [];
  lines.forEach((line, row) => {
    const { text, paints } = line;
    let first = -1;
    let last = -1;
    for (let i = 0; i < text.length; i++) {
      if (!isVisible(text[i]!)) continue;
      if (first < 0) first = i;
      last = i;
    }
    if (first < 0) return;
    const paint = paints[first]!;
    if (paint === "") return;
    // One run: every cell from the first visible character to the last carries the paint
    // (so a highlighted word inside other text is not one).
    for (let i = first; i <= last; i++) if (paints[i] !== paint) return;
    let runStart = first;
    while (runStart > 0 && paints[runStart - 1] === paint) runStart--;
    let runEnd = last + 1;
    while (runEnd < text.length && paints[runEnd] === paint) runEnd++;
    const padded = runEnd > last + 1;
    if (runStart === 0 && padded && runEnd >= width) return; // a bar
    const sameAbove = carries(lines[row - 1], paint, first, last);
    const sameBelow = carries(lines[row + 1], paint, first, last);
    if (sameAbove || sameBelow) return;
    out.push({ row, start: first, end: last + 1, text: text.slice(first, last + 1).trim() });
  });
  return out;
}

/** True when `line` carries `paint` on some cell of columns `[from, to]`. */
function carries(line: PaintedLine | undefined, paint: string, from: number, to: number): boolean {
  if (!line) return false;
  for (let i = from; i <= to; i++) if (line.paints[i] === paint) return true;
  return false;
}

let memoIn: string | undefined;
let memoOut: ReadScreen | undefined;

/**
 * A screen as the parser reads it: plain text (unchanged when it holds no escape) and the
 * highlighted rows of a styled capture (none for plain text). The last answer is kept, so
 * the classifier and parser reading one capture in turn parse it once. Pure.
 */
export function readScreen(screen: string): ReadScreen {
  if (!screen.includes(ESC)) return { text: screen, highlights: [] };
  if (screen === memoIn && memoOut) return memoOut;
  const lines = paintLines(screen);
  const out: ReadScreen = {
    text: lines.map((l) => l.text.trimEnd()).join("\n"),
    highlights: highlightedRows(lines),
  };
  memoIn = screen;
  memoOut = out;
  return out;
}

/** The plain text of `screen` (a styled capture's escapes dropped; plain text unchanged). Pure. */
export function plainScreen(screen: string): string {
  return readScreen(screen).text;
}
