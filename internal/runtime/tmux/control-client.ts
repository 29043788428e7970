/**
 * One persistent tmux control-mode client (`tmux -C`) per socket: commands are written as
 * lines and matched, in order, to their `%begin … %end/%error` replies. The client keeps a
 * hidden keeper session so the server never exits empty (or attaches to one given session),
 * reconnects (re-creating server and keeper) after the server dies, and never leaks its
 * process. It runs over a {@link ControlTransport}: a local child process, or a stream into
 * a container or pod. Used by the tmux, docker and k8s providers.
 */

import { TmuxConnectionError, TmuxGenerationError, TmuxNoServerError } from "./errors.js";
import { gateFile, ServerGate } from "./gate.js";
import { type ControlEvent, ControlParser, type Notification, notifiesClients } from "./protocol.js";
import { commandLine, commandListLine } from "./quote.js";
import { type PendingReply, queueReplies } from "./replies.js";
import {
  CLIENT_OWNER_ENV,
  OWNER_TAG,
  serverListening,
  socketArgs,
  socketPath,
  type TmuxSocket,
} from "./server.js";
import { type ControlStream, type ControlTransport, localTransport } from "./transport.js";
import { raceAbort, settlesWithin, TIMED_OUT, withTimeout } from "./waits.js";

/** Default deadline for one command's reply. */
export const COMMAND_TIMEOUT_MS = 10_000;
/** Default deadline for starting the client (and, if needed, the server). */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Name of the hidden session that keeps the server alive; gc names cannot start with `_`. */
export const KEEPER_SESSION = "_gc_keeper";
const CLOSE_GRACE_MS = 1_000;
const CONNECT_ATTEMPTS = 3;
/** Default {@link ControlClientOptions.wedgedAfterMs}. */
export const WEDGED_AFTER_MS = 60_000;

let unsharedGates = 0;

/** Options for {@link ControlClient}. */
export interface ControlClientOptions {
  /** The server's socket; absent = tmux's default socket (where the transport runs tmux). */
  readonly socket?: TmuxSocket | undefined;
  /** Where the `tmux -C` client runs. Default: a local child process ({@link localTransport}). */
  readonly transport?: ControlTransport | undefined;
  /**
   * Attach to this existing session (`attach-session -f ignore-size`) instead of creating
   * the keeper: the client then receives `%output` of its pane, never starts a server, and
   * ends (`%exit`) with the session.
   */
  readonly attach?: string | undefined;
  /** tmux binary. Default `tmux`. */
  readonly tmuxPath?: string | undefined;
  /** Hidden session the client attaches to. Default {@link KEEPER_SESSION}. */
  readonly keeper?: string | undefined;
  readonly commandTimeoutMs?: number | undefined;
  readonly connectTimeoutMs?: number | undefined;
  /** Environment of the client process, and of the server when this client starts it. */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** Commands (argv) run after every (re)connect before any other command. Failures fail the connect. */
  readonly setup?: readonly (readonly string[])[] | undefined;
  /**
   * Runs at every (re)connect, alongside the first attempt (a client it started counts as
   * live, never as orphaned), and is over before the connect settles: the provider removes
   * orphaned control clients of this socket there ({@link orphanClients}). Its failure does
   * not fail the connect.
   */
  readonly beforeConnect?: (() => Promise<void>) | undefined;
  /**
   * How long the server may stay silent (every command and connect timing out, not one line
   * of output) before it counts as wedged. Default {@link WEDGED_AFTER_MS}.
   */
  readonly wedgedAfterMs?: number | undefined;
  /**
   * Called once per silence when the server is wedged; the provider kills the server
   * ({@link killServer}) and resolves whether it did. When it did, the lost-connection
   * listeners run, so the sessions are recovered as an infrastructure loss.
   */
  readonly onWedged?: (() => Promise<boolean>) | undefined;
  /**
   * The server's identify gate ({@link ServerGate}): its key within this process and the
   * file that carries it across processes. Default for a local client: the socket's path and
   * the file beside it; a remote client without one gets a gate of its own (no protection).
   */
  readonly gate?: { readonly key: string; readonly file?: string | undefined } | undefined;
}

/** Options for {@link ControlClient.command}. */
export interface CommandOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
  /**
   * Run again, once, on a fresh connection when the connection was lost before the reply.
   * Only for commands that are harmless to repeat (queries).
   */
  readonly retry?: boolean | undefined;
  /**
   * When no server is running: start one (default true), or reject with
   * {@link TmuxNoServerError} without starting anything (for read-only operations).
   */
  readonly create?: boolean | undefined;
  /**
   * Only run on the connection with this {@link ControlClient.generation}; otherwise reject
   * with {@link TmuxGenerationError} without sending. For commands that target session ids
   * learnt earlier: ids are only meaningful on the server they came from.
   */
  readonly generation?: number | undefined;
}

interface Conn {
  readonly stream: ControlStream;
  readonly parser: ControlParser;
  readonly pending: PendingReply[];
  readonly exited: Promise<void>;
  readonly stderr: string[];
  dead: boolean;
  gen: number;
  /** Whether the client process currently keeps Node alive (see updateRef). */
  refed: boolean;
  /** Setup commands written whose replies are not in yet (queries may be queued behind them). */
  setupLeft: number;
  /** Command lines not yet written: those of one turn of the event loop go in one write. */
  outbox: string;
}

/**
 * Queues command line `line` on `conn`: the lines queued while the current callbacks and
 * their promise continuations run (a pass's starts, a batch of replies' follow-ups) reach
 * the client in one write, once they are done. Each write wakes the tmux server; at 50
 * concurrent starts, one write per command was a tenth of the controller's CPU. Order is
 * kept, so replies still match their commands in order.
 */
function post(conn: Conn, line: string): void {
  if (conn.outbox === "") process.nextTick(flush, conn);
  conn.outbox += `${line}\n`;
}

/** Writes the lines queued on `conn` ({@link post}), unless it is dead. */
function flush(conn: Conn): void {
  const text = conn.outbox;
  conn.outbox = "";
  if (text !== "" && !conn.dead) conn.stream.write(text);
}

/**
 * A control-mode connection to one tmux server. Safe for concurrent use: commands are
 * pipelined and each caller gets its own reply. {@link close} releases the client process
 * (the server and its sessions keep running).
 */
export class ControlClient {
  private readonly opts: ControlClientOptions;
  private readonly transport: ControlTransport;
  private readonly gate: ServerGate;
  private conn: Conn | undefined;
  private connecting: Promise<Conn> | undefined;
  /**
   * The connection being set up: identified, its setup commands written, their replies not
   * all in. Queries may go out on it behind the setup ({@link ensureIdentified}).
   */
  private identified: Conn | undefined;
  /** Queries waiting for a connection to be {@link identified}. */
  private readonly identifiedWaiters = new Set<(conn: Conn) => void>();
  private closed = false;
  private gen = 0;
  private versionText = "";
  private readonly listeners = new Set<(n: Notification) => void>();
  private readonly lostListeners = new Set<() => void>();
  /** When the oldest unanswered request of the current silence was sent; `undefined` while the server talks. */
  private silentSince: number | undefined;

  constructor(opts: ControlClientOptions) {
    this.opts = opts;
    this.transport =
      opts.transport ??
      localTransport({
        tmuxPath: opts.tmuxPath ?? "tmux",
        env: { ...(opts.env ?? process.env), [CLIENT_OWNER_ENV]: OWNER_TAG },
        serverListening: () => serverListening(this.socketPath),
      });
    const local = socketPath(opts.socket ?? { name: "default" }, opts.env ?? process.env);
    this.gate = opts.gate
      ? ServerGate.of(opts.gate.key, opts.gate.file)
      : opts.transport
        ? ServerGate.of(`unshared:${++unsharedGates}`, undefined)
        : ServerGate.of(local, gateFile(local));
  }

  /**
   * Runs `fn` holding the server's identify gate shared: for work outside this client that
   * makes tmux notify control clients (killing other control clients).
   */
  gated<T>(fn: () => Promise<T>): Promise<T> {
    return this.gate.shared(fn);
  }

  /**
   * Increments on every successful (re)connect. State learnt from the server (session ids)
   * is only valid within one generation: a reconnect may mean a new server.
   */
  get generation(): number {
    return this.gen;
  }

  /** tmux version reported by the server at the last connect (e.g. `3.3a`); "" before. */
  get version(): string {
    return this.versionText;
  }

  /** Pid of the live client process, if connected. */
  get pid(): number | undefined {
    return this.conn && !this.conn.dead ? this.conn.stream.pid : undefined;
  }

  /** Subscribes to notifications (`sessions-changed`, `exit`, `output`, …). Returns the unsubscribe. */
  onNotification(fn: (n: Notification) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Subscribes to the loss of an established connection that this client did not close (the
   * server exited or was killed, the client process died). Returns the unsubscribe.
   */
  onConnectionLost(fn: () => void): () => void {
    this.lostListeners.add(fn);
    return () => this.lostListeners.delete(fn);
  }

  /** Connects now, starting the server if needed (otherwise the first command does). @throws TmuxConnectionError. */
  async connect(signal?: AbortSignal): Promise<void> {
    await this.ensure(signal, true);
  }

  /** Absolute path of the server socket ("" for the default socket of a remote transport). */
  get socketPath(): string {
    return this.opts.socket ? socketPath(this.opts.socket, this.opts.env ?? process.env) : "";
  }

  /**
   * Runs one tmux command (argv; quoted by {@link commandLine}) and resolves with its
   * output lines.
   * @throws TmuxCommandError when tmux answers `%error`.
   * @throws TmuxConnectionError when the server cannot be reached or the connection drops.
   * @throws OperationTimeoutError past the deadline (the connection is then recycled).
   * Aborting `signal` rejects with its reason.
   */
  async command(argv: readonly string[], opts: CommandOptions = {}): Promise<string[]> {
    const line = commandLine(argv);
    for (let attempt = 0; ; attempt++) {
      opts.signal?.throwIfAborted();
      // Connected: send at once (no extra promise turn per command). A query (harmless to
      // repeat, notifying no client) goes out right behind the setup of a new connection.
      const query = opts.retry === true && opts.generation === undefined && !notifiesClients(argv);
      const conn =
        this.live() ??
        (await (query
          ? this.ensureIdentified(opts.signal, opts.create ?? true)
          : this.ensure(opts.signal, opts.create ?? true)));
      opts.signal?.throwIfAborted();
      if (opts.generation !== undefined && conn.gen !== opts.generation) {
        throw new TmuxGenerationError(opts.generation, conn.gen);
      }
      try {
        if (!notifiesClients(argv)) return await this.send(conn, line, argv[0]!, opts);
        return await this.gate.shared(() => this.send(conn, line, argv[0]!, opts));
      } catch (e) {
        if (
          e instanceof TmuxConnectionError &&
          !(e instanceof TmuxNoServerError) &&
          opts.generation === undefined &&
          opts.retry &&
          attempt === 0 &&
          !this.closed
        ) {
          continue;
        }
        throw e;
      }
    }
  }

  /**
   * Runs several commands as ONE tmux command list (one line, `;`-separated): the server
   * executes the whole list in one step, so no client death can leave it half done, and it
   * stops at the first failing command (tmux drops the rest of the group). Resolves with each
   * command's output lines. Never retried (lists are meant for mutations).
   * @throws TmuxCommandError for the first command tmux answers with `%error` (later ones did not run).
   * @throws TmuxConnectionError / OperationTimeoutError as {@link command}.
   * Aborting `signal` rejects only before the list is sent (while connecting); a sent list
   * is awaited, so the caller sees what it did and can undo it.
   */
  async commandList(argvs: readonly (readonly string[])[], opts: CommandOptions = {}): Promise<string[][]> {
    if (argvs.length === 0) return [];
    const line = commandListLine(argvs);
    opts.signal?.throwIfAborted();
    const conn = await this.ensure(opts.signal, opts.create ?? true);
    opts.signal?.throwIfAborted();
    if (opts.generation !== undefined && conn.gen !== opts.generation) {
      throw new TmuxGenerationError(opts.generation, conn.gen);
    }
    // Once sent, the server runs the list whatever this client does; rejecting on an abort
    // now would hide a mutation that happens anyway (e.g. a created, tagged session).
    const names = argvs.map((a) => a[0]!);
    const sendOpts = { ...opts, signal: undefined };
    if (!argvs.some(notifiesClients)) return this.sendList(conn, line, names, sendOpts);
    return this.gate.shared(() => this.sendList(conn, line, names, sendOpts));
  }

  /** Ends the client process (not the server). Pending commands reject. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const conn = this.conn ?? (await this.connecting?.catch(() => undefined));
    if (!conn) return;
    if (conn.dead) {
      await conn.exited;
      return;
    }
    // The client leaving makes tmux notify the others: not while one identifies.
    await this.gate.shared(async () => {
      flush(conn);
      conn.stream.end();
      if (await settlesWithin(conn.exited, CLOSE_GRACE_MS)) return;
      conn.stream.kill();
      await settlesWithin(conn.exited, CLOSE_GRACE_MS);
    });
  }

  /** The established connection, when there is one and the client is open. */
  private live(): Conn | undefined {
    return !this.closed && this.conn && !this.conn.dead ? this.conn : undefined;
  }

  private async ensure(signal: AbortSignal | undefined, create: boolean): Promise<Conn> {
    if (this.closed) throw new TmuxConnectionError("control client is closed");
    if (this.conn && !this.conn.dead) return this.conn;
    // Attaching a control client always starts a server, so look before connecting.
    const listening = this.transport.serverListening;
    if (!create && !this.connecting && listening && !(await listening())) {
      throw new TmuxNoServerError(this.socketPath);
    }
    if (this.conn && !this.conn.dead) return this.conn;
    this.connecting ??= this.connectWithRetries().finally(() => {
      this.connecting = undefined;
    });
    if (!signal) return this.connecting;
    return raceAbort(this.connecting, signal);
  }

  /**
   * {@link ensure} for a query: resolves with the connection as soon as it has identified and
   * its setup commands are written (tmux runs them first: the query sees the setup done),
   * without waiting for their replies. A setup that fails destroys the connection, which
   * fails the query with a connection error (a query is retried once on a fresh one).
   */
  private ensureIdentified(signal: AbortSignal | undefined, create: boolean): Promise<Conn> {
    const early = this.identified;
    if (early && !early.dead && !this.closed) return Promise.resolve(early);
    const full = this.ensure(signal, create);
    let waiter: ((conn: Conn) => void) | undefined;
    const identified = new Promise<Conn>((resolve) => {
      waiter = resolve;
      this.identifiedWaiters.add(resolve);
    });
    return Promise.race([full, identified]).finally(() => {
      if (waiter) this.identifiedWaiters.delete(waiter);
    });
  }

  private async connectWithRetries(): Promise<Conn> {
    // Runs while the first attempt's client starts (its /proc scan is milliseconds of CPU on
    // every CLI command), and is over before the connect settles.
    const before = this.opts.beforeConnect?.().catch(() => undefined);
    try {
      let last: unknown;
      for (let i = 0; i < CONNECT_ATTEMPTS; i++) {
        if (this.closed) break;
        try {
          const conn = await this.connectOnce();
          if (this.closed) {
            const err = new TmuxConnectionError("control client is closed");
            this.destroy(conn, err);
            throw err;
          }
          this.conn = conn;
          return conn;
        } catch (e) {
          last = e;
          // Two gc processes creating the keeper at once: the loser's client exits; retry.
        }
      }
      throw last instanceof TmuxConnectionError
        ? last
        : new TmuxConnectionError(`cannot connect to tmux: ${String(last)}`, { cause: last });
    } finally {
      await before;
    }
  }

  private async connectOnce(): Promise<Conn> {
    const first = this.opts.attach
      ? ["attach-session", "-f", "ignore-size", "-t", this.opts.attach]
      : [
          "new-session",
          "-A",
          "-s",
          this.opts.keeper ?? KEEPER_SESSION,
          "-x",
          "80",
          "-y",
          "24",
          "--",
          "sleep",
          "2147483647",
        ];
    const args = [
      "-u",
      ...(this.opts.socket ? socketArgs(this.opts.socket) : []),
      "-f",
      "/dev/null",
      "-C",
      ...first,
    ];
    // From its spawn to its first reply the client identifies: nothing may make tmux notify
    // control clients meanwhile (see gate.ts).
    const release = await this.gate.exclusive();
    let markExited!: () => void;
    const exited = new Promise<void>((r) => {
      markExited = r;
    });
    const parser = new ControlParser();
    const pending: PendingReply[] = [];
    const stderr: string[] = [];
    // Filled in once the stream is open; events before that only reach these buffers.
    let conn: Conn | undefined;
    // Events that arrive before the handler is set wait here.
    const early: ControlEvent[] = [];
    let onEvent: (ev: ControlEvent) => void = (ev) => early.push(ev);
    let onClose: (why: string) => void = () => undefined;
    let closedEarly: string | undefined;
    const timeoutMs = this.timeout("connect");
    const sentAt = Date.now();
    const opening = this.transport.open(args, {
      data: (chunk) => {
        for (const ev of parser.write(chunk)) onEvent(ev);
      },
      stderr: (b) => {
        if (stderr.length < 20) stderr.push(b.toString("utf8"));
      },
      close: (why) => {
        markExited();
        if (conn) onClose(why);
        else closedEarly = why;
      },
    });
    let stream: ControlStream;
    try {
      stream = await withTimeout(opening, timeoutMs);
    } catch (e) {
      if (e === TIMED_OUT) {
        void opening
          .then(
            async (s) => {
              s.kill();
              await settlesWithin(exited, CLOSE_GRACE_MS);
            },
            () => undefined,
          )
          .finally(release);
        this.noAnswer(sentAt);
        throw new TmuxConnectionError(`no answer from tmux within ${timeoutMs} ms`);
      }
      release();
      throw e instanceof TmuxConnectionError
        ? e
        : new TmuxConnectionError(`cannot run tmux: ${e instanceof Error ? e.message : String(e)}`, {
            cause: e,
          });
    }
    const c: Conn = {
      stream,
      parser,
      pending,
      exited,
      stderr,
      dead: false,
      gen: 0,
      refed: true,
      outbox: "",
      setupLeft: 0,
    };
    conn = c;
    return new Promise<Conn>((resolve, reject) => {
      let ready = false;
      let connected = false;
      const timer = setTimeout(() => {
        // The gate opens once the killed client is gone (it may have attached by now).
        stream.kill();
        void settlesWithin(exited, CLOSE_GRACE_MS).then(release);
        fail(new TmuxConnectionError(`no answer from tmux within ${timeoutMs} ms`), false);
        this.noAnswer(sentAt);
      }, timeoutMs);
      const fail = (e: unknown, open = true) => {
        clearTimeout(timer);
        if (open) release();
        if (!ready) {
          ready = true; // settled
          reject(e);
        }
      };
      onEvent = (ev) => {
        this.silentSince = undefined;
        if (ev.type === "notification") {
          for (const fn of this.listeners) fn(ev);
          return;
        }
        if ((ev.flags & 1) === 0) {
          // The reply to the client's own first command: identified, connected (or refused).
          release();
          if (!ev.ok) {
            fail(
              new TmuxConnectionError(`tmux: ${ev.lines.join(" ") || "cannot attach the control client"}`),
            );
            return;
          }
          void this.finishConnect(c).then(
            () => {
              clearTimeout(timer);
              if (!ready) {
                ready = true;
                connected = true;
                resolve(c);
              }
            },
            (e: unknown) => {
              fail(e);
              this.destroy(c, new TmuxConnectionError("setup failed"));
            },
          );
          return;
        }
        const entry = c.pending[0];
        if (!entry) {
          // A reply nobody asked for: framing can no longer be trusted.
          this.destroy(c, new TmuxConnectionError("unexpected reply from tmux; connection recycled"));
          return;
        }
        const setupReply = c.setupLeft > 0;
        if (setupReply) c.setupLeft--;
        if (entry.settle(ev.ok, ev.lines)) c.pending.shift();
        // A failed setup fails the connection at once: no query queued behind it is answered.
        if (setupReply && !ev.ok) {
          this.destroy(c, new TmuxConnectionError(`setup failed: tmux ${entry.name}: ${ev.lines.join(" ")}`));
          return;
        }
        this.updateRef(c);
      };
      onClose = (how) => {
        const why = c.stderr.join("").trim() || how || "tmux client exited";
        const err = new TmuxConnectionError(`connection lost: ${why}`);
        const lost = connected && !c.dead && !this.closed;
        this.destroy(c, err, true);
        fail(err);
        if (lost) for (const fn of this.lostListeners) fn();
      };
      for (const ev of early.splice(0)) onEvent(ev);
      if (closedEarly !== undefined) onClose(closedEarly);
    });
  }

  private async finishConnect(conn: Conn): Promise<void> {
    const setup = [
      ["display-message", "-p", "#{version}"],
      // A server this client started inherited the tag: keep it out of every session.
      ["set-environment", "-g", "-u", CLIENT_OWNER_ENV],
      ...(this.opts.setup ?? []),
    ];
    conn.setupLeft = setup.length;
    const written = Promise.all(setup.map((argv) => this.send(conn, commandLine(argv), argv[0]!, {}, true)));
    // Written: tmux runs them before anything written after. Queries may go out now.
    conn.gen = ++this.gen;
    this.identified = conn;
    for (const w of [...this.identifiedWaiters]) w(conn);
    this.identifiedWaiters.clear();
    try {
      const replies = await written;
      this.versionText = replies[0]?.[0]?.trim() ?? "";
    } finally {
      if (this.identified === conn) this.identified = undefined;
    }
    this.updateRef(conn);
  }

  private async send(
    conn: Conn,
    line: string,
    name: string,
    opts: CommandOptions,
    duringConnect = false,
  ): Promise<string[]> {
    const [out] = await this.sendList(conn, line, [name], opts, duringConnect);
    return out ?? [];
  }

  /** Writes one line holding `names.length` commands and collects one reply block per command. */
  private sendList(
    conn: Conn,
    line: string,
    names: readonly string[],
    opts: CommandOptions,
    duringConnect = false,
  ): Promise<string[][]> {
    const name = names.join(" ; ");
    if (conn.dead) return Promise.reject(new TmuxConnectionError("connection lost"));
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
    return queueReplies(conn.pending, names, {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs ?? this.timeout("command"),
      onTimeout: (sentAt) => {
        // No reply in time: the server is wedged or the stream is out of step. Start over.
        this.destroy(conn, new TmuxConnectionError(`connection recycled after tmux ${name} timed out`));
        this.noAnswer(sentAt);
      },
      send: () => {
        if (!duringConnect) this.updateRef(conn);
        post(conn, line);
      },
    });
  }

  /**
   * Retires a connection at once: no new command is written to it, every pending one
   * rejects with `err`, and the client process is killed. Idempotent.
   */
  private destroy(conn: Conn, err: TmuxConnectionError, exited = false): void {
    if (this.conn === conn) this.conn = undefined;
    if (conn.dead) return;
    conn.dead = true;
    for (const e of conn.pending.splice(0)) e.fail(err);
    if (exited) return;
    // Its exit makes tmux notify the other control clients: not while one identifies.
    void this.gate
      .shared(async () => {
        conn.stream.kill();
        await settlesWithin(conn.exited, CLOSE_GRACE_MS);
      })
      .catch(() => conn.stream.kill());
  }

  /** While nothing is pending, the client process must not keep Node alive. */
  private updateRef(conn: Conn): void {
    if (conn.dead) return;
    const busy = conn.pending.length > 0;
    if (conn.refed === busy) return;
    conn.refed = busy;
    conn.stream.ref(busy);
  }

  /**
   * Records a request sent at `sentAt` that got no answer in time. Once the server has been
   * silent for `wedgedAfterMs` (no output of any kind since the oldest unanswered request),
   * `onWedged` runs once for this silence; when it killed the server, the lost-connection
   * listeners run.
   */
  private noAnswer(sentAt: number): void {
    this.silentSince = Math.min(this.silentSince ?? sentAt, sentAt);
    const onWedged = this.opts.onWedged;
    if (!onWedged || Date.now() - this.silentSince < (this.opts.wedgedAfterMs ?? WEDGED_AFTER_MS)) return;
    this.silentSince = undefined;
    void onWedged().then(
      (killed) => {
        if (killed && !this.closed) for (const fn of this.lostListeners) fn();
      },
      () => undefined,
    );
  }

  private timeout(kind: "command" | "connect"): number {
    return kind === "command"
      ? (this.opts.commandTimeoutMs ?? COMMAND_TIMEOUT_MS)
      : (this.opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS);
  }
}
