/**
 * One session inside the holder process (holder-process.ts): its program — in a pty of the
 * holder's own, or run by a plugged-in {@link HolderMode} (holder-mode.ts) — its screen,
 * output ring, raw log, metadata and private unix socket (protocol.ts), and the requests it
 * serves there. Nothing it does reaches another session.
 */
import { readFileSync, rmSync, unlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import type { IPty } from "@lydell/node-pty";
import { describeError, InvalidNameError } from "../../base/errors.js";
import { validateMetaKey } from "../../base/names.js";
import { signalName } from "../../proc/kill.js";
import { procStartTime, readStartTime, readStat } from "../../proc/process-table.js";
import { screenLooksIdle } from "../screen/classify.js";
import { bindInSocketDir, releaseSocketDir } from "../socket-dir.js";
import { PtyInput } from "./holder-input.js";
import { type HolderMode, int, type ModeProgram, OpError, str } from "./holder-mode.js";
import { NotesLog, OutputRing, RawLog } from "./holder-output.js";
import { ensurePrivateDir, writeFileAtomicSync } from "./layout.js";
import {
  type ExitInfo,
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

/** Default quiet period for `waitIdle`. */
const IDLE_QUIET_MS = 1_000;
/** Output queued for an attached terminal beyond which it is disconnected (it stopped reading). */
const MAX_ATTACH_BACKLOG_BYTES = 16 * 1024 * 1024;
/** Grace between SIGTERM and SIGKILL when stopping the program. */
const STOP_GRACE_MS = 2_000;

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
export interface SessionHost {
  /** The holding process's control socket (recorded, for a `release` of this session). */
  readonly controlSocket: string;
  /**
   * Called as the session stops serving, its notes written, before its files and socket go
   * (in the same turn of the event loop, so no create of the same name comes between): frees
   * its name at once and, if this was the holder's last session, closes the control socket,
   * so the caller's reply can only arrive once the holder is exiting.
   */
  removed(session: Session): void;
  /**
   * Runs `fork` (synchronous: it forks the program's pty) in a turn of the event loop of its
   * own, one at a time, so a burst of starts (a whole city at once) does not hold up the
   * requests of running sessions; everything else of a start runs concurrently.
   */
  forkTurn<T>(fork: () => T): Promise<T>;
}

/**
 * One session inside the holder process: its program (in a pty, or run by its mode), screen,
 * output ring, raw log, metadata and socket. Nothing it does reaches another session.
 */
export class Session {
  readonly spec: HolderSpec;
  private readonly dir: string;
  private readonly host: SessionHost;
  private readonly screen: Screen;
  private readonly ring: OutputRing;
  private readonly log: RawLog;
  /** Typing into the pty, one input operation at a time. */
  private readonly input: PtyInput;
  private term!: IPty;
  /** The spec's mode, when it is not the holder's own pty. */
  private readonly mode: HolderMode | undefined;
  /** The program as {@link mode} runs it (then there is no pty). */
  private program: ModeProgram | undefined;
  private readonly server: Server;
  private readonly conns = new Set<Conn>();
  private readonly watchers = new Set<() => void>();
  private readonly meta = new Map<string, string>();
  private readonly startedAt = Date.now();
  private lastActivity = this.startedAt;
  private childStart: number | null = null;
  private exit: ExitInfo | null = null;
  private checkScheduled = false;
  /** This session's diagnostics ({@link note}). */
  private readonly notes: NotesLog;
  private shuttingDown: Promise<void> | undefined;
  /** Ends the wait of the `create` reply ({@link firstLook}) when the session stops first. */
  private readonly createWaits = new Set<() => void>();

  /** `mode`: the spec's mode, when it is not the holder's own pty. */
  constructor(spec: HolderSpec, host: SessionHost, mode?: HolderMode) {
    this.spec = spec;
    this.dir = spec.dir;
    this.host = host;
    this.mode = mode;
    this.screen = new Screen(spec.cols, spec.rows, spec.scrollback);
    this.ring = new OutputRing(spec.ringBytes);
    this.log = new RawLog(spec.log, spec.logMaxBytes);
    this.notes = new NotesLog(spec.holderLog, spec.name);
    this.input = new PtyInput({
      term: () => this.term,
      screen: this.screen,
      requireRunning: () => this.requireRunning(),
    });
    this.server = createServer((sock) => this.accept(sock));
  }

  /**
   * Binds the socket, then starts the program (so a bind failure leaves no orphan), then
   * writes the record. No request is handled before the program exists.
   */
  async start(): Promise<void> {
    const [file, ...args] = this.spec.argv;
    if (!file) throw new Error("empty argv");
    await bindInSocketDir(this.spec.socket, () => this.bind(), ensurePrivateDir);
    this.server.on("error", (e) => this.note(`server error: ${describeError(e)}`));
    if (this.mode) {
      try {
        await this.startMode(this.mode);
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
        this.term.onData((d) => this.onOutput(Buffer.isBuffer(d) ? d : Buffer.from(d)));
        this.term.onExit(({ exitCode, signal }) => this.onExit(exitCode, signal));
      });
    } catch (e) {
      this.server.close();
      throw e;
    }
    // Off the event loop: a synchronous read could hold up every other session of the holder.
    this.childStart = await readStartTime(this.term.pid);
    this.writeRecord();
  }

  /** Listens on the session's socket, mode 0600. */
  private bind(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      // The socket is made 0600 by the umask of its bind (inside listen()): never reachable by
      // others, no chmod after; the umask is restored before the program (which inherits it) spawns.
      const old = process.umask(0o177);
      try {
        this.server.listen(this.spec.socket, () => {
          this.server.off("error", reject);
          resolve();
        });
      } finally {
        process.umask(old);
      }
    });
  }

  /** Starts the program through the spec's mode (no pty). */
  private async startMode(mode: HolderMode): Promise<void> {
    const program = mode.program(this.spec, {
      activity: () => {
        this.lastActivity = Date.now();
      },
      log: (chunk) => this.log.write(chunk),
      exit: (code, signal) => this.onExit(code, signal),
    });
    this.program = program;
    await program.start();
    this.childStart = procStartTime(program.pid);
    this.writeRecord();
  }

  /**
   * The `screen` op's `text` for the `create` reply; `undefined` in a mode (it answers `screen`).
   * `readyWaitMs` > 0 with a `readyPromptPrefix` in the spec: taken once the prompt is on screen,
   * the program exited or that many ms passed (a start's first look and wait in one request).
   */
  async firstLook(readyWaitMs = 0): Promise<string | undefined> {
    if (this.mode) return undefined;
    const prefix = this.spec.readyPromptPrefix;
    if (readyWaitMs > 0 && prefix?.trim()) await this.waitReady(this.createWaits, prefix, readyWaitMs);
    else await this.screen.flush();
    return this.screen.visibleText();
  }

  /** Pid of the program: the pty's session leader, or the mode's program (its own session leader). */
  get childPid(): number {
    return this.program ? this.program.pid : (this.term?.pid ?? 0);
  }

  /**
   * Appends a diagnostic line to this session's holder log (`logs/<name>.holder.log`, rotated
   * at 1 MiB). The file I/O runs off the event loop, lines in order; {@link shutdown} waits
   * for them. Resolves when this line is written (or failed: it never rejects).
   */
  note(msg: string): Promise<void> {
    return this.notes.note(msg);
  }

  /** {@link note}, written within a second: a burst of starts waits on no file write per start. */
  noteSoon(msg: string): void {
    this.notes.noteSoon(msg);
  }

  private record(): HolderRecord {
    return {
      protocol: PROTOCOL_VERSION,
      city: this.spec.city,
      name: this.spec.name,
      holderPid: process.pid,
      control: this.host.controlSocket,
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
    const sig = signal ? (signalName(signal) ?? `SIG${signal}`) : null;
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
    if (this.mode && this.program && req.op !== "status") {
      const r = await this.dispatchMode(this.mode, this.program, conn, req);
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
        return this.screen.capture();
      case "paste":
        return this.input.paste(str(req.text, "text"));
      case "nudge":
        return this.input.nudge(str(req.text, "text"));
      case "keys":
        return this.input.keys(req.keys);
      case "interrupt":
        return this.input.interrupt();
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
      case "waitReady": {
        const result = await this.waitReady(
          conn.cleanups,
          str(req.prefix, "prefix"),
          int(req.timeoutMs, "timeoutMs"),
        );
        // What the caller would ask next (is it alive, what does it show), as the wait ended.
        return this.mode ? { result } : { result, running: this.running, screen: this.screen.visibleText() };
      }
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
   * The operations the session's mode answers itself; `undefined` = the shared handling
   * (status, info, metadata, shutdown). A wait ends when the caller disconnects.
   */
  private async dispatchMode(
    mode: HolderMode,
    program: ModeProgram,
    conn: Conn,
    req: HolderRequest,
  ): Promise<HolderResults[keyof HolderResults] | undefined> {
    const aborted = new AbortController();
    const drop = () => aborted.abort();
    conn.cleanups.add(drop);
    try {
      const ctx = {
        signal: aborted.signal,
        requireRunning: () => this.requireRunning(),
        cols: this.screen.cols,
        rows: this.screen.rows,
      };
      return (await program.handle(req, ctx)) as HolderResults[keyof HolderResults] | undefined;
    } catch (e) {
      if (e instanceof OpError) throw e;
      throw new OpError(mode.errorCode, describeError(e));
    } finally {
      conn.cleanups.delete(drop);
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
      ...this.program?.status(),
    };
  }

  private requireRunning(): void {
    if (!this.running) throw new OpError("not_running", "the program has exited");
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

  /**
   * Waits for `prefix` on screen, the program's exit, the deadline, or the caller leaving (its
   * connection's `cleanups` run).
   */
  private waitReady(
    cleanups: Set<() => void>,
    prefix: string,
    timeoutMs: number,
  ): Promise<"ready" | "timeout" | "exited"> {
    return this.waitUntil(cleanups, timeoutMs, "timeout", () => {
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
    return this.waitUntil(conn.cleanups, timeoutMs, "timeout", (again) => {
      if (!this.running) return "gone";
      const quietFor = Date.now() - this.lastActivity;
      if (quietFor < quietMs) {
        again(quietMs - quietFor + 5);
        return undefined;
      }
      return screenLooksIdle(this.screen.styledText(), prefix) ? "idle" : undefined;
    });
  }

  /**
   * Resolves with `check()`'s first answer other than `undefined`, evaluated now, after
   * output is parsed, and when `check` asks `again(ms)`; with `onTimeout` at the deadline or
   * when the caller disconnects (its connection runs `cleanups`). Every timer is cleared on the
   * way out.
   */
  private async waitUntil<T>(
    cleanups: Set<() => void>,
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
        cleanups.delete(cancel);
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
      cleanups.add(cancel);
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
    void this.input
      .serialize(() => this.input.write(chunk))
      .catch((e: unknown) => void this.note(`attach input: ${describeError(e)}`));
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
      for (const fn of [...this.createWaits]) fn();
      // Nothing of this session is written after the holder has said it is exiting.
      await this.notes.flush();
      // The name is free before any connection (the caller's reply included) is ended: a
      // caller told the session is gone may start it again at once.
      this.host.removed(this);
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
    void this.notes.flush();
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
