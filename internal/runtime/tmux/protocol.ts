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
const INITIAL_CAPACITY = 64 * 1024;

interface OpenBlock {
  readonly time: number;
  readonly number: number;
  readonly flags: number;
  /** `\n%end T N F\n` and `\n%error T N F\n`: a closing line, with the newline before it. */
  readonly end: Buffer;
  readonly error: Buffer;
  /** Offset in the buffer of the newline that ends the `%begin` line. */
  readonly head: number;
}

/**
 * Incremental framing of the byte stream: {@link write} the bytes as they arrive, get the
 * completed events. Inside a block, only a `%end` or `%error` line carrying the same time,
 * number and flags as its `%begin` closes it, so program output such as a pane that prints
 * "%end 1 2 3" cannot cut a reply short. tmux never emits notifications inside a block.
 *
 * A reply block is parsed as one unit: its closing line is found by a byte search of the
 * buffered stream, then its body is decoded once and split once — however many chunks it
 * arrived in, and however many lines it holds. Bytes are buffered (not decoded text), so a
 * UTF-8 character split across chunks is decoded whole.
 */
export class ControlParser {
  private buf = Buffer.allocUnsafe(INITIAL_CAPACITY);
  private len = 0;
  /** Bytes before this offset hold no complete line / closing line still to be found. */
  private scanned = 0;
  private block: OpenBlock | undefined;

  /** Consumes the next bytes of the stream. Returns the events they complete, in order. */
  write(chunk: Buffer | string): ControlEvent[] {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    this.append(bytes);
    const events: ControlEvent[] = [];
    // Searches see only the bytes written (the buffer's tail holds stale bytes).
    const data = this.buf.subarray(0, this.len);
    let pos = 0; // start of the unconsumed bytes
    for (;;) {
      const b = this.block;
      if (b) {
        const from = Math.max(b.head, this.scanned);
        const e = data.indexOf(b.end, from);
        const r = data.indexOf(b.error, from);
        const ok = e >= 0 && (r < 0 || e < r);
        const at = ok ? e : r;
        if (at < 0) {
          // Not closed yet: next time, search only where a closing line could still start.
          this.scanned = Math.max(b.head, this.len - b.error.length + 1);
          break;
        }
        const lines = at === b.head ? [] : data.toString("utf8", b.head + 1, at).split("\n");
        events.push({ type: "reply", time: b.time, number: b.number, flags: b.flags, ok, lines });
        this.block = undefined;
        pos = at + (ok ? b.end.length : b.error.length);
        this.scanned = pos;
        continue;
      }
      const nl = data.indexOf(NL, Math.max(pos, this.scanned));
      if (nl < 0) {
        this.scanned = this.len;
        break;
      }
      const line = data.toString("utf8", pos, nl);
      const m = BEGIN_RE.exec(line);
      if (m) {
        const tail = `${m[1]} ${m[2]} ${m[3]}`;
        this.block = {
          time: Number(m[1]),
          number: Number(m[2]),
          flags: Number(m[3]),
          end: Buffer.from(`\n%end ${tail}\n`),
          error: Buffer.from(`\n%error ${tail}\n`),
          head: nl,
        };
        // The block's search starts at the newline ending %begin (an empty block's %end
        // follows it directly), so that newline stays in the buffer.
        pos = nl;
        this.scanned = nl;
        continue;
      }
      pos = nl + 1;
      this.scanned = pos;
      if (line.startsWith("%")) {
        const sp = line.indexOf(" ");
        events.push(
          sp < 0
            ? { type: "notification", name: line.slice(1), args: "" }
            : { type: "notification", name: line.slice(1, sp), args: line.slice(sp + 1) },
        );
      }
      // else: stray text outside a block (not produced by tmux ≥ 3.2)
    }
    this.consume(pos);
    return events;
  }

  /** True while a reply block is open. */
  get inBlock(): boolean {
    return this.block !== undefined;
  }

  private append(bytes: Buffer): void {
    if (this.len + bytes.length > this.buf.length) {
      let cap = this.buf.length * 2;
      while (cap < this.len + bytes.length) cap *= 2;
      const grown = Buffer.allocUnsafe(cap);
      this.buf.copy(grown, 0, 0, this.len);
      this.buf = grown;
    }
    bytes.copy(this.buf, this.len);
    this.len += bytes.length;
  }

  /** Drops the first `n` bytes; offsets into the buffer move with them. */
  private consume(n: number): void {
    if (n === 0) return;
    this.buf.copyWithin(0, n, this.len);
    this.len -= n;
    this.scanned = Math.max(0, this.scanned - n);
    if (this.block) this.block = { ...this.block, head: this.block.head - n };
    // A huge reply grew the buffer: give the memory back once it is drained.
    if (this.len === 0 && this.buf.length > 16 * INITIAL_CAPACITY) this.buf = Buffer.allocUnsafe(INITIAL_CAPACITY);
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
