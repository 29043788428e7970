/**
 * The holder's model of what a terminal would show: a headless xterm fed with the
 * program's raw output. Serves peek (rendered text, wrapped lines joined), readiness and
 * idle prompt matching, the input modes that decide how keys and pastes are encoded, and the
 * repaint sent to a terminal that attaches. Used only by the holder process.
 */
import { createRequire } from "node:module";
import { screenShowsPrompt } from "../screen/classify.js";

// A CommonJS package: `require` loads it as such, where an ES `import` first has Node scan its
// whole source for export names (≈75 ms of CPU at every holder start, before any session).
const xterm = createRequire(import.meta.url)("@xterm/headless") as typeof import("@xterm/headless");

type XTerminal = InstanceType<typeof xterm.Terminal>;

/** Last `lines` entries of `all` after dropping trailing blank lines; `lines <= 0` = all. Pure. */
export function tailLines(all: readonly string[], lines: number): string[] {
  let end = all.length;
  while (end > 0 && all[end - 1]!.trim() === "") end--;
  const start = lines > 0 ? Math.max(0, end - lines) : 0;
  return all.slice(start, end);
}

type XCell = ReturnType<XTerminal["buffer"]["active"]["getNullCell"]>;

/** The SGR parameters (after a reset) for a cell's reverse video and colours: `""` for none. */
function penOf(c: XCell): string {
  const colour = (rgb: boolean, palette: boolean, value: number, base: 38 | 48): string => {
    if (rgb) return `;${base};2;${(value >> 16) & 255};${(value >> 8) & 255};${value & 255}`;
    if (palette) return `;${base};5;${value}`;
    return "";
  };
  return (
    (c.isInverse() ? ";7" : "") +
    colour(c.isFgRGB(), c.isFgPalette(), c.getFgColor(), 38) +
    colour(c.isBgRGB(), c.isBgPalette(), c.getBgColor(), 48)
  );
}

/** A headless terminal that renders a program's output. */
export class Screen {
  private readonly term: XTerminal;
  /** Chunks written but not yet parsed: xterm parses on a timer, so waiting costs ≥ 1 ms. */
  private unparsed = 0;

  constructor(cols: number, rows: number, scrollback: number) {
    this.term = new xterm.Terminal({ cols, rows, scrollback, allowProposedApi: true });
  }

  /** Feeds raw output bytes. Parsing is asynchronous; see {@link Screen.flush}. */
  write(data: Uint8Array | string): void {
    this.unparsed++;
    this.term.write(data, () => {
      this.unparsed--;
    });
  }

  /** Calls `fn` right after everything written so far has been parsed (at once when it is). */
  afterParsed(fn: () => void): void {
    if (this.unparsed === 0) fn();
    else this.term.write("", fn);
  }

  /** Resolves once everything written so far has been parsed. */
  flush(): Promise<void> {
    return new Promise((resolve) => this.afterParsed(resolve));
  }

  get cols(): number {
    return this.term.cols;
  }

  get rows(): number {
    return this.term.rows;
  }

  /** The program enabled bracketed paste (pastes must be wrapped in `ESC[200~…ESC[201~`). */
  get bracketedPaste(): boolean {
    return this.term.modes.bracketedPasteMode;
  }

  /** The program enabled application cursor keys. */
  get applicationCursorKeys(): boolean {
    return this.term.modes.applicationCursorKeysMode;
  }

  /** A full-screen program is on the alternate screen. */
  get alternateScreen(): boolean {
    return this.term.buffer.active.type === "alternate";
  }

  /** Logical lines of the active buffer (scrollback + screen), wrapped rows joined. */
  logicalLines(): string[] {
    const buf = this.term.buffer.active;
    const out: string[] = [];
    let current = "";
    for (let i = 0; i < buf.length; i++) {
      const line = buf.getLine(i);
      if (!line) continue;
      const next = buf.getLine(i + 1);
      const continues = next?.isWrapped === true;
      current += line.translateToString(!continues);
      if (!continues) {
        // xterm trims only never-written cells; written trailing blanks go too, as in tmux.
        out.push(current.replace(/ +$/, ""));
        current = "";
      }
    }
    if (current !== "") out.push(current.replace(/ +$/, ""));
    return out;
  }

  /**
   * The last `lines` logical lines up to the last non-blank one, newest last; `lines <= 0` =
   * all. Walks up from the bottom, so the cost follows `lines`, not the scrollback size.
   */
  peek(lines: number): string {
    if (lines <= 0) return tailLines(this.logicalLines(), 0).join("\n");
    const buf = this.term.buffer.active;
    const out: string[] = [];
    let end = buf.length - 1;
    while (end >= 0 && out.length < lines) {
      let start = end;
      while (start > 0 && buf.getLine(start)?.isWrapped) start--;
      let text = "";
      for (let r = start; r <= end; r++) text += buf.getLine(r)?.translateToString(r === end) ?? "";
      text = text.replace(/ +$/, "");
      end = start - 1;
      if (out.length === 0 && text.trim() === "") continue; // trailing blank rows
      out.push(text);
    }
    return out.reverse().join("\n");
  }

  /** The rows currently visible (no scrollback), right-trimmed of never-written cells. */
  viewportLines(): string[] {
    const buf = this.term.buffer.active;
    const out: string[] = [];
    for (let y = 0; y < this.term.rows; y++) {
      out.push(buf.getLine(buf.viewportY + y)?.translateToString(true) ?? "");
    }
    return out;
  }

  /**
   * The visible rows (right-trimmed), the cursor in them, and the lines scrolled into the
   * scrollback so far: what nudge delivery compares (../screen/delivery.ts); `styled`: the rows as
   * {@link styledText}.
   */
  terminalState(): { rows: string[]; cursorX: number; cursorY: number; history: number; styled: string } {
    const { rows, cursorX, cursorY, history, styled } = this.capture();
    return { rows, cursorX, cursorY, history, styled };
  }

  /**
   * What the `screen` op answers: {@link visibleText} and {@link terminalState}, from one read
   * of the visible rows.
   */
  capture(): {
    text: string;
    rows: string[];
    cursorX: number;
    cursorY: number;
    history: number;
    styled: string;
  } {
    const buf = this.term.buffer.active;
    const plain = this.viewportLines();
    const shown = tailLines(plain, 0);
    return {
      text: shown.join("\n"),
      rows: plain.map((r) => r.replace(/ +$/, "")),
      cursorX: buf.cursorX,
      cursorY: buf.cursorY,
      history: buf.baseY,
      styled: this.styledRows(shown.length),
    };
  }

  /** The visible rows as text, trailing blank rows dropped. */
  visibleText(): string {
    return tailLines(this.viewportLines(), 0).join("\n");
  }

  /**
   * {@link visibleText} as a styled capture: every visible row (up to its last cell that is
   * not a plain blank, so a bar's highlighted padding stays) with its reverse video and
   * colours as SGR escapes (the pen carried over row ends, as tmux's
   * `capture-pane -e` writes it), trailing blank rows dropped. What menus are read from: a
   * list whose cursor is a highlighted row (../screen/styled.ts).
   */
  styledText(): string {
    return this.styledRows(tailLines(this.viewportLines(), 0).length);
  }

  /** {@link styledText} of the first `end` visible rows (those up to the last non-blank one). */
  private styledRows(end: number): string {
    const buf = this.term.buffer.active;
    const cell = buf.getNullCell();
    let pen = "";
    const out: string[] = [];
    for (let y = 0; y < end; y++) {
      const line = buf.getLine(buf.viewportY + y);
      let row = "";
      // The row up to its last cell that is not a plain blank (a highlight's padding stays).
      let kept = "";
      let keptPen = pen;
      for (let x = 0; line && x < this.term.cols; x++) {
        line.getCell(x, cell);
        if (cell.getWidth() === 0) continue; // the right half of a wide character
        const next = penOf(cell);
        if (next !== pen) {
          row += `\x1b[0${next}m`;
          pen = next;
        }
        const ch = cell.getChars() || " ";
        row += ch;
        if (ch !== " " || next !== "") [kept, keptPen] = [row, pen];
      }
      out.push(kept);
      pen = keptPen;
    }
    return out.join("\n");
  }

  /** True when some visible row shows the ready prompt `prefix` (the shared rule, screen/classify.ts). */
  showsPrompt(prefix: string): boolean {
    return screenShowsPrompt(this.visibleText(), prefix);
  }

  resize(cols: number, rows: number): void {
    this.term.resize(cols, rows);
  }

  /** Drops the scrollback, keeping the current line. */
  clear(): void {
    this.term.clear();
  }

  /**
   * Bytes that make a freshly attached terminal look like this one: the program's input
   * modes, the alternate screen if active, the visible rows as plain text, and the cursor.
   * Colours are not reproduced; full-screen programs repaint after the attach resize.
   */
  repaint(): string {
    const m = this.term.modes;
    const buf = this.term.buffer.active;
    let s = "\x1b[0m";
    if (this.alternateScreen) s += "\x1b[?1049h";
    s += "\x1b[H\x1b[2J";
    if (m.applicationCursorKeysMode) s += "\x1b[?1h";
    if (m.applicationKeypadMode) s += "\x1b=";
    if (m.bracketedPasteMode) s += "\x1b[?2004h";
    const mouse = { none: "", x10: "9", vt200: "1000", drag: "1002", any: "1003" }[m.mouseTrackingMode];
    if (mouse) s += `\x1b[?${mouse}h\x1b[?1006h`;
    s += this.viewportLines()
      .map((l, y) => `\x1b[${y + 1};1H${l}`)
      .join("");
    s += `\x1b[${buf.cursorY + 1};${buf.cursorX + 1}H`;
    return s;
  }

  dispose(): void {
    this.term.dispose();
  }
}
