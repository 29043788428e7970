/**
 * The session holder: one detached Node process per provider root (`<stateDir>/subprocess`,
 * `<stateDir>/acp`) that runs every session's program in its own real pty and outlives the
 * gc process that started it. Per session it keeps the screen model, an output ring buffer,
 * a rotating raw log, last-activity time, metadata and the exit status, and serves them over
 * that session's private unix socket (see protocol.ts). A control socket creates sessions
 * (`create`, the spec travels in the request) and drops unreachable ones (`release`).
 * A session's program ending only marks that session exited; the process exits once its
 * last session is gone. Started by SubprocessProvider as `node holder.js <root>`.
 */
import {
  chmodSync,
  closeSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { createRequire } from "node:module";
import { connect, createServer, type Server, type Socket } from "node:net";
import { constants as osConstants } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { IPty } from "@lydell/node-pty";
import { describeError, InvalidNameError } from "../../base/errors.js";
import { validateMetaKey } from "../../base/names.js";
import { procStartTime, readStat } from "../../proc/process-table.js";
import type { AcpHost } from "../acp/host.js";
import { screenAwaitsChoice, screenLooksIdle } from "../screen/classify.js";
import { bindInSocketDir, releaseSocketDir } from "../socket-dir.js";
import { keyBytes } from "./keys.js";
import { appendRotating, ensurePrivateDir, holderSocketPath, writeFileAtomicSync } from "./layout.js";
import {
  type ExitInfo,
  type HolderErrorCode,
  type HolderRecord,
  type HolderRequest,
  type HolderResponse,
  type HolderResults,
  type HolderSpec,
  type HolderStatus,
  LineSplitter,
  PROTOCOL_VERSION,
} from "./protocol.js";
import { Screen } from "./screen.js";
import { killSession } from "./tree.js";

// CommonJS, loaded as such (an ES import would first scan its source for export names).
const pty = createRequire(import.meta.url)("@lydell/node-pty") as typeof import("@lydell/node-pty");

/** Pause between a paste and its Enter for full-screen programs, so Enter is not read as pasted. */
const SUBMIT_DELAY_MS = 120;
/** A write into the pty that has not drained by then fails the nudge. */
const WRITE_TIMEOUT_MS = 10_000;
/** Default quiet period for `waitIdle`. */
const IDLE_QUIET_MS = 1_000;
/** Output queued for an attached terminal beyond which it is disconnected (it stopped reading). */
const MAX_ATTACH_BACKLOG_BYTES = 16 * 1024 * 1024;
/** Grace between SIGTERM and SIGKILL when stopping the program. */
const STOP_GRACE_MS = 2_000;
/** A holder that received no session this long after it started exits. */
const FIRST_SESSION_TIMEOUT_MS = 15_000;

class OpError extends Error {
  readonly code: HolderErrorCode;
  constructor(code: HolderErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Last `capacity` bytes of output plus the running total (the `output` cursor). */
class OutputRing {
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
class RawLog {
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
    } catch {
      this.fd = undefined;
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

function signalName(n: number | undefined): string | null {
  if (!n) return null;
  for (const [name, num] of Object.entries(osConstants.signals)) if (num === n) return name;
  return `SIG${n}`;
}

/** Process-level diagnostics (stderr is `<root>/logs/holder.log`). */
function log(msg: string): void {
  process.stderr.write(`${new Date().toISOString()} holder[${process.pid}]: ${msg}\n`);
}

/** Foreground process group of the pty whose leader is `pid` (from /proc), or 0. */
function foregroundGroup(pid: number): number {
  const tpgid = readStat(pid)?.tpgid ?? 0;
  return Number.isInteger(tpgid) && tpgid > 0 ? tpgid : 0;
}

interface Conn {
  readonly sock: Socket;
  readonly splitter: LineSplitter;
  attached: boolean;
  /** Output that arrived while the attach repaint was being prepared. */
  pending: Buffer[] | undefined;
  readonly cleanups: Set<() => void>;
}

/** What a session needs from the process that holds it. */
interface SessionHost {
  /**
   * Called as the session stops serving, before its files and socket go (in the same turn of
   * the event loop, so no create of the same name comes between): frees its name at once. The
   * holder exits, if this was its last session, only once `drained` (its last notes written).
   */
  removed(session: Session, drained: Promise<void>): void;
  /**
   * Runs `fork` (synchronous: it forks the program's pty) in a turn of the event loop of its
   * own, one at a time, so a burst of starts (a whole city at once) does not hold up the
   * requests of running sessions; everything else of a start runs concurrently.
   */
  forkTurn<T>(fork: () => T): Promise<T>;
}

/**
 * One session inside the holder process: its program (pty or ACP agent), screen, output
 * ring, raw log, metadata and socket. Nothing it does reaches another session.
 */
class Session {
  readonly spec: HolderSpec;
  private readonly dir: string;
  private readonly host: SessionHost;
  private readonly screen: Screen;
  private readonly ring: OutputRing;
  private readonly log: RawLog;
  private term!: IPty;
  /** The ACP agent when the spec's mode is `acp` (then there is no pty). */
  private acp: AcpHost | undefined;
  private readonly server: Server;
  private readonly conns = new Set<Conn>();
  private readonly watchers = new Set<() => void>();
  private readonly meta = new Map<string, string>();
  private readonly startedAt = Date.now();
  private lastActivity = this.startedAt;
  private childStart: number | null = null;
  private exit: ExitInfo | null = null;
  private checkScheduled = false;
  private inputChain: Promise<unknown> = Promise.resolve();
  /** Diagnostic lines being appended, in order ({@link note}). */
  private notes: Promise<void> = Promise.resolve();
  private shuttingDown: Promise<void> | undefined;

  constructor(spec: HolderSpec, host: SessionHost) {
    this.spec = spec;
    this.dir = spec.dir;
    this.host = host;
    this.screen = new Screen(spec.cols, spec.rows, spec.scrollback);
    this.ring = new OutputRing(spec.ringBytes);
    this.log = new RawLog(spec.log, spec.logMaxBytes);
    this.server = createServer((sock) => this.accept(sock));
  }

  /**
   * Binds the socket, then starts the program (so a bind failure leaves no orphan), then
   * writes the record. No request is handled before the program exists.
   */
  async start(): Promise<void> {
    const [file, ...args] = this.spec.argv;
    if (!file) throw new Error("empty argv");
    // The ACP host module is loaded before the socket answers anything.
    const acpModule = this.spec.mode === "acp" ? await import("../acp/host.js") : undefined;
    await bindInSocketDir(this.spec.socket, () => this.bind(), ensurePrivateDir);
    this.server.on("error", (e) => this.note(`server error: ${describeError(e)}`));
    if (acpModule) {
      try {
        await this.startAcp(acpModule.AcpHost);
      } catch (e) {
        this.server.close();
        throw e;
      }
      return;
    }
    try {
      await this.host.forkTurn(() => {
        this.term = pty.spawn(file, args, {
          name: this.spec.env.TERM || "xterm-256color",
          cols: this.spec.cols,
          rows: this.spec.rows,
          cwd: this.spec.cwd,
          env: { ...this.spec.env },
          encoding: null,
        });
        this.childStart = procStartTime(this.term.pid);
        this.term.onData((d) => this.onOutput(Buffer.isBuffer(d) ? d : Buffer.from(d)));
        this.term.onExit(({ exitCode, signal }) => this.onExit(exitCode, signal));
      });
    } catch (e) {
      this.server.close();
      throw e;
    }
    this.writeRecord();
  }

  /** Listens on the session's socket, mode 0600. */
  private bind(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      // The socket must never be reachable by others, not even between bind and chmod;
      // the umask is restored before the program is spawned (it inherits ours).
      const old = process.umask(0o077);
      try {
        this.server.listen(this.spec.socket, () => {
          this.server.off("error", reject);
          try {
            chmodSync(this.spec.socket, 0o600);
          } catch (e) {
            this.server.close();
            reject(e);
            return;
          }
          resolve();
        });
      } finally {
        process.umask(old);
      }
    });
  }

  /** Spawns the ACP agent (pipes, no pty) through the ACP host module, loaded only in this mode. */
  private async startAcp(AcpHost: typeof import("../acp/host.js").AcpHost): Promise<void> {
    const host = new AcpHost(
      {
        name: this.spec.name,
        argv: this.spec.argv,
        env: this.spec.env,
        cwd: this.spec.cwd,
        mcpServers: this.spec.mcpServers,
      },
      {
        activity: () => {
          this.lastActivity = Date.now();
        },
        log: (chunk) => this.log.write(chunk),
        exit: (code, signal) => this.onExit(code ?? 0, signal ? osConstants.signals[signal] : undefined),
      },
    );
    this.acp = host;
    await host.start();
    this.childStart = procStartTime(host.pid);
    this.writeRecord();
  }

  /** Pid of the program: the pty's session leader, or the ACP agent (its own session leader). */
  get childPid(): number {
    return this.acp ? this.acp.pid : (this.term?.pid ?? 0);
  }

  /**
   * Appends a diagnostic line to this session's holder log (`logs/<name>.holder.log`, rotated
   * at 1 MiB). The file I/O runs off the event loop, lines in order; {@link shutdown} waits
   * for them. Resolves when this line is written (or failed: it never rejects).
   */
  note(msg: string): Promise<void> {
    const line = `${new Date().toISOString()} holder[${process.pid}] ${this.spec.name}: ${msg}\n`;
    const path = this.spec.holderLog;
    this.notes = this.notes.then(() =>
      appendRotating(path, line).catch(() => undefined /* diagnostics never take the session down */),
    );
    return this.notes;
  }

  private record(): HolderRecord {
    return {
      protocol: PROTOCOL_VERSION,
      city: this.spec.city,
      name: this.spec.name,
      holderPid: process.pid,
      childPid: this.childPid,
      childStart: this.childStart,
      socket: this.spec.socket,
      workDir: this.spec.cwd,
      startedAt: this.startedAt,
      exit: this.exit,
    };
  }

  private writeRecord(): void {
    if (this.shuttingDown !== undefined) return;
    try {
      writeFileAtomicSync(join(this.dir, "session.json"), `${JSON.stringify(this.record())}\n`);
    } catch (e) {
      void this.note(`writing session.json: ${describeError(e)}`);
    }
  }

  private writeMeta(): void {
    writeFileAtomicSync(join(this.dir, "meta.json"), `${JSON.stringify(Object.fromEntries(this.meta))}\n`);
  }

  private get running(): boolean {
    return this.exit === null;
  }

  private onOutput(chunk: Buffer): void {
    this.lastActivity = Date.now();
    this.screen.write(chunk);
    this.ring.push(chunk);
    this.log.write(chunk);
    for (const c of this.conns) {
      if (!c.attached) continue;
      if (c.pending) c.pending.push(chunk);
      else if (c.sock.writableLength > MAX_ATTACH_BACKLOG_BYTES)
        c.sock.destroy(); // a terminal that stopped reading
      else c.sock.write(chunk);
    }
    this.scheduleCheck();
  }

  /** Runs the watchers once the screen has parsed what arrived so far (coalesced). */
  private scheduleCheck(): void {
    if (this.checkScheduled || this.watchers.size === 0) return;
    this.checkScheduled = true;
    void this.screen.flush().then(() => {
      this.checkScheduled = false;
      for (const w of [...this.watchers]) w();
    });
  }

  private onExit(exitCode: number, signal: number | undefined): void {
    const sig = signalName(signal);
    this.exit = { code: sig ? null : exitCode, signal: sig, at: Date.now() };
    void this.note(`program exited: code ${this.exit.code} signal ${this.exit.signal}`);
    this.writeRecord();
    for (const w of [...this.watchers]) w();
    void this.screen.flush().then(() => {
      for (const c of this.conns) {
        if (!c.attached) continue;
        const how = sig ? `signal ${sig}` : `exit ${exitCode}`;
        c.sock.end(`\r\n[gc: session ${this.spec.name} ended (${how})]\r\n`);
      }
    });
  }

  private accept(sock: Socket): void {
    const conn: Conn = {
      sock,
      attached: false,
      pending: undefined,
      cleanups: new Set(),
      splitter: new LineSplitter(
        (line) => this.onLine(conn, line),
        () => {
          this.reply(conn, { id: null, ok: false, error: { code: "bad_request", message: "line too long" } });
          sock.end();
        },
      ),
    };
    this.conns.add(conn);
    sock.on("data", (chunk: Buffer) => {
      if (conn.attached) {
        this.attachedInput(chunk);
        return;
      }
      if (!conn.splitter.push(chunk) && conn.attached) {
        const rest = conn.splitter.rest();
        if (rest.length > 0) this.attachedInput(rest);
      }
    });
    sock.on("error", () => {
      // the peer went away; close handles it
    });
    sock.on("close", () => {
      this.conns.delete(conn);
      for (const fn of conn.cleanups) fn();
      conn.cleanups.clear();
    });
  }

  private reply(conn: Conn, resp: HolderResponse): void {
    if (!conn.sock.destroyed && conn.sock.writable) conn.sock.write(`${JSON.stringify(resp)}\n`);
  }

  private onLine(conn: Conn, line: string): void {
    if (line.trim() === "") return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      this.reply(conn, { id: null, ok: false, error: { code: "bad_request", message: "invalid JSON" } });
      return;
    }
    const rec = (typeof msg === "object" && msg !== null ? msg : {}) as Record<string, unknown>;
    const id = typeof rec.id === "number" || typeof rec.id === "string" ? rec.id : null;
    if (id === null || typeof rec.op !== "string") {
      this.reply(conn, { id, ok: false, error: { code: "bad_request", message: "need id and op" } });
      return;
    }
    const expect = rec.expect as { city?: unknown; name?: unknown } | undefined;
    if (expect && (expect.city !== this.spec.city || expect.name !== this.spec.name)) {
      this.reply(conn, {
        id,
        ok: false,
        error: { code: "not_owner", message: `this holder serves ${this.spec.name} of ${this.spec.city}` },
      });
      return;
    }
    const req = rec as unknown as HolderRequest;
    if (req.op === "attach") {
      // Switch to raw mode before any further byte of this chunk is read as a request.
      conn.splitter.stop();
      conn.attached = true;
    }
    this.dispatch(conn, req).then(
      (result) => this.reply(conn, { id, ok: true, result }),
      (e: unknown) => {
        const code =
          e instanceof OpError ? e.code : e instanceof InvalidNameError ? "invalid_name" : "internal";
        this.reply(conn, { id, ok: false, error: { code, message: describeError(e) } });
        if (req.op === "attach") conn.sock.end();
      },
    );
  }

  private async dispatch(conn: Conn, req: HolderRequest): Promise<HolderResults[keyof HolderResults]> {
    if (this.shuttingDown !== undefined && req.op !== "status" && req.op !== "shutdown") {
      throw new OpError("shutting_down", "the session is stopping");
    }
    if (this.acp && req.op !== "status") {
      const r = await this.dispatchAcp(this.acp, conn, req);
      if (r !== undefined) return r;
    }
    switch (req.op) {
      case "status":
        return this.status();
      case "info":
        return { workDir: this.spec.cwd, env: { ...this.spec.env } };
      case "peek":
        await this.screen.flush();
        return { text: this.screen.peek(int(req.lines, "lines")) };
      case "screen":
        await this.screen.flush();
        return { text: this.screen.visibleText(), ...this.screen.terminalState() };
      case "paste":
        return this.paste(str(req.text, "text"));
      case "nudge":
        return this.nudge(str(req.text, "text"));
      case "keys":
        return this.keys(req.keys);
      case "interrupt":
        return this.interrupt();
      case "resize":
        return this.resize(int(req.cols, "cols"), int(req.rows, "rows"));
      case "clear":
        await this.screen.flush();
        this.screen.clear();
        this.lastActivity = Date.now(); // the screen changed: a reader's copy is stale
        return {};
      case "meta.get":
        validateMetaKey(str(req.key, "key"));
        return { value: this.meta.get(req.key) ?? null };
      case "meta.set":
        validateMetaKey(str(req.key, "key"));
        this.meta.set(req.key, str(req.value, "value"));
        this.writeMeta();
        return {};
      case "meta.remove":
        validateMetaKey(str(req.key, "key"));
        if (this.meta.delete(req.key)) this.writeMeta();
        return {};
      case "meta.list":
        return { meta: Object.fromEntries(this.meta) };
      case "waitReady":
        return {
          result: await this.waitReady(conn, str(req.prefix, "prefix"), int(req.timeoutMs, "timeoutMs")),
        };
      case "waitIdle":
        return {
          result: await this.waitIdle(
            conn,
            int(req.timeoutMs, "timeoutMs"),
            req.quietMs === undefined ? IDLE_QUIET_MS : int(req.quietMs, "quietMs"),
            req.prefix === undefined ? this.spec.readyPromptPrefix : str(req.prefix, "prefix"),
          ),
        };
      case "output": {
        const max = req.maxBytes === undefined ? 1024 * 1024 : int(req.maxBytes, "maxBytes");
        const r = this.ring.since(int(req.since, "since"), max);
        let start = 0;
        while (start < r.data.length && (r.data[start]! & 0xc0) === 0x80) start++;
        return {
          data: r.data.subarray(start).toString("utf8"),
          next: r.next,
          truncated: r.truncated,
          cols: this.screen.cols,
          rows: this.screen.rows,
        };
      }
      case "attach":
        return this.attach(conn, req.cols, req.rows);
      case "shutdown":
        await this.shutdown();
        return {};
      default:
        throw new OpError("unknown_op", `unknown op ${JSON.stringify((req as { op: unknown }).op)}`);
    }
  }

  /**
   * The operations an ACP session answers itself: the transcript for peek/screen, prompts for
   * nudge, `session/cancel` for interrupt, turn completion for waitIdle, and the `acp.*` ops.
   * `undefined` = the shared handling (status, info, metadata, shutdown).
   */
  private async dispatchAcp(
    acp: AcpHost,
    conn: Conn,
    req: HolderRequest,
  ): Promise<HolderResults[keyof HolderResults] | undefined> {
    const aborted = new AbortController();
    const drop = () => aborted.abort();
    conn.cleanups.add(drop);
    try {
      return await this.acpOp(acp, req, aborted.signal);
    } catch (e) {
      if (e instanceof OpError) throw e;
      throw new OpError("acp_error", describeError(e));
    } finally {
      conn.cleanups.delete(drop);
    }
  }

  private async acpOp(
    acp: AcpHost,
    req: HolderRequest,
    signal: AbortSignal,
  ): Promise<HolderResults[keyof HolderResults] | undefined> {
    switch (req.op) {
      case "peek":
        return { text: acp.peek(int(req.lines, "lines")) };
      case "screen":
        return { text: acp.peek(0) };
      case "clear":
        acp.clear();
        return {};
      case "nudge": {
        this.requireRunning();
        const text = str(req.text, "text");
        return { bytes: Buffer.byteLength(text), turn: acp.prompt(text) };
      }
      case "keys": {
        this.requireRunning();
        if (!Array.isArray(req.keys)) throw new OpError("bad_request", "keys must be an array of strings");
        for (const k of req.keys) {
          if (k !== "C-c" && k !== "Escape" && k !== "Enter")
            throw new OpError(
              "invalid_key",
              `an ACP session takes no raw key ${JSON.stringify(k)} (only C-c, Escape, Enter)`,
            );
        }
        for (const k of req.keys) {
          if (k === "Enter") acp.prompt("");
          else acp.cancel();
        }
        return { bytes: 0 };
      }
      case "interrupt":
        this.requireRunning();
        acp.cancel();
        return {};
      case "resize":
        return { cols: this.screen.cols, rows: this.screen.rows };
      case "output":
        return { data: "", next: 0, truncated: false };
      case "attach":
        throw new OpError("unsupported", "an ACP session has no terminal to attach to");
      case "waitReady":
        return {
          result: await acp.waitReady(str(req.prefix, "prefix"), int(req.timeoutMs, "timeoutMs"), signal),
        };
      case "waitIdle":
        return { result: await acp.waitIdle(int(req.timeoutMs, "timeoutMs"), signal) };
      case "acp.handshake":
        return { state: await acp.waitHandshake(int(req.timeoutMs, "timeoutMs"), signal) };
      case "acp.turns":
        return { turns: acp.turnsSince(int(req.since, "since")) };
      case "acp.waitTurn":
        return {
          turn: (await acp.waitTurn(int(req.turn, "turn"), int(req.timeoutMs, "timeoutMs"), signal)) ?? null,
        };
      case "acp.pending":
        return { interaction: acp.pending() ?? null };
      case "acp.respond":
        return {
          chosen: await acp.respond(
            str(req.action, "action"),
            req.requestId === undefined ? undefined : str(req.requestId, "requestId"),
          ),
        };
      default:
        return undefined;
    }
  }

  private status(): HolderStatus {
    return {
      ...this.record(),
      running: this.running,
      lastActivity: this.lastActivity,
      attached: [...this.conns].filter((c) => c.attached).length,
      cols: this.screen.cols,
      rows: this.screen.rows,
      outputBytes: this.ring.bytes,
      ...(this.acp ? { acp: this.acp.status() } : {}),
    };
  }

  /** Writes to the pty and resolves once the bytes reached the kernel. Serialized. */
  private writeInput(data: string | Buffer): Promise<void> {
    const sock = (this.term as unknown as { _socket?: Socket })._socket;
    const p = new Promise<void>((resolve, reject) => {
      if (!sock || typeof sock.write !== "function") {
        this.term.write(data as string);
        resolve();
        return;
      }
      const timer = setTimeout(
        () => reject(new OpError("write_failed", `input not accepted within ${WRITE_TIMEOUT_MS} ms`)),
        WRITE_TIMEOUT_MS,
      );
      sock.write(data, (err) => {
        clearTimeout(timer);
        if (err) reject(new OpError("write_failed", describeError(err)));
        else resolve();
      });
    });
    return p;
  }

  /** Runs `fn` after every earlier input operation finished, so inputs never interleave. */
  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.inputChain.then(fn, fn);
    this.inputChain = next.catch(() => undefined);
    return next;
  }

  private requireRunning(): void {
    if (!this.running) throw new OpError("not_running", "the program has exited");
  }

  /**
   * Types `text` as a terminal pastes it: inside `ESC[200~…ESC[201~` with newlines as CR when
   * the program enabled bracketed paste, else the characters as typed (a newline stays LF:
   * a line end for a line-reading program, Ctrl-J — a newline in the input, not Enter — for a
   * raw-mode one). No Enter: the caller confirms the text showed, then presses it.
   */
  private paste(text: string): Promise<HolderResults["paste"]> {
    return this.serialize(async () => {
      this.requireRunning();
      await this.screen.flush();
      const body = this.screen.bracketedPaste ? `\x1b[200~${text.replace(/\r?\n/g, "\r")}\x1b[201~` : text;
      if (body !== "") await this.writeInput(body);
      return { bytes: Buffer.byteLength(body) };
    });
  }

  private nudge(text: string): Promise<HolderResults["nudge"]> {
    return this.serialize(async () => {
      this.requireRunning();
      await this.screen.flush();
      if (screenAwaitsChoice(this.screen.visibleText())) {
        throw new OpError(
          "awaiting_choice",
          "a menu or dialog is waiting for a choice; typing would answer it",
        );
      }
      const paste = this.screen.bracketedPaste;
      const tui = paste || this.screen.alternateScreen;
      // Bracketed paste like a real terminal: newlines become CR inside the markers.
      const body = paste ? `\x1b[200~${text.replace(/\r?\n/g, "\r")}\x1b[201~` : text;
      if (!tui) {
        // A line-oriented program reads the same bytes either way: one write, one round trip.
        await this.writeInput(`${body}\r`);
      } else {
        await this.writeInput(body);
        await delay(SUBMIT_DELAY_MS);
        this.requireRunning();
        await this.writeInput("\r");
      }
      return { bytes: Buffer.byteLength(body) + 1 };
    });
  }

  private keys(keys: unknown): Promise<HolderResults["keys"]> {
    if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) {
      throw new OpError("bad_request", "keys must be an array of strings");
    }
    return this.serialize(async () => {
      this.requireRunning();
      await this.screen.flush();
      const modes = { applicationCursorKeys: this.screen.applicationCursorKeys };
      let bytes = "";
      for (const k of keys as string[]) {
        const b = keyBytes(k, modes);
        if (b === undefined) throw new OpError("invalid_key", `unknown key ${JSON.stringify(k)}`);
        bytes += b;
      }
      if (bytes !== "") await this.writeInput(bytes);
      return { bytes: Buffer.byteLength(bytes) };
    });
  }

  /**
   * Ctrl-C typed into the pty, as a terminal (and tmux's `C-c`) does: a program in cooked mode
   * gets SIGINT from the line discipline; a full-screen agent reading raw keys (Claude Code,
   * Gemini CLI) gets its own "cancel" key — a SIGINT signal would make those exit.
   */
  private async interrupt(): Promise<HolderResults["interrupt"]> {
    this.requireRunning();
    await this.serialize(() => this.writeInput("\x03"));
    return {};
  }

  private resize(cols: number, rows: number): HolderResults["resize"] {
    if (cols < 2 || rows < 2 || cols > 1000 || rows > 1000)
      throw new OpError("bad_request", "size out of range");
    if (cols !== this.screen.cols || rows !== this.screen.rows) {
      this.screen.resize(cols, rows);
      if (this.running) this.term.resize(cols, rows);
      this.lastActivity = Date.now(); // the screen reflowed: a reader's copy is stale
    }
    return { cols, rows };
  }

  /** Waits for `prefix` on screen, the program's exit, the deadline, or the caller leaving. */
  private waitReady(conn: Conn, prefix: string, timeoutMs: number): Promise<"ready" | "timeout" | "exited"> {
    return this.waitUntil(conn, timeoutMs, "timeout", () => {
      if (!this.running) return "exited";
      return this.screen.showsPrompt(prefix) ? "ready" : undefined;
    });
  }

  /**
   * Idle = no output for `quietMs`, no busy marker and no menu or dialog on screen, and,
   * when a prompt prefix is known, the prompt visible (the shared heuristics, screen/classify.ts).
   * Re-evaluated on output and when the quiet period would end; never polls.
   */
  private waitIdle(
    conn: Conn,
    timeoutMs: number,
    quietMs: number,
    prefix: string | undefined,
  ): Promise<"idle" | "timeout" | "gone"> {
    return this.waitUntil(conn, timeoutMs, "timeout", (again) => {
      if (!this.running) return "gone";
      const quietFor = Date.now() - this.lastActivity;
      if (quietFor < quietMs) {
        again(quietMs - quietFor + 5);
        return undefined;
      }
      return screenLooksIdle(this.screen.visibleText(), prefix) ? "idle" : undefined;
    });
  }

  /**
   * Resolves with `check()`'s first answer other than `undefined`, evaluated now, after
   * output is parsed, and when `check` asks `again(ms)`; with `onTimeout` at the deadline or
   * when the caller disconnects. Every timer is cleared on the way out.
   */
  private async waitUntil<T>(
    conn: Conn,
    timeoutMs: number,
    onTimeout: T,
    check: (again: (ms: number) => void) => T | undefined,
  ): Promise<T> {
    await this.screen.flush();
    return new Promise<T>((resolve) => {
      let done = false;
      let againTimer: NodeJS.Timeout | undefined;
      const again = (ms: number) => {
        clearTimeout(againTimer);
        againTimer = setTimeout(() => void this.screen.flush().then(watcher), ms);
      };
      const finish = (v: T) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearTimeout(againTimer);
        this.watchers.delete(watcher);
        conn.cleanups.delete(cancel);
        resolve(v);
      };
      const watcher = () => {
        if (done) return;
        const v = check(again);
        if (v !== undefined) finish(v);
      };
      const cancel = () => finish(onTimeout);
      const timer = setTimeout(cancel, Math.max(0, timeoutMs));
      this.watchers.add(watcher);
      conn.cleanups.add(cancel);
      watcher();
    });
  }

  private async attach(conn: Conn, cols: unknown, rows: unknown): Promise<HolderResults["attach"]> {
    this.requireRunning();
    if (typeof cols === "number" && typeof rows === "number")
      this.resize(int(cols, "cols"), int(rows, "rows"));
    // From here on output is queued for this client. The repaint is taken inside the parser
    // callback for everything that arrived before, so each byte shows exactly once.
    conn.pending = [];
    let repaint = "";
    await new Promise<void>((resolve) =>
      this.screen.afterParsed(() => {
        repaint = this.screen.repaint();
        resolve();
      }),
    );
    // The reply goes out first (the caller resolves with it), then the screen, then the
    // queued output, then live output.
    setImmediate(() => {
      const queued = conn.pending ?? [];
      conn.pending = undefined;
      if (conn.sock.destroyed) return;
      conn.sock.write(repaint);
      for (const chunk of queued) conn.sock.write(chunk);
      // A full-screen program repaints itself (with colours) on SIGWINCH.
      const pgid = foregroundGroup(this.term.pid);
      if (pgid > 0 && this.screen.alternateScreen) {
        try {
          process.kill(-pgid, "SIGWINCH");
        } catch {
          // gone
        }
      }
    });
    return { cols: this.screen.cols, rows: this.screen.rows };
  }

  private attachedInput(chunk: Buffer): void {
    if (!this.running) return;
    void this.serialize(() => this.writeInput(chunk)).catch(
      (e: unknown) => void this.note(`attach input: ${describeError(e)}`),
    );
  }

  /**
   * Kills the program's whole session, stops serving, removes the socket and session files,
   * and tells the host. Resolves once all of that is done; open connections (the caller's
   * reply included) are ended right after.
   */
  shutdown(): Promise<void> {
    this.shuttingDown ??= (async () => {
      void this.note("shutting down");
      await killSession(this.childPid, { graceMs: STOP_GRACE_MS, startTime: this.childStart });
      for (const w of [...this.watchers]) w();
      // Release waiters whose check still says "keep waiting".
      for (const c of this.conns) for (const fn of c.cleanups) fn();
      // The name is free before any connection (the caller's reply included) is ended: a
      // caller told the session is gone may start it again at once.
      this.host.removed(this, this.notes);
      this.close();
    })();
    return this.shuttingDown;
  }

  /** After a failed start: kills whatever program was spawned and stops serving. */
  async abandon(): Promise<void> {
    if (this.childPid > 0)
      await killSession(this.childPid, { graceMs: STOP_GRACE_MS, startTime: this.childStart }).catch(
        () => undefined,
      );
    this.close();
  }

  /**
   * Stops serving and removes this session's files (also after a failed start). Open
   * connections (a kept-open one of a provider, the caller's reply included) are ended right
   * after, so none keeps talking to a session that is gone.
   */
  close(): void {
    this.server.close();
    setImmediate(() => {
      for (const c of this.conns) c.sock.end();
    });
    try {
      unlinkSync(this.spec.socket);
    } catch {
      // already gone
    }
    releaseSocketDir(this.spec.socket);
    this.removeOwnFiles();
    this.log.close();
    this.screen.dispose();
  }

  /** Removes the session dir, but only while its record still describes this session. */
  private removeOwnFiles(): void {
    try {
      const rec = JSON.parse(readFileSync(join(this.dir, "session.json"), "utf8")) as Partial<HolderRecord>;
      if (rec.holderPid !== process.pid || rec.childPid !== this.childPid || rec.startedAt !== this.startedAt)
        return;
    } catch {
      return; // no record of this session: the dir belongs to whoever prepares it now
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function int(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isInteger(v))
    throw new OpError("bad_request", `${what} must be an integer`);
  return v;
}

function str(v: unknown, what: string): string {
  if (typeof v !== "string") throw new OpError("bad_request", `${what} must be a string`);
  return v;
}

/**
 * The holder process: its sessions by name and the control socket. Exits once the last
 * session is gone (or when none arrives within {@link FIRST_SESSION_TIMEOUT_MS}), closing
 * the control socket first so a late `create` is refused (`shutting_down`) and the caller
 * starts a new holder.
 */
class Holder implements SessionHost {
  private readonly root: string;
  private readonly socket: string;
  private readonly sessions = new Map<string, Session>();
  private readonly server: Server;
  private creating = 0;
  private exiting = false;
  /** Open `watch` connections. */
  private watchers = 0;
  /** The pty forks queued, one per turn of the event loop ({@link forkTurn}). */
  private forkChain: Promise<unknown> = Promise.resolve();

  constructor(root: string) {
    this.root = root;
    this.socket = holderSocketPath(root);
    this.server = createServer((sock) => this.accept(sock));
  }

  /** Binds the control socket (taking over a stale one). @throws when another holder serves it. */
  async listen(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.bind();
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt > 0) throw e;
        if (await answers(this.socket)) throw new Error(`another holder serves ${this.socket}`);
        rmSync(this.socket, { force: true });
      }
    }
    this.server.on("error", (e) => log(`control socket: ${describeError(e)}`));
    setTimeout(() => this.maybeExit(), FIRST_SESSION_TIMEOUT_MS).unref();
  }

  private bind(): Promise<void> {
    return bindInSocketDir(this.socket, () => this.listenOnce(), ensurePrivateDir);
  }

  private listenOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      const old = process.umask(0o077);
      try {
        this.server.listen(this.socket, () => {
          this.server.off("error", reject);
          try {
            chmodSync(this.socket, 0o600);
            resolve();
          } catch (e) {
            reject(e);
          }
        });
      } finally {
        process.umask(old);
      }
    });
  }

  forkTurn<T>(fork: () => T): Promise<T> {
    const forked = this.forkChain.then(() => new Promise<void>((r) => setImmediate(r))).then(fork);
    this.forkChain = forked.catch(() => undefined);
    return forked;
  }

  removed(session: Session, drained: Promise<void>): void {
    if (this.sessions.get(session.spec.name) === session) this.sessions.delete(session.spec.name);
    void drained.then(() => this.maybeExit());
  }

  /** Exits when no session is left and none is being created. */
  private maybeExit(): void {
    if (this.exiting || this.sessions.size > 0 || this.creating > 0) return;
    this.exiting = true;
    log("no sessions left: exiting");
    this.server.close();
    try {
      unlinkSync(this.socket);
    } catch {
      // gone
    }
    releaseSocketDir(this.socket);
    // Replies already written have reached the kernel; give slow peers a moment to read them.
    setTimeout(() => process.exit(0), 20);
  }

  /** Stops every session (SIGTERM/SIGINT to the holder); the last one's removal exits. */
  async shutdownAll(): Promise<void> {
    if (this.sessions.size === 0) this.maybeExit();
    await Promise.all([...this.sessions.values()].map((s) => s.shutdown()));
  }

  private accept(sock: Socket): void {
    const splitter = new LineSplitter(
      (line) => void this.onLine(sock, line),
      () => {
        reply(sock, { id: null, ok: false, error: { code: "bad_request", message: "line too long" } });
        sock.end();
      },
    );
    sock.on("data", (chunk: Buffer) => splitter.push(chunk));
    sock.on("error", () => undefined);
  }

  private async onLine(sock: Socket, line: string): Promise<void> {
    if (line.trim() === "") return;
    let rec: Record<string, unknown>;
    try {
      const msg = JSON.parse(line) as unknown;
      rec = (typeof msg === "object" && msg !== null ? msg : {}) as Record<string, unknown>;
    } catch {
      reply(sock, { id: null, ok: false, error: { code: "bad_request", message: "invalid JSON" } });
      return;
    }
    const id = typeof rec.id === "number" || typeof rec.id === "string" ? rec.id : null;
    try {
      if (id === null || typeof rec.op !== "string") throw new OpError("bad_request", "need id and op");
      reply(sock, { id, ok: true, result: await this.control(sock, rec) });
    } catch (e) {
      const code = e instanceof OpError ? e.code : "internal";
      reply(sock, { id, ok: false, error: { code, message: describeError(e) } });
    }
  }

  private hello(): HolderResults["hello"] {
    return {
      pid: process.pid,
      protocol: PROTOCOL_VERSION,
      sessions: this.sessions.size,
      watchers: this.watchers,
    };
  }

  private async control(sock: Socket, rec: Record<string, unknown>): Promise<unknown> {
    switch (rec.op) {
      case "watch": // the caller keeps the connection open: its close tells that we are gone
        this.watchers++;
        sock.once("close", () => this.watchers--);
        return this.hello();
      case "hello":
        return this.hello();
      case "create":
        return this.create(rec.spec as HolderSpec);
      case "release": {
        const s = this.sessions.get(str(rec.name, "name"));
        if (!s || s.spec.city !== str(rec.city, "city")) return { released: false };
        await s.shutdown();
        return { released: true };
      }
      default:
        throw new OpError("unknown_op", `unknown control op ${JSON.stringify(rec.op)}`);
    }
  }

  /** Starts one session from `spec`. @throws OpError `spawn_failed` (nothing left behind). */
  private async create(spec: HolderSpec): Promise<{ pid: number; childPid: number }> {
    if (this.exiting) throw new OpError("shutting_down", "the holder is exiting");
    if (typeof spec !== "object" || spec === null || typeof spec.name !== "string")
      throw new OpError("bad_request", "create needs a spec");
    if (spec.protocol !== PROTOCOL_VERSION)
      throw new OpError("bad_request", `spec protocol ${spec.protocol} != ${PROTOCOL_VERSION}`);
    if (dirname(spec.dir) !== join(this.root, "sessions"))
      throw new OpError("bad_request", `session dir ${spec.dir} is not under ${this.root}`);
    if (this.sessions.has(spec.name))
      throw new OpError("spawn_failed", `session ${spec.name} is still held (stop it first)`);
    const session = new Session(spec, this);
    this.sessions.set(spec.name, session);
    this.creating++;
    try {
      // Concurrent with other creates, but for the fork itself (see forkTurn): a burst of
      // starts must not hold up the requests of running sessions (status probes have deadlines).
      await session.start();
      void session.note("serving");
      return { pid: process.pid, childPid: session.childPid };
    } catch (e) {
      await session.note(`start failed: ${describeError(e)}`);
      this.sessions.delete(spec.name);
      await session.abandon();
      throw new OpError("spawn_failed", describeError(e));
    } finally {
      this.creating--;
      this.maybeExit();
    }
  }
}

function reply(sock: Socket, resp: HolderResponse): void {
  if (!sock.destroyed && sock.writable) sock.write(`${JSON.stringify(resp)}\n`);
}

/** True when something accepts connections on `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(path);
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });
}

async function main(): Promise<void> {
  const root = process.argv[2];
  if (!root) {
    log("usage: holder.js <provider root>");
    process.exit(2);
  }
  const holder = new Holder(root);
  try {
    await holder.listen();
  } catch (e) {
    log(`startup failed: ${describeError(e)}`);
    process.exit(3);
  }
  log(`serving ${root}`);
  const stop = () => void holder.shutdownAll();
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.on("SIGHUP", () => undefined);
  // One session's bug must not take the others down: log and carry on.
  process.on("uncaughtException", (e) => log(`uncaught: ${e.stack ?? describeError(e)}`));
  process.on("unhandledRejection", (e) => log(`unhandled rejection: ${describeError(e)}`));
}

await main();
