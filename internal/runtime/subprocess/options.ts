/**
 * The subprocess provider's options (provider.ts), with their defaults, and the deadlines
 * of its holder calls; shared by the modules the provider is made of. The ACP provider
 * builds on the same options with its own holder mode ({@link HeldMode}).
 */
import { availableParallelism } from "node:os";
import type { DetachKeys } from "./keys.js";

/** Longest wait for a new holder process to answer on its control socket, and for a `create`. */
export const HOLDER_START_TIMEOUT_MS = 15_000;
/**
 * Longest a start's `create` waits in the holder for the new session's `readyPromptPrefix`
 * before it replies with the screen (the start then goes on waiting as before): the start
 * sequence's first wait for the prompt (lifecycle/start.ts waits in windows of 500 ms).
 */
export const CREATE_READY_WAIT_MS = 500;
/** Longest wait for `readyPromptPrefix`; past it start proceeds (the program may just be quiet). */
export const READY_TIMEOUT_MS = 60_000;
/** Deadline for a status probe (listRunning, isRunning, …). */
export const STATUS_TIMEOUT_MS = 3_000;
/** Deadline for the holder to stop the program and answer `shutdown`. */
export const SHUTDOWN_TIMEOUT_MS = 10_000;
/** How long start keeps answering startup dialogs when `emitsPermissionWarning` is set. */
export const DIALOG_TIMEOUT_MS = 10_000;
/** Default terminal width of a new session. */
export const DEFAULT_COLS = 160;
/** Default terminal height of a new session. */
export const DEFAULT_ROWS = 50;
/** Default scrollback lines kept by the screen model. */
export const DEFAULT_SCROLLBACK = 5_000;
/** Default raw log size before rotation. */
export const DEFAULT_LOG_MAX_BYTES = 8 * 1024 * 1024;
/** Default raw output kept in memory. */
export const DEFAULT_RING_BYTES = 1024 * 1024;
/** Poll interval of the provider's bounded waits (a holder answering, a holder exiting). */
export const POLL_MS = 25;
/**
 * Poll interval while a freshly spawned holder starts to serve: every start of the city may
 * be waiting on that answer (a look for its control socket; asked once that is there).
 */
export const HOLDER_START_POLL_MS = 5;

/**
 * Default number of holder processes of a provider root: one per CPU, at most 4. A burst of
 * starts (a whole city at once) is spread over them, so programs are forked and set up in
 * parallel, and one holder's crash loses only the sessions it holds. Each costs a Node process
 * (about 45 MB RSS); a root never has more holders than it has had concurrent starts.
 */
export function defaultHolders(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/** Variables of the controller's own terminal that must not leak into a session's pty. */
export const PTY_ENV = { TERM: "xterm-256color" } as const;

/** Options for the `SubprocessProvider` (provider.ts). */
export interface SubprocessProviderOptions {
  /** City name (`GC_CITY` in sessions). */
  readonly city: string;
  /** The city's stable id: with the name, the ownership tag recorded with every session. */
  readonly cityId?: string | undefined;
  /** The city's state dir; sessions live under `<stateDir>/subprocess/`. */
  readonly stateDir: string;
  readonly cols?: number | undefined;
  readonly rows?: number | undefined;
  readonly scrollback?: number | undefined;
  readonly logMaxBytes?: number | undefined;
  readonly ringBytes?: number | undefined;
  /** Keys that end `attach`. Default `both` (Ctrl-\ or Ctrl-b d). */
  readonly detachKeys?: DetachKeys | undefined;
  /** Deadline for `readyPromptPrefix`. Default {@link READY_TIMEOUT_MS}. */
  readonly readyTimeoutMs?: number | undefined;
  /** How long start answers startup dialogs after readiness. Default {@link DIALOG_TIMEOUT_MS}. */
  readonly dialogTimeoutMs?: number | undefined;
  /** The built holder script. Default: the bundled holder, `bundle/holder.js` beside this module (from `dist/`). */
  readonly holderPath?: string | undefined;
  /** Where sessions live. Default `<stateDir>/subprocess` (the ACP provider uses `<stateDir>/acp`). */
  readonly rootDir?: string | undefined;
  /** The provider's name in its errors. Default `subprocess`. */
  readonly name?: string | undefined;
  /** The holder mode sessions run in (its holder script is {@link holderPath}). Default: ptys. */
  readonly mode?: HeldMode | undefined;
  /**
   * How many holder processes the root may have; concurrent starts are spread over them.
   * Default {@link defaultHolders}.
   */
  readonly holders?: number | undefined;
  /** Node binary for holders. Default `process.execPath`. */
  readonly nodePath?: string | undefined;
  /** Base environment of sessions and hooks. Default `process.env`. */
  readonly baseEnv?: NodeJS.ProcessEnv | undefined;
  /** Terminal streams `attach` hands over. Default the process's stdin/stdout. */
  readonly terminal?: { readonly input: NodeJS.ReadStream; readonly output: NodeJS.WriteStream } | undefined;
}

/**
 * A plugged-in holder mode (holder-mode.ts) as the provider side uses it: what goes into the
 * spec, and what a start waits for once the holder runs the program. The ACP provider's.
 */
export interface HeldMode {
  /** The spec's `mode`. */
  readonly mode: string;
  /** The mode's own fields of the spec. */
  readonly spec?: Readonly<Record<string, unknown>> | undefined;
  /**
   * Runs once the holder answers, inside the start's `create` (a rejection removes the
   * session): the ACP provider waits for its handshake here.
   */
  afterCreate?(name: string, signal: AbortSignal): Promise<void>;
}
