/**
 * The session holder's plug-in contract. By default a held session's program runs in the
 * holder's own pty (holder-session.ts). A {@link HolderMode} runs it some other way — the
 * ACP mode (../acp/holder-mode.ts) speaks the Agent Client Protocol over the agent's pipes —
 * and answers the session's requests where the holder's screen does not apply. The holder
 * keeps what every session shares: socket, ownership checks, record, metadata, raw log,
 * status, stopping the program's whole tree. A holder process is started with the modes it
 * runs (holder-process.ts `runHolder`); a spec naming another mode is refused.
 * Also the holder's request error and argument checks, which a mode's handling shares.
 */
import type { HolderErrorCode, HolderRequest, HolderSpec, ModeRequest } from "./protocol.js";

/** A request the holder (or its mode) refuses: `code` travels to the client. */
export class OpError extends Error {
  readonly code: HolderErrorCode;
  constructor(code: HolderErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** `v` as an integer request field. @throws OpError `bad_request`. */
export function int(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isInteger(v))
    throw new OpError("bad_request", `${what} must be an integer`);
  return v;
}

/** `v` as a string request field. @throws OpError `bad_request`. */
export function str(v: unknown, what: string): string {
  if (typeof v !== "string") throw new OpError("bad_request", `${what} must be a string`);
  return v;
}

/** What a mode's program tells the session holding it. */
export interface ModeEvents {
  /** The program did something a reader would see (last-activity time). */
  activity(): void;
  /** Raw bytes for the session's raw log. */
  log(chunk: Buffer): void;
  /** The program ended (`signal`: its number, when a signal ended it). */
  exit(code: number, signal: number | undefined): void;
}

/** What the session lends a mode's request handling. */
export interface ModeContext {
  /** Aborted when the caller disconnects (or the session stops): waits end then. */
  readonly signal: AbortSignal;
  /** @throws OpError `not_running` once the program has exited. */
  requireRunning(): void;
  /** The session's nominal terminal size (a mode without a screen reports it for `resize`). */
  readonly cols: number;
  readonly rows: number;
}

/** One session's program as a mode runs it. */
export interface ModeProgram {
  /** Pid of the program, its own session leader (the holder stops its whole tree); 0 before it is spawned. */
  readonly pid: number;
  /** Spawns the program. Resolves once it runs. @throws when it cannot be spawned. */
  start(): Promise<void>;
  /**
   * The mode's answer to `req` (never `status`), or `undefined` for the holder's shared
   * handling (info, metadata, shutdown). An error that is not an {@link OpError} reaches the
   * client as the mode's own failure.
   */
  handle(req: HolderRequest | ModeRequest, ctx: ModeContext): Promise<unknown>;
  /** Fields the mode adds to the session's `status` reply. */
  status(): Record<string, unknown>;
}

/** A way of running a session's program, named by the spec's `mode`. */
export interface HolderMode {
  /** The program of `spec` (not yet spawned: {@link ModeProgram.start} does that). */
  program(spec: HolderSpec, events: ModeEvents): ModeProgram;
  /** The error code of a failure of the mode's own that is not an {@link OpError}. */
  readonly errorCode: HolderErrorCode;
}

/** The modes a holder process runs, by name (`pty`, the default, is the holder's own). */
export type HolderModes = Readonly<Record<string, HolderMode>>;
