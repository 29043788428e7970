/**
 * The provider's side of the holder protocol: one short-lived unix-socket connection per
 * request (holders are cheap to reach and a fresh connection never sees a stale peer), with
 * a deadline and cancellation; plus opening an attach stream.
 */
import { connect, type Socket } from "node:net";
import {
  type Expect,
  type HolderErrorCode,
  type HolderOp,
  type HolderRequest,
  type HolderResults,
  LineSplitter,
} from "./protocol.js";

/** No holder answered on the socket (missing, refused, closed early, or too slow). */
export class HolderUnavailableError extends Error {
  override readonly name = "HolderUnavailableError";
  /** `ENOENT`, `ECONNREFUSED`, `closed`, `timeout`, or another errno code. */
  readonly reason: string;
  constructor(socket: string, reason: string, options?: ErrorOptions) {
    super(`holder at ${socket} unavailable: ${reason}`, options);
    this.reason = reason;
  }
}

/** The holder answered with an error. */
export class HolderOpError extends Error {
  override readonly name = "HolderOpError";
  readonly code: HolderErrorCode;
  constructor(code: HolderErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Options for {@link holderRequest}. */
export interface RequestOptions {
  /** Deadline for connect + reply. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** Refuse unless the holder serves this session of this city (`not_owner`). */
  readonly expect?: Expect | undefined;
}

let nextId = 0;

/**
 * Sends one request and resolves with its result.
 * @throws HolderUnavailableError when nothing (or nothing timely) answers.
 * @throws HolderOpError when the holder rejects the request.
 * Aborting `signal` closes the connection (the holder drops any wait) and rejects with its reason.
 */
export function holderRequest<O extends HolderOp>(
  socket: string,
  req: Extract<HolderRequest, { op: O }>,
  opts: RequestOptions,
): Promise<HolderResults[O]> {
  opts.signal?.throwIfAborted();
  const id = ++nextId;
  return new Promise<HolderResults[O]>((resolve, reject) => {
    const sock = connect(socket);
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      sock.destroy();
      fn();
    };
    const onAbort = () => settle(() => reject(opts.signal?.reason));
    const timer = setTimeout(
      () => settle(() => reject(new HolderUnavailableError(socket, "timeout"))),
      opts.timeoutMs,
    );
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const splitter = new LineSplitter(
      (line) => {
        let msg: {
          id?: unknown;
          ok?: unknown;
          result?: unknown;
          error?: { code?: unknown; message?: unknown };
        };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          settle(() => reject(new HolderUnavailableError(socket, "garbled reply")));
          return;
        }
        if (msg.id !== id) return;
        if (msg.ok === true) settle(() => resolve(msg.result as HolderResults[O]));
        else {
          const code = (typeof msg.error?.code === "string" ? msg.error.code : "internal") as HolderErrorCode;
          settle(() => reject(new HolderOpError(code, String(msg.error?.message ?? "holder error"))));
        }
      },
      () => settle(() => reject(new HolderUnavailableError(socket, "reply too long"))),
    );
    sock.on("connect", () => sock.write(`${JSON.stringify({ ...req, id, expect: opts.expect })}\n`));
    sock.on("data", (chunk: Buffer) => splitter.push(chunk));
    sock.on("error", (e: NodeJS.ErrnoException) =>
      settle(() => reject(new HolderUnavailableError(socket, e.code ?? e.message, { cause: e }))),
    );
    sock.on("close", () => settle(() => reject(new HolderUnavailableError(socket, "closed"))));
  });
}

/** An attach stream: raw terminal bytes both ways once `initial` has been consumed. */
export interface AttachStream {
  /** Paused; add a `data` listener, then `resume()`. */
  readonly socket: Socket;
  /** Bytes that arrived with the reply (part of the screen). */
  readonly initial: Buffer;
}

/**
 * Opens an attach stream to the holder at `socket`, asking for a `cols`×`rows` terminal.
 * @throws HolderUnavailableError / HolderOpError as {@link holderRequest}.
 */
export function openAttach(
  socket: string,
  size: { cols?: number | undefined; rows?: number | undefined },
  opts: RequestOptions,
): Promise<AttachStream> {
  opts.signal?.throwIfAborted();
  const id = ++nextId;
  return new Promise<AttachStream>((resolve, reject) => {
    const sock = connect(socket);
    let settled = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      sock.destroy();
      reject(e);
    };
    const onAbort = () => fail(opts.signal?.reason);
    const timer = setTimeout(() => fail(new HolderUnavailableError(socket, "timeout")), opts.timeoutMs);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const splitter = new LineSplitter(
      (line) => {
        let msg: { id?: unknown; ok?: unknown; error?: { code?: unknown; message?: unknown } };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          fail(new HolderUnavailableError(socket, "garbled reply"));
          return;
        }
        if (msg.id !== id) return;
        if (msg.ok !== true) {
          const code = (typeof msg.error?.code === "string" ? msg.error.code : "internal") as HolderErrorCode;
          fail(new HolderOpError(code, String(msg.error?.message ?? "holder error")));
          return;
        }
        splitter.stop();
      },
      () => fail(new HolderUnavailableError(socket, "reply too long")),
    );
    const onData = (chunk: Buffer) => {
      if (splitter.push(chunk) || settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      sock.off("data", onData);
      sock.off("error", fail);
      sock.off("close", onClose);
      sock.pause();
      resolve({ socket: sock, initial: splitter.rest() });
    };
    const onClose = () => fail(new HolderUnavailableError(socket, "closed"));
    sock.on("connect", () =>
      sock.write(`${JSON.stringify({ ...size, id, op: "attach", expect: opts.expect })}\n`),
    );
    sock.on("data", onData);
    sock.on("error", fail);
    sock.on("close", onClose);
  });
}

/**
 * Watches the holder process on control socket `socket`: resolves once it answered `watch`
 * (with a function that stops watching), then calls `onGone` once when the connection ends
 * (the holder exited or died). The connection never keeps this process alive.
 * @throws HolderUnavailableError when no holder answers within `timeoutMs`.
 */
export function watchHolder(socket: string, onGone: () => void, timeoutMs: number): Promise<() => void> {
  const id = ++nextId;
  return new Promise<() => void>((resolve, reject) => {
    const sock = connect(socket);
    let watching = false;
    let stopped = false;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new HolderUnavailableError(socket, "timeout"));
    }, timeoutMs);
    const splitter = new LineSplitter(
      (line) => {
        if (watching) return;
        let msg: { id?: unknown; ok?: unknown };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          return;
        }
        if (msg.id !== id || msg.ok !== true) return;
        watching = true;
        clearTimeout(timer);
        sock.unref();
        resolve(() => {
          stopped = true;
          sock.destroy();
        });
      },
      () => sock.destroy(),
    );
    sock.on("connect", () => sock.write(`${JSON.stringify({ id, op: "watch" })}\n`));
    sock.on("data", (chunk: Buffer) => splitter.push(chunk));
    sock.on("error", () => undefined);
    sock.on("close", () => {
      clearTimeout(timer);
      if (!watching) reject(new HolderUnavailableError(socket, "closed"));
      else if (!stopped) onGone();
    });
  });
}
