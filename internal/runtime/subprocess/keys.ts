/**
 * Terminal key handling for the subprocess provider: tmux-style key names (`Enter`, `C-c`,
 * `Up`, `F5`, `M-x`…) to the bytes a terminal sends, and the attach detach-key matcher.
 * Pure; used by the holder (`keys` requests) and the provider (validation, attach).
 */

/** Terminal modes that change what a key sends. */
export interface KeyModes {
  /** DECCKM: cursor keys send `ESC O A` instead of `ESC [ A`. */
  readonly applicationCursorKeys?: boolean | undefined;
}

const CSI = "\x1b[";
const SS3 = "\x1bO";

const NAMED: Readonly<Record<string, string>> = {
  enter: "\r",
  kpenter: "\r",
  tab: "\t",
  btab: `${CSI}Z`,
  escape: "\x1b",
  esc: "\x1b",
  space: " ",
  bspace: "\x7f",
  backspace: "\x7f",
  pageup: `${CSI}5~`,
  ppage: `${CSI}5~`,
  pgup: `${CSI}5~`,
  pagedown: `${CSI}6~`,
  npage: `${CSI}6~`,
  pgdn: `${CSI}6~`,
  insert: `${CSI}2~`,
  ic: `${CSI}2~`,
  delete: `${CSI}3~`,
  dc: `${CSI}3~`,
  f1: `${SS3}P`,
  f2: `${SS3}Q`,
  f3: `${SS3}R`,
  f4: `${SS3}S`,
  f5: `${CSI}15~`,
  f6: `${CSI}17~`,
  f7: `${CSI}18~`,
  f8: `${CSI}19~`,
  f9: `${CSI}20~`,
  f10: `${CSI}21~`,
  f11: `${CSI}23~`,
  f12: `${CSI}24~`,
};

const CURSOR: Readonly<Record<string, string>> = {
  up: "A",
  down: "B",
  right: "C",
  left: "D",
  home: "H",
  end: "F",
};

const CONTROL_PUNCT: Readonly<Record<string, string>> = {
  "@": "\x00",
  " ": "\x00",
  space: "\x00",
  "[": "\x1b",
  "\\": "\x1c",
  "]": "\x1d",
  "^": "\x1e",
  _: "\x1f",
  "?": "\x7f",
};

/**
 * The bytes (as a string of code units) that key `name` sends, or `undefined` when the name
 * is not a key. Named keys are case-insensitive; `C-x` is Ctrl, `M-x` is Meta (ESC prefix)
 * and may be combined (`M-C-x`); any other single character is sent as itself. Pure.
 */
export function keyBytes(name: string, modes: KeyModes = {}): string | undefined {
  if (name.length === 0) return undefined;
  if ([...name].length === 1) return name;
  if (/^M-./su.test(name) && name.length > 2) {
    const inner = keyBytes(name.slice(2), modes);
    return inner === undefined ? undefined : `\x1b${inner}`;
  }
  if (/^C-./su.test(name) && name.length > 2) {
    const rest = name.slice(2);
    if ([...rest].length === 1) {
      const c = rest.toLowerCase();
      if (c >= "a" && c <= "z") return String.fromCharCode(c.charCodeAt(0) & 0x1f);
      return CONTROL_PUNCT[c];
    }
    const lower = rest.toLowerCase();
    if (lower === "space") return "\x00";
    return undefined;
  }
  const lower = name.toLowerCase();
  const cursor = CURSOR[lower];
  if (cursor !== undefined) return `${modes.applicationCursorKeys ? SS3 : CSI}${cursor}`;
  return NAMED[lower];
}

/** The names in `keys` that {@link keyBytes} does not know. Pure. */
export function unknownKeys(keys: readonly string[]): string[] {
  return keys.filter((k) => keyBytes(k) === undefined);
}

/** Which keys end an attach. */
export type DetachKeys = "both" | "C-\\" | "C-b d";

/** Human description of `keys`, for the message printed on attach. Pure. */
export function describeDetachKeys(keys: DetachKeys): string {
  if (keys === "C-\\") return "Ctrl-\\";
  if (keys === "C-b d") return "Ctrl-b d";
  return "Ctrl-\\ or Ctrl-b d";
}

const CTRL_BACKSLASH = 0x1c;
const CTRL_B = 0x02;
const LETTER_D = 0x64;

/** What to do with one chunk of the attached user's keystrokes. */
export interface DetachStep {
  /** Bytes to forward to the session. */
  readonly forward: Buffer;
  /** The user asked to detach (bytes after the detach key are dropped). */
  readonly detach: boolean;
}

/**
 * Watches an attached user's keystrokes for the detach key. `Ctrl-\` detaches at once;
 * `Ctrl-b d` detaches like tmux (`Ctrl-b Ctrl-b` sends one `Ctrl-b`; `Ctrl-b` followed by
 * anything else sends both). A `Ctrl-b` at the end of a chunk waits for the next chunk.
 */
export class DetachMatcher {
  private readonly keys: DetachKeys;
  private prefixPending = false;

  constructor(keys: DetachKeys = "both") {
    this.keys = keys;
  }

  /** Consumes one chunk. */
  feed(chunk: Buffer): DetachStep {
    const out: number[] = [];
    const immediate = this.keys !== "C-b d";
    const prefix = this.keys !== "C-\\";
    for (const b of chunk) {
      if (this.prefixPending) {
        this.prefixPending = false;
        if (b === LETTER_D) return { forward: Buffer.from(out), detach: true };
        if (b === CTRL_B) {
          out.push(CTRL_B);
          continue;
        }
        out.push(CTRL_B);
      }
      if (immediate && b === CTRL_BACKSLASH) return { forward: Buffer.from(out), detach: true };
      if (prefix && b === CTRL_B) {
        this.prefixPending = true;
        continue;
      }
      out.push(b);
    }
    return { forward: Buffer.from(out), detach: false };
  }
}

/** Undoes every terminal mode an attach may have set (see the holder's repaint), on detach. */
export const DETACH_RESET =
  "\x1b[0m\x1b[?1l\x1b>\x1b[?2004l\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1049l\x1b[?25h";
