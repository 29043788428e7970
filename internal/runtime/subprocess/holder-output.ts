/**
 * A held session's output stores: {@link OutputRing}, the last bytes of output in memory
 * (served by the `output` op), and {@link RawLog}, the raw output on disk with one rotation.
 */
import { closeSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { ensurePrivateDir } from "./layout.js";

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
