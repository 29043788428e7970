/**
 * The one collector of a command's stdout and stderr, shared by every way gc runs a command
 * (a local child in `run`, a Docker exec, a pod exec): each stream is capped the same way, and
 * when the command is cut short (deadline, abort) what it printed so far rides on the error.
 */
import { attachCapturedOutput, type CapturedOutput } from "../base/errors.js";

/** Default cap on the captured bytes of each stream. */
export const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** Options of {@link OutputCapture}. */
export interface CaptureOptions {
  /** Cap on the captured bytes of each stream (default {@link MAX_OUTPUT_BYTES}). */
  readonly maxBytes?: number | undefined;
  /**
   * Whether {@link OutputCapture.cut} hangs the output on the error. Only for commands whose
   * output the caller shows (`execCommand`): an abort reason is shared by every operation
   * under one signal, and must not pick up what gc's own commands (a tmux listing, a
   * session's environment) printed.
   */
  readonly keepOnCut?: boolean | undefined;
}

/**
 * Collects stdout and stderr chunks. A stream keeps chunks while fewer than `maxBytes` have
 * arrived (the rest is counted and dropped), so each holds at most `maxBytes` plus one chunk.
 */
export class OutputCapture {
  private readonly out: Buffer[] = [];
  private readonly err: Buffer[] = [];
  private outLen = 0;
  private errLen = 0;
  private readonly maxBytes: number;
  private readonly keepOnCut: boolean;

  constructor(opts: CaptureOptions = {}) {
    this.maxBytes = opts.maxBytes ?? MAX_OUTPUT_BYTES;
    this.keepOnCut = opts.keepOnCut === true;
  }

  /** Adds a stdout chunk (copied: a sink may reuse its buffer). */
  readonly stdout = (b: Buffer): void => {
    if (this.outLen < this.maxBytes) this.out.push(Buffer.from(b));
    this.outLen += b.length;
  };

  /** Adds a stderr chunk (copied). */
  readonly stderr = (b: Buffer): void => {
    if (this.errLen < this.maxBytes) this.err.push(Buffer.from(b));
    this.errLen += b.length;
  };

  /** What was captured, as bytes. */
  bytes(): { stdout: Buffer; stderr: Buffer } {
    return { stdout: Buffer.concat(this.out), stderr: Buffer.concat(this.err) };
  }

  /** What was captured, as UTF-8 text. */
  text(): CapturedOutput {
    const b = this.bytes();
    return { stdout: b.stdout.toString("utf8"), stderr: b.stderr.toString("utf8") };
  }

  /**
   * The error a command cut short rejects with (an OperationTimeoutError or the abort reason),
   * carrying what was captured so far ({@link attachCapturedOutput}) when `keepOnCut` was set;
   * otherwise `e` untouched.
   */
  cut<E>(e: E): E {
    return this.keepOnCut ? attachCapturedOutput(e, this.text()) : e;
  }
}
