/**
 * A held session's output stores: {@link OutputRing}, the last bytes of output in memory
 * (served by the `output` op), and {@link RawLog}, the raw output on disk with one rotation;
 * and its diagnostics, {@link NotesLog}.
 */
import { closeSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { appendRotating, ensurePrivateDir } from "./layout.js";

/** Last `capacity` bytes of output plus the running total (the `output` cursor). */
export class OutputRing {
  private readonly buf: Buffer;
  private total = 0;

  constructor(capacity: number) {
    this.buf = Buffer.alloc(Math.max(1024, capacity));
  }

  get bytes(): number {
    return this.total;
  }

  push(chunk: Buffer): void {
    const cap = this.buf.length;
    const data = chunk.length > cap ? chunk.subarray(chunk.length - cap) : chunk;
    const at = (this.total + (chunk.length - data.length)) % cap;
    const first = Math.min(data.length, cap - at);
    data.copy(this.buf, at, 0, first);
    if (first < data.length) data.copy(this.buf, 0, first);
    this.total += chunk.length;
  }

  since(offset: number, maxBytes: number): { data: Buffer; next: number; truncated: boolean } {
    const cap = this.buf.length;
    const oldest = Math.max(0, this.total - cap);
    const from = Math.max(offset, oldest);
    const to = Math.min(this.total, from + maxBytes);
    const out = Buffer.alloc(Math.max(0, to - from));
    for (let i = 0; i < out.length; i++) out[i] = this.buf[(from + i) % cap]!;
    return { data: out, next: to, truncated: offset < oldest };
  }
}

/** Append-only raw output log, rotated to `<path>.1` at `maxBytes`. Write errors are ignored. */
export class RawLog {
  private readonly path: string;
  private readonly maxBytes: number;
  private fd: number | undefined;
  private size = 0;

  constructor(path: string, maxBytes: number) {
    this.path = path;
    this.maxBytes = maxBytes;
    this.open();
  }

  private open(): void {
    try {
      this.fd = openSync(this.path, "a", 0o600);
      this.size = 0;
    } catch (e) {
      this.fd = undefined;
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") return;
      try {
        ensurePrivateDir(dirname(this.path)); // its directory was removed since
        this.fd = openSync(this.path, "a", 0o600);
      } catch {
        // no log, as before: a log must not take the session down
      }
    }
  }

  write(chunk: Buffer): void {
    if (this.fd === undefined) return;
    try {
      writeSync(this.fd, chunk);
      this.size += chunk.length;
      if (this.size >= this.maxBytes) {
        closeSync(this.fd);
        renameSync(this.path, `${this.path}.1`);
        this.open();
      }
    } catch {
      // a full disk must not take the session down
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Longest a line noted by {@link NotesLog.noteSoon} waits before it is written. */
const NOTE_DELAY_MS = 1_000;

/**
 * A session's diagnostics log (`logs/<name>.holder.log`, rotated at 1 MiB): lines appended
 * off the event loop, in order. Writing never fails the session.
 */
export class NotesLog {
  private readonly path: string;
  private readonly name: string;
  /** The lines handed to the file so far, appended in order. */
  private appended: Promise<void> = Promise.resolve();
  /** Lines noted but not yet handed to the file ({@link noteSoon}). */
  private pending = "";
  private timer: NodeJS.Timeout | undefined;

  /** `name`: the session's, in every line. */
  constructor(path: string, name: string) {
    this.path = path;
    this.name = name;
  }

  /** Appends a line (after any noted before). Resolves once it is written (or failed: it never rejects). */
  note(msg: string): Promise<void> {
    this.pending += this.line(msg);
    return this.flush();
  }

  /** {@link note}, written within {@link NOTE_DELAY_MS}, or at once by the next {@link note}. */
  noteSoon(msg: string): void {
    this.pending += this.line(msg);
    this.timer ??= setTimeout(() => void this.flush(), NOTE_DELAY_MS);
  }

  /** Hands the lines noted so far to the file, in one write. Never rejects. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const text = this.pending;
    this.pending = "";
    if (text !== "") {
      this.appended = this.appended.then(() =>
        appendRotating(this.path, text).catch(() => undefined /* diagnostics never take the session down */),
      );
    }
    return this.appended;
  }

  private line(msg: string): string {
    return `${new Date().toISOString()} holder[${process.pid}] ${this.name}: ${msg}\n`;
  }
}
