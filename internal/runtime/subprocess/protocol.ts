/**
 * The holder's wire protocol: JSON lines over a unix socket. A client writes
 * `{"id":…,"op":…,…}` per line; the holder answers each with `{"id":…,"ok":true,"result":…}`
 * or `{"id":…,"ok":false,"error":{"code":…,"message":…}}`, in any order, matched by id.
 * A request may carry `"expect":{"city":…,"name":…}`; the holder refuses it (`not_owner`)
 * unless it serves exactly that session of that city, so a caller never acts on a foreign
 * session or on a socket whose hashed path collided.
 * User text only ever travels inside JSON strings; no field is interpreted as a command.
 * After a successful `attach` reply the connection carries raw terminal bytes both ways.
 * The holder process's control socket speaks the same framing with the {@link ControlRequest}
 * ops (no `expect`): `hello`, `watch`, `create` and `release`.
 * A plugged-in mode (holder-mode.ts) adds ops of its own, named `<mode>.<op>`
 * ({@link ModeRequest}), and fields of its own to the spec and to `status`; their types live
 * with the mode (ACP's: ../acp/wire.ts).
 */

/** Bumped on incompatible protocol changes; the holder reports it in `status`. */
export const PROTOCOL_VERSION = 1;

/** Longest request line the holder accepts (a 100 KB nudge is far below it). */
export const MAX_LINE_BYTES = 8 * 1024 * 1024;

/** How a session's program ended, as the holder records it. Times are epoch milliseconds. */
export interface ExitInfo {
  readonly code: number | null;
  readonly signal: string | null;
  readonly at: number;
}

/**
 * What the provider hands the holder to create one session (in the control `create` request;
 * it holds the program's environment, so it is never written to disk).
 */
export interface HolderSpec {
  readonly protocol: number;
  readonly city: string;
  readonly name: string;
  /** The session dir (`<root>/sessions/<name>`): record and metadata go there. */
  readonly dir: string;
  /** Program argv (no shell is added by the holder). */
  readonly argv: readonly string[];
  /** Complete environment of the program. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly cols: number;
  readonly rows: number;
  /** Lines of scrollback kept by the screen model. */
  readonly scrollback: number;
  /** Bytes of raw output kept in memory for `output`. */
  readonly ringBytes: number;
  readonly socket: string;
  readonly log: string;
  /** The session's diagnostics log (`logs/<name>.holder.log`). */
  readonly holderLog: string;
  /** Raw log size that triggers rotation to `<log>.1`. */
  readonly logMaxBytes: number;
  /** Prompt prefix used by `waitIdle` when the request names none. */
  readonly readyPromptPrefix?: string | undefined;
  /**
   * `pty` (default): the program runs in a pseudo-terminal. Another name: the plugged-in mode
   * of that name runs it (holder-mode.ts; `acp`: an Agent Client Protocol agent on pipes, no
   * screen, no attach), reading its own fields of the spec.
   */
  readonly mode?: string | undefined;
}

/** The holder's sidecar (`session.json`), rewritten atomically on every change. */
export interface HolderRecord {
  readonly protocol: number;
  /** Ownership tag: the city that started the session. */
  readonly city: string;
  readonly name: string;
  readonly holderPid: number;
  /**
   * The control socket of the holder process that holds the session (a root has several);
   * absent in records of holders from before there were several: `holderSocketPath(root)`.
   */
  readonly control?: string | undefined;
  /** Pid of the program (the pty's session leader; also the pty's session id). */
  readonly childPid: number;
  /** The program's start time in clock ticks since boot (`/proc/<pid>/stat` field 22), guarding pid reuse. */
  readonly childStart: number | null;
  readonly socket: string;
  readonly workDir: string;
  readonly startedAt: number;
  readonly exit: ExitInfo | null;
}

/** Reply to `status`. */
export interface HolderStatus extends HolderRecord {
  /** The program is alive. */
  readonly running: boolean;
  /**
   * Epoch ms of the last output, or of the last change of the screen without output (a
   * clear, a resize); the start time before any.
   */
  readonly lastActivity: number;
  /** Number of attached terminals. */
  readonly attached: number;
  readonly cols: number;
  readonly rows: number;
  /** Total bytes of output so far (the `output` cursor). */
  readonly outputBytes: number;
}

/** Every request the holder understands, by `op`. */
export type HolderRequest =
  | { readonly op: "status" }
  | { readonly op: "info" }
  | { readonly op: "peek"; readonly lines: number }
  | { readonly op: "screen" }
  /** Types the text (no Enter): a bracketed paste when the program enabled that mode. */
  | { readonly op: "paste"; readonly text: string }
  /** Served for clients of an earlier gc; this gc sends `paste`, confirms, then `keys [Enter]`. */
  | { readonly op: "nudge"; readonly text: string }
  | { readonly op: "keys"; readonly keys: readonly string[] }
  /** Ctrl-C typed (ACP: cancel). Served for clients of an earlier gc; this gc sends `keys [C-c]`. */
  | { readonly op: "interrupt" }
  | { readonly op: "resize"; readonly cols: number; readonly rows: number }
  | { readonly op: "clear" }
  | { readonly op: "meta.get"; readonly key: string }
  | { readonly op: "meta.set"; readonly key: string; readonly value: string }
  | { readonly op: "meta.remove"; readonly key: string }
  | { readonly op: "meta.list" }
  | { readonly op: "waitReady"; readonly prefix: string; readonly timeoutMs: number }
  | {
      readonly op: "waitIdle";
      readonly timeoutMs: number;
      readonly quietMs?: number | undefined;
      readonly prefix?: string | undefined;
    }
  | { readonly op: "output"; readonly since: number; readonly maxBytes?: number | undefined }
  | { readonly op: "attach"; readonly cols?: number | undefined; readonly rows?: number | undefined }
  | { readonly op: "shutdown" }
  | ControlRequest;

/** A request of a plugged-in mode's own (op `<mode>.<op>`, e.g. `acp.turns`); the mode types it. */
export interface ModeRequest {
  readonly op: `${string}.${string}`;
  readonly [field: string]: unknown;
}

/** Requests on the holder process's control socket. */
export type ControlRequest =
  | { readonly op: "hello" }
  /** As `hello`; the caller keeps the connection open and learns the holder's end by its close. */
  | { readonly op: "watch" }
  /**
   * Starts a session; the reply comes once its socket serves and its program runs. With
   * `readyWaitMs` (pty sessions with a `readyPromptPrefix`), not before the prompt is on screen,
   * the program exited or that many ms passed, so the reply's screen is a start's first look
   * and its wait for the prompt in one (holders older than this field reply at once).
   */
  | { readonly op: "create"; readonly spec: HolderSpec; readonly readyWaitMs?: number | undefined }
  /** Stops session `name` of `city` if this holder has it (its socket may be gone). */
  | { readonly op: "release"; readonly name: string; readonly city: string }
  /** Exits if it holds no session and creates none (a holder started for a start that failed). */
  | { readonly op: "exitIfIdle" };

/** Operation names. */
export type HolderOp = HolderRequest["op"];

/** The result type of each operation. */
export interface HolderResults {
  status: HolderStatus;
  info: { readonly workDir: string; readonly env: Record<string, string> };
  peek: { readonly text: string };
  /**
   * `rows`/`cursorX`/`cursorY`/`history`: the visible rows and the cursor (absent from holders
   * older than these fields).
   */
  screen: {
    readonly text: string;
    readonly rows?: readonly string[] | undefined;
    /**
     * The visible rows with their reverse video and colours as SGR escapes (a styled capture,
     * ../screen/styled.ts): what menus are read from. Absent from holders older than it.
     */
    readonly styled?: string | undefined;
    readonly cursorX?: number | undefined;
    readonly cursorY?: number | undefined;
    readonly history?: number | undefined;
  };
  paste: { readonly bytes: number };
  /** `turn`: the turn the text became, in a mode whose program takes turns (ACP). */
  nudge: { readonly bytes: number; readonly turn?: number | undefined };
  keys: { readonly bytes: number };
  interrupt: Record<string, never>;
  resize: { readonly cols: number; readonly rows: number };
  clear: Record<string, never>;
  "meta.get": { readonly value: string | null };
  "meta.set": Record<string, never>;
  "meta.remove": Record<string, never>;
  "meta.list": { readonly meta: Record<string, string> };
  /**
   * `running`/`screen`: whether the program ran and the visible screen (as the `screen` op's
   * `text`) when the wait ended, so a start need not ask again at once (pty sessions; absent
   * from holders older than these fields).
   */
  waitReady: {
    readonly result: "ready" | "timeout" | "exited";
    readonly running?: boolean | undefined;
    readonly screen?: string | undefined;
  };
  waitIdle: { readonly result: "idle" | "timeout" | "gone" };
  /**
   * `cols`/`rows`: the pty's size now, which the raw output's cursor movements assume (absent
   * from holders older than this field).
   */
  output: {
    readonly data: string;
    readonly next: number;
    readonly truncated: boolean;
    readonly cols?: number | undefined;
    readonly rows?: number | undefined;
  };
  attach: { readonly cols: number; readonly rows: number };
  shutdown: Record<string, never>;
  /** `watchers`: open `watch` connections. */
  hello: {
    readonly pid: number;
    readonly protocol: number;
    readonly sessions: number;
    readonly watchers: number;
  };
  watch: HolderResults["hello"];
  /**
   * `screen`: the new session's visible screen (as the `screen` op's `text`) when it was made,
   * a start's first look at it (pty sessions; absent from holders older than this field).
   */
  create: { readonly pid: number; readonly childPid: number; readonly screen?: string | undefined };
  release: { readonly released: boolean };
  exitIfIdle: { readonly pid: number; readonly exiting: boolean };
}

/** Error codes a holder replies with. */
export type HolderErrorCode =
  | "bad_request"
  | "unknown_op"
  | "not_running"
  | "invalid_key"
  | "invalid_name"
  | "write_failed"
  | "shutting_down"
  | "not_owner"
  | "awaiting_choice"
  | "unsupported"
  /** A plugged-in mode's own failure (the ACP mode's: its agent's protocol error). */
  | "acp_error"
  | "spawn_failed"
  | "internal";

/** Identity a request may demand of the holder. */
export interface Expect {
  readonly city: string;
  readonly name: string;
}

/** One reply line. */
export type HolderResponse =
  | { readonly id: number | string | null; readonly ok: true; readonly result: unknown }
  | {
      readonly id: number | string | null;
      readonly ok: false;
      readonly error: { readonly code: HolderErrorCode; readonly message: string };
    };

/**
 * Splits a byte stream into lines (without the `\n`). Calls `onLine` per complete line;
 * calls `onOverflow` once and stops when a line exceeds `maxBytes`. A consumer that switches
 * the connection to raw mode calls `stop()` from inside `onLine`; `rest()` then returns the
 * bytes that followed that line.
 */
export class LineSplitter {
  private readonly onLine: (line: string) => void;
  private readonly onOverflow: () => void;
  private readonly maxBytes: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private stopped = false;
  private leftover: Buffer[] = [];

  constructor(onLine: (line: string) => void, onOverflow: () => void, maxBytes = MAX_LINE_BYTES) {
    this.onLine = onLine;
    this.onOverflow = onOverflow;
    this.maxBytes = maxBytes;
  }

  /** Feeds a chunk. Returns false once the splitter has stopped (overflow or `stop()`). */
  push(chunk: Buffer): boolean {
    if (this.stopped) {
      this.leftover.push(chunk);
      return false;
    }
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      const line =
        this.pendingBytes === 0
          ? piece.toString("utf8")
          : Buffer.concat([...this.pending, piece]).toString("utf8");
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
      this.onLine(line);
      if (this.stopped) {
        if (start < chunk.length) this.leftover.push(chunk.subarray(start));
        return false;
      }
    }
    if (start < chunk.length) {
      const tail = chunk.subarray(start);
      this.pending.push(tail);
      this.pendingBytes += tail.length;
      if (this.pendingBytes > this.maxBytes) {
        this.stopped = true;
        this.pending = [];
        this.pendingBytes = 0;
        this.onOverflow();
        return false;
      }
    }
    return true;
  }

  /** Stops splitting; later chunks are kept for {@link LineSplitter.rest}. */
  stop(): void {
    this.stopped = true;
  }

  /** Bytes received after the line during which `stop()` was called. */
  rest(): Buffer {
    const out = Buffer.concat(this.leftover);
    this.leftover = [];
    return out;
  }
}
