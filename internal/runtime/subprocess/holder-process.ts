/**
 * The session holder process: one of the few detached Node processes of a provider root
 * (`<stateDir>/subprocess`, `<stateDir>/acp`; slot 0, 1, … each with its own control socket)
 * that runs the programs of the sessions created through it and outlives the gc process that
 * started it. Each session (holder-session.ts) keeps its screen model,
 * output ring, raw log, last-activity time, metadata and exit status, and serves them over
 * its private unix socket (protocol.ts). A control socket creates sessions (`create`, the
 * spec travels in the request) and drops unreachable ones (`release`). A session's program
 * ending only marks that session exited; the process exits once its last session is gone.
 * Programs run in ptys; a holder started with plugged-in modes (holder-mode.ts) also runs
 * the sessions whose spec names one of them. Entry scripts: holder.ts (ptys only) and
 * ../acp/holder.ts (with the ACP mode).
 */
import { rmSync, unlinkSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { describeError } from "../../base/errors.js";
import { bindInSocketDir, releaseSocketDir } from "../socket-dir.js";
import { type HolderModes, OpError, str } from "./holder-mode.js";
import { Session, type SessionHost } from "./holder-session.js";
import { ensurePrivateDir, holderSocketPath } from "./layout.js";
import {
  type HolderResponse,
  type HolderResults,
  type HolderSpec,
  LineSplitter,
  PROTOCOL_VERSION,
} from "./protocol.js";

/** Longest a `create` waits for the new session's prompt before it replies (its `readyWaitMs`). */
const MAX_CREATE_READY_WAIT_MS = 5_000;
/** A holder that received no session this long after it started exits. */
const FIRST_SESSION_TIMEOUT_MS = 15_000;

/** Process-level diagnostics (stderr is `<root>/logs/holder.log`). */
function log(msg: string): void {
  process.stderr.write(`${new Date().toISOString()} holder[${process.pid}]: ${msg}\n`);
}

/**
 * The holder process: its sessions by name and the control socket. Exits once the last
 * session is gone (or when none arrives within {@link FIRST_SESSION_TIMEOUT_MS}), closing
 * the control socket first so a late `create` is refused (`shutting_down`) and the caller
 * starts a new holder.
 */
class Holder implements SessionHost {
  private readonly root: string;
  /** The modes this holder runs besides its own pty. */
  private readonly modes: HolderModes;
  /** This holder's control socket (its slot's). */
  readonly controlSocket: string;
  private readonly sessions = new Map<string, Session>();
  private readonly server: Server;
  private creating = 0;
  private exiting = false;
  /** Open `watch` connections. */
  private watchers = 0;
  /** The pty forks queued, one per turn of the event loop ({@link forkTurn}). */
  private forkChain: Promise<unknown> = Promise.resolve();

  constructor(root: string, slot: number, modes: HolderModes) {
    this.root = root;
    this.modes = modes;
    this.controlSocket = holderSocketPath(root, slot);
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
        if (await answers(this.controlSocket)) throw new Error(`another holder serves ${this.controlSocket}`);
        rmSync(this.controlSocket, { force: true });
      }
    }
    this.server.on("error", (e) => log(`control socket: ${describeError(e)}`));
    setTimeout(() => this.maybeExit(), FIRST_SESSION_TIMEOUT_MS).unref();
  }

  private bind(): Promise<void> {
    return bindInSocketDir(this.controlSocket, () => this.listenOnce(), ensurePrivateDir);
  }

  private listenOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      // Made 0600 by the umask of its bind (inside listen()): never reachable by others.
      const old = process.umask(0o177);
      try {
        this.server.listen(this.controlSocket, () => {
          this.server.off("error", reject);
          resolve();
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

  removed(session: Session): void {
    if (this.sessions.get(session.spec.name) === session) this.sessions.delete(session.spec.name);
    this.maybeExit();
  }

  /** Exits when no session is left and none is being created. */
  private maybeExit(): void {
    if (this.exiting || this.sessions.size > 0 || this.creating > 0) return;
    this.exiting = true;
    log("no sessions left: exiting");
    this.server.close();
    try {
      unlinkSync(this.controlSocket);
    } catch {
      // gone
    }
    releaseSocketDir(this.controlSocket);
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
      case "exitIfIdle":
        this.maybeExit();
        return { pid: process.pid, exiting: this.exiting };
      case "create":
        return this.create(rec.spec as HolderSpec, rec.readyWaitMs);
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

  /**
   * Starts one session from `spec`; replies with its screen once its prompt shows (within
   * `readyWaitMs`, when that is a positive number). @throws OpError `spawn_failed` (nothing
   * left behind).
   */
  private async create(spec: HolderSpec, readyWaitMs: unknown): Promise<HolderResults["create"]> {
    if (this.exiting) throw new OpError("shutting_down", "the holder is exiting");
    if (typeof spec !== "object" || spec === null || typeof spec.name !== "string")
      throw new OpError("bad_request", "create needs a spec");
    if (spec.protocol !== PROTOCOL_VERSION)
      throw new OpError("bad_request", `spec protocol ${spec.protocol} != ${PROTOCOL_VERSION}`);
    if (dirname(spec.dir) !== join(this.root, "sessions"))
      throw new OpError("bad_request", `session dir ${spec.dir} is not under ${this.root}`);
    const modeName = spec.mode ?? "pty";
    if (modeName !== "pty" && !Object.hasOwn(this.modes, modeName))
      throw new OpError("bad_request", `this holder runs no ${JSON.stringify(modeName)} sessions`);
    const mode = modeName === "pty" ? undefined : this.modes[modeName];
    if (this.sessions.has(spec.name))
      throw new OpError("spawn_failed", `session ${spec.name} is still held (stop it first)`);
    const session = new Session(spec, this, mode);
    this.sessions.set(spec.name, session);
    this.creating++;
    try {
      // Concurrent with other creates, but for the fork itself (see forkTurn): a burst of
      // starts must not hold up the requests of running sessions (status probes have deadlines).
      await session.start();
      session.noteSoon("serving");
      const wait = typeof readyWaitMs === "number" && Number.isFinite(readyWaitMs) ? readyWaitMs : 0;
      const screen = await session.firstLook(Math.min(wait, MAX_CREATE_READY_WAIT_MS));
      return { pid: process.pid, childPid: session.childPid, ...(screen === undefined ? {} : { screen }) };
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

/**
 * The holder process's body: serves the provider root named by its first argument, on the
 * control socket of the slot named by its second (default 0), running
 * its sessions in ptys and, for a spec naming one of `modes`, through that mode. Resolves once
 * it serves; the process then lives until its last session is gone.
 */
export async function runHolder(modes: HolderModes = {}): Promise<void> {
  const root = process.argv[2];
  const slot = Number(process.argv[3] ?? 0);
  if (!root || !Number.isInteger(slot) || slot < 0) {
    log("usage: holder.js <provider root> [slot]");
    process.exit(2);
  }
  const holder = new Holder(root, slot, modes);
  try {
    await holder.listen();
  } catch (e) {
    log(`startup failed: ${describeError(e)}`);
    process.exit(3);
  }
  log(`serving ${root}${slot === 0 ? "" : ` (slot ${slot})`}`);
  const stop = () => void holder.shutdownAll();
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.on("SIGHUP", () => undefined);
  // One session's bug must not take the others down: log and carry on.
  process.on("uncaughtException", (e) => log(`uncaught: ${e.stack ?? describeError(e)}`));
  process.on("unhandledRejection", (e) => log(`unhandled rejection: ${describeError(e)}`));
}
