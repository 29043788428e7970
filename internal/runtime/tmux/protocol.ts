/**
 * Pure parsing of the tmux control-mode stream: `%begin`/`%end`/`%error` reply blocks and
 * `%`-notifications. Used by the control client; kept apart so framing is unit-testable
 * without a tmux server.
 */

/** One reply block: the output of one command. */
export interface ReplyBlock {
  readonly type: "reply";
  /** Server time (seconds) and command number from the `%begin` line. */
  readonly time: number;
  readonly number: number;
  /** Bit 1 set: the command came from this client (not from the initial command line). */
  readonly flags: number;
  /** `%end` (true) or `%error` (false). */
  readonly ok: boolean;
  /** Output lines, verbatim. */
  readonly lines: readonly string[];
}

/** A notification line (`%sessions-changed`, `%exit`, `%output %1 …`, …). */
export interface Notification {
  readonly type: "notification";
  /** Name without the `%`, e.g. `sessions-changed`. */
  readonly name: string;
  /** Everything after the name and one space (may be empty). */
  readonly args: string;
}

/** What {@link ControlParser.push} produces. */
export type ControlEvent = ReplyBlock | Notification;

const BEGIN_RE = /^%begin (\d+) (\d+) (\d+)$/;

/**
 * Incremental framing: feed complete lines, get events. Inside a block, only a `%end` or
 * `%error` line carrying the same time, number and flags as its `%begin` closes it, so
 * program output such as a pane that prints "%end 1 2 3" cannot cut a reply short.
 * tmux never emits notifications inside a block.
 */
export class ControlParser {
  private block: { time: number; number: number; flags: number; end: string; error: string } | undefined;
  private lines: string[] = [];

  /** Consumes one line (without its newline). Returns an event when one is complete. */
  push(line: string): ControlEvent | undefined {
    const b = this.block;
    if (b) {
      if (line === b.end || line === b.error) {
        const ev: ReplyBlock = {
          type: "reply",
          time: b.time,
          number: b.number,
          flags: b.flags,
          ok: line === b.end,
          lines: this.lines,
        };
        this.block = undefined;
        this.lines = [];
        return ev;
      }
      this.lines.push(line);
      return undefined;
    }
    const m = BEGIN_RE.exec(line);
    if (m) {
      const tail = `${m[1]} ${m[2]} ${m[3]}`;
      this.block = {
        time: Number(m[1]),
        number: Number(m[2]),
        flags: Number(m[3]),
        end: `%end ${tail}`,
        error: `%error ${tail}`,
      };
      return undefined;
    }
    if (line.startsWith("%")) {
      const sp = line.indexOf(" ");
      return sp < 0
        ? { type: "notification", name: line.slice(1), args: "" }
        : { type: "notification", name: line.slice(1, sp), args: line.slice(sp + 1) };
    }
    return undefined; // stray text outside a block (not produced by tmux ≥ 3.2)
  }

  /** True while a reply block is open. */
  get inBlock(): boolean {
    return this.block !== undefined;
  }
}

/**
 * Decodes the payload of `%output` / `%extended-output`: tmux writes bytes below 32 and
 * `\` as three-digit octal escapes. Returns the raw bytes. Pure.
 */
export function decodeOutput(escaped: string): Buffer {
  const bytes: number[] = [];
  const raw = Buffer.from(escaped, "utf8");
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (
      c === 0x5c &&
      i + 3 < raw.length &&
      isOctal(raw[i + 1]) &&
      isOctal(raw[i + 2]) &&
      isOctal(raw[i + 3])
    ) {
      bytes.push(((raw[i + 1]! - 48) << 6) | ((raw[i + 2]! - 48) << 3) | (raw[i + 3]! - 48));
      i += 3;
    } else {
      bytes.push(c);
    }
  }
  return Buffer.from(bytes);
}

function isOctal(c: number | undefined): boolean {
  return c !== undefined && c >= 48 && c <= 55;
}
