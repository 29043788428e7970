/**
 * Pure parsing of the tmux control-mode stream: `%begin`/`%end`/`%error` reply blocks and
 * `%`-notifications, and which commands make tmux notify control clients at all. Used by the
 * control client; kept apart so framing is unit-testable without a tmux server.
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
  /** Output lines, verbatim: a fresh array per block, owned by the receiver. */
  readonly lines: string[];
}

/** A notification line (`%sessions-changed`, `%exit`, `%output %1 …`, …). */
export interface Notification {
  readonly type: "notification";
  /** Name without the `%`, e.g. `sessions-changed`. */
  readonly name: string;
  /** Everything after the name and one space (may be empty). */
  readonly args: string;
}

/** What {@link ControlParser.write} produces. */
export type ControlEvent = ReplyBlock | Notification;

const BEGIN_RE = /^%begin (\d+) (\d+) (\d+)$/;
const NL = 0x0a;
const PARTIAL_CAPACITY = 4096;

/**
 * Incremental framing of the byte stream: {@link write} the bytes as they arrive, get the
 * completed events. Inside a block, only a `%end` or `%error` line carrying the same time,
 * number and flags as its `%begin` closes it, so program output such as a pane that prints
 * "%end 1 2 3" cannot cut a reply short. tmux never emits notifications inside a block.
 *
 * Cost: each write decodes its complete lines with ONE `toString` and ONE `split` (a 1,000-line
 * reply arrives in a handful of writes); only the unfinished last line is kept, as bytes (so a
 * UTF-8 character cut between writes is decoded whole, and no text is concatenated per write).
 * Decoding per write rather than per block is deliberate: V8 decodes and splits many
 * write-sized strings several times faster than one block-sized string (measured: 0.7 vs
 * 3 ms for a 430 kB reply).
 */
export class ControlParser {
  /** The unfinished last line: bytes after the last newline seen. */
  private partial = Buffer.allocUnsafe(PARTIAL_CAPACITY);
  private partialLen = 0;
  private block: { time: number; number: number; flags: number; end: string; error: string } | undefined;
  private lines: string[] = [];

  /** Consumes the next bytes of the stream. Returns the events they complete, in order. */
  write(chunk: Buffer | string): ControlEvent[] {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    const last = bytes.lastIndexOf(NL);
    if (last < 0) {
      this.keep(bytes);
      return [];
    }
    let text: string;
    if (this.partialLen === 0) text = bytes.toString("utf8", 0, last);
    else {
      this.keep(bytes.subarray(0, last));
      text = this.partial.toString("utf8", 0, this.partialLen);
      this.partialLen = 0;
      // One very long line grew the buffer: give the memory back.
      if (this.partial.length > 16 * PARTIAL_CAPACITY) this.partial = Buffer.allocUnsafe(PARTIAL_CAPACITY);
    }
    this.keep(bytes.subarray(last + 1));
    const events: ControlEvent[] = [];
    for (const line of text.split("\n")) {
      const ev = this.line(line);
      if (ev) events.push(ev);
    }
    return events;
  }

  /** True while a reply block is open. */
  get inBlock(): boolean {
    return this.block !== undefined;
  }

  private line(line: string): ControlEvent | undefined {
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

  /** Appends `bytes` to the unfinished line. */
  private keep(bytes: Buffer): void {
    if (bytes.length === 0) return;
    const need = this.partialLen + bytes.length;
    if (need > this.partial.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.partial.length * 2));
      this.partial.copy(grown, 0, 0, this.partialLen);
      this.partial = grown;
    }
    bytes.copy(this.partial, this.partialLen);
    this.partialLen = need;
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

/**
 * Commands that never make tmux notify control clients (queries, options, the client's own
 * settings): every other command holds the server's identify gate shared (gate.ts).
 */
const QUIET_COMMANDS: ReadonlySet<string> = new Set([
  "capture-pane",
  "clear-history",
  "display-message",
  "has-session",
  "list-clients",
  "list-panes",
  "list-sessions",
  "list-windows",
  "refresh-client",
  "set-environment",
  "set-option",
  "show-environment",
  "show-options",
]);

/** Whether running `argv` can make tmux notify every control client. Pure. */
export function notifiesClients(argv: readonly string[]): boolean {
  return !QUIET_COMMANDS.has(argv[0] ?? "");
}
