/**
 * The provider's side of the holder protocol: requests with a deadline and cancellation,
 * each on a short-lived unix-socket connection of its own, or (`reuse`) on the one kept-open
 * connection of a {@link ConnectionPool} to that socket; plus opening an attach stream.
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
  /**
   * Send on this pool's kept-open connection to `socket` (opened on first use, closed after
   * {@link IDLE_CLOSE_MS} without requests or by {@link ConnectionPool.close}) instead of a
   * new one. Only for requests
   * that are safe to send twice: when that connection closes before the reply (the holder
   * ended it: the session stopped), the request is sent once more on a fresh connection,
   * which sees whatever serves the socket now. Aborting or a deadline leaves the connection
   * open (a late reply is dropped), so the holder keeps any wait it started until that wait's
   * own timeout: pass `reuse` only with short waits.
   */
  readonly reuse?: ConnectionPool | undefined;
}

let nextId = 0;

/** A kept-open connection closes after this long without a request in flight. */
export const IDLE_CLOSE_MS = 2_000;

/** A reply line of the holder protocol. */
interface Reply {
  id?: unknown;
  ok?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown };
}

/**
 * One kept-open connection to a holder socket, carrying any number of requests at once
 * (replies are matched by id). Referenced (keeps the process alive) only while a request is
 * in flight; closed when idle for {@link IDLE_CLOSE_MS} or when the holder ends it.
 */
class SharedConnection {
  private readonly sock: Socket;
  /** Requests in flight: id → settle with a reply, or with `undefined` when the connection ended. */
  private readonly waiting = new Map<number, (reply: Reply | undefined, error?: Error) => void>();
  private idleTimer: NodeJS.Timeout | undefined;
  private ended = false;
  readonly path: string;
  private readonly onEnd: (c: SharedConnection) => void;

  constructor(path: string, onEnd: (c: SharedConnection) => void) {
    this.path = path;
    this.onEnd = onEnd;
    this.sock = connect(path);
    const splitter = replySplitter(
      path,
      (msg) => {
        if (typeof msg.id !== "number") return;
        const fn = this.waiting.get(msg.id);
        if (!fn) return; // a reply nobody waits for any more (aborted or timed out)
        this.release(msg.id);
        fn(msg);
      },
      (e) => this.end(e),
    );
    this.sock.on("data", (chunk: Buffer) => splitter.push(chunk));
    this.sock.on("error", (e: NodeJS.ErrnoException) =>
      this.end(new HolderUnavailableError(path, e.code ?? e.message, { cause: e })),
    );
    this.sock.on("close", () => this.end(undefined));
    this.sock.on("end", () => this.end(undefined));
  }

  /** Whether requests may still be sent on this connection. */
  get usable(): boolean {
    return !this.ended;
  }

  /**
   * Sends `line` (request `id`); `fn` gets the reply, or `undefined` with the connection's
   * error when it ended first (`undefined` error: the peer closed it).
   */
  send(id: number, line: string, fn: (reply: Reply | undefined, error?: Error) => void): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.waiting.size === 0) this.sock.ref();
    this.waiting.set(id, fn);
    this.sock.write(line);
  }

  /** Stops waiting for request `id` (answered, aborted or timed out). */
  release(id: number): void {
    if (!this.waiting.delete(id) || this.waiting.size > 0 || this.ended) return;
    this.sock.unref();
    this.idleTimer = setTimeout(() => this.end(undefined), IDLE_CLOSE_MS);
    this.idleTimer.unref();
  }

  /** Closes it now; requests in flight are sent once more on connections of their own. */
  close(): void {
    this.end(undefined);
  }

  private end(error: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.idleTimer);
    this.onEnd(this);
    this.sock.destroy();
    const fns = [...this.waiting.values()];
    this.waiting.clear();
    for (const fn of fns) fn(undefined, error);
  }
}

/**
 * Kept-open connections, at most one per socket path (a provider owns one pool and closes it
 * with itself). Idle connections never keep the process alive and close by themselves.
 */
export class ConnectionPool {
  private readonly conns = new Map<string, SharedConnection>();
  private closed = false;

  /**
   * The usable connection to `socket`, opened when there is none; `undefined` once the pool
   * is closed (a later request goes on a connection of its own, and nothing stays open).
   */
  get(socket: string): SharedConnection | undefined {
    if (this.closed) return undefined;
    let c = this.conns.get(socket);
    if (!c?.usable) {
      c = new SharedConnection(socket, (gone) => {
        if (this.conns.get(gone.path) === gone) this.conns.delete(gone.path);
      });
      this.conns.set(socket, c);
    }
    return c;
  }

  /** How many connections are open. */
  get size(): number {
    return this.conns.size;
  }

  /**
   * Closes every connection and keeps none open from now on (requests in flight, and later
   * ones, go on connections of their own). Idempotent.
   */
  close(): void {
    this.closed = true;
    for (const c of [...this.conns.values()]) c.close();
  }
}

/**
 * Splits a connection's bytes into the holder's reply lines: `onReply` gets each one parsed;
 * `onBad` a garbled or over-long line (the connection is then of no further use).
 */
function replySplitter(
  socket: string,
  onReply: (msg: Reply) => void,
  onBad: (e: HolderUnavailableError) => void,
): LineSplitter {
  return new LineSplitter(
    (line) => {
      let msg: Reply;
      try {
        msg = JSON.parse(line) as Reply;
      } catch {
        onBad(new HolderUnavailableError(socket, "garbled reply"));
        return;
      }
      onReply(msg);
    },
    () => onBad(new HolderUnavailableError(socket, "reply too long")),
  );
}

/** The settled outcome of a reply line: its result, or the holder's error. */
function fromReply<T>(msg: Reply): { ok: true; value: T } | { ok: false; error: HolderOpError } {
  if (msg.ok === true) return { ok: true, value: msg.result as T };
  const code = (typeof msg.error?.code === "string" ? msg.error.code : "internal") as HolderErrorCode;
  return { ok: false, error: new HolderOpError(code, String(msg.error?.message ?? "holder error")) };
}

/**
 * Sends one request and resolves with its result.
 * @throws HolderUnavailableError when nothing (or nothing timely) answers.
 * @throws HolderOpError when the holder rejects the request.
 * Aborting `signal` rejects with its reason and closes the request's own connection (the holder
 * drops any wait); with `reuse` the kept-open connection stays and a wait runs to its own timeout.
 */
export function holderRequest<O extends HolderOp>(
  socket: string,
  req: Extract<HolderRequest, { op: O }>,
  opts: RequestOptions,
): Promise<HolderResults[O]> {
  opts.signal?.throwIfAborted();
  const conn = opts.reuse?.get(socket);
  return conn ? sharedRequest(conn, socket, req, opts) : freshRequest(socket, req, opts);
}

/** The wire form of request `id`: one JSON line. */
function requestLine(req: HolderRequest, id: number, opts: RequestOptions): string {
  return `${JSON.stringify({ ...req, id, expect: opts.expect })}\n`;
}

/**
 * The deadline and cancellation of one request. The returned `settle(fn)` runs `cleanup` and
 * then `fn` for the first outcome only: a reply, `opts.signal` aborting (rejects with its
 * reason) or `opts.timeoutMs` passing (rejects with HolderUnavailableError "timeout").
 */
function settler(
  socket: string,
  opts: RequestOptions,
  reject: (e: unknown) => void,
  cleanup: () => void,
): (fn: () => void) => void {
  let settled = false;
  const settle = (fn: () => void) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
    cleanup();
    fn();
  };
  const onAbort = () => settle(() => reject(opts.signal?.reason));
  const timer = setTimeout(
    () => settle(() => reject(new HolderUnavailableError(socket, "timeout"))),
    opts.timeoutMs,
  );
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  return settle;
}

/** {@link holderRequest} on the kept-open connection; once more on a fresh one if it closes unanswered. */
function sharedRequest<O extends HolderOp>(
  conn: SharedConnection,
  socket: string,
  req: Extract<HolderRequest, { op: O }>,
  opts: RequestOptions,
): Promise<HolderResults[O]> {
  const id = ++nextId;
  const started = Date.now();
  return new Promise<HolderResults[O]>((resolve, reject) => {
    const settle = settler(socket, opts, reject, () => conn.release(id));
    conn.send(id, requestLine(req, id, opts), (msg, error) => {
      if (msg) {
        const out = fromReply<HolderResults[O]>(msg);
        settle(() => (out.ok ? resolve(out.value) : reject(out.error)));
        return;
      }
      // The connection ended unanswered. Refused/missing: nothing serves the socket (a fresh
      // connection would say the same). Otherwise ask once more on a connection of its own.
      const reason = error instanceof HolderUnavailableError ? error.reason : "closed";
      if (reason === "ENOENT" || reason === "ECONNREFUSED") {
        settle(() => reject(error));
        return;
      }
      const left = opts.timeoutMs - (Date.now() - started);
      settle(() =>
        freshRequest(socket, req, { ...opts, timeoutMs: Math.max(1, left) }).then(resolve, reject),
      );
    });
  });
}

/** {@link holderRequest} on a connection of its own. */
function freshRequest<O extends HolderOp>(
  socket: string,
  req: Extract<HolderRequest, { op: O }>,
  opts: RequestOptions,
): Promise<HolderResults[O]> {
  if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
  const id = ++nextId;
  return new Promise<HolderResults[O]>((resolve, reject) => {
    const sock = connect(socket);
    const settle = settler(socket, opts, reject, () => sock.destroy());
    const splitter = replySplitter(
      socket,
      (msg) => {
        if (msg.id !== id) return;
        const out = fromReply<HolderResults[O]>(msg);
        settle(() => (out.ok ? resolve(out.value) : reject(out.error)));
      },
      (e) => settle(() => reject(e)),
    );
    sock.on("connect", () => sock.write(requestLine(req, id, opts)));
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
