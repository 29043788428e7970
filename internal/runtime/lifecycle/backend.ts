/**
 * What a provider gives the one start lifecycle (./start.ts): a small set of operations on
 * the session being started. The lifecycle decides the order, the deadlines, dialog
 * handling, the environment and the cleanup; a backend only knows how to do each step on
 * its kind of target (a tmux pane, a pty holder, an exec script, a pod, a container).
 */
import type { RunResult } from "../../proc/run.js";
import type { StartConfig } from "../provider.js";

/** Everything the lifecycle resolved for one start, handed to the backend. */
export interface StartPlan {
  /** The session name (gc's, not the backend's). */
  readonly name: string;
  readonly city: string;
  /** The declared config (relative paths already resolved against the city dir). */
  readonly config: StartConfig;
  /** Absolute work directory of the program. */
  readonly workDir: string;
  /** Absolute directory hooks run in (`hookDir`, else the work dir). */
  readonly hookDir: string;
  /**
   * The program's environment: the backend's base env minus gc's own terminal variables
   * (`TMUX`, `COLUMNS`, … — {@link NOT_INHERITED}), then the declared env, then the identity
   * variables `GC_SESSION`, `GC_CITY`, `GC_DIR`.
   */
  readonly env: Readonly<Record<string, string>>;
  /** argv of the program: the declared command via `/bin/sh -c`, the prompt as an argument. */
  readonly argv: readonly string[];
}

/** Steps a backend may do itself inside `create` (an exec script does its own hooks). */
export type DelegatedStep = "stage" | "pre_start" | "readiness" | "session_setup" | "nudge" | "session_live";

/** Options of one command run through {@link StartBackend.runCommand}. */
export interface CommandOptions {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

/**
 * The operations of one start on one backend. Created by the provider for each start;
 * every method gets the start's signal (aborted on cancel and on `startup_timeout`).
 */
export interface StartBackend {
  /** Provider name for errors (`tmux`, `subprocess`, `exec:…`). */
  readonly provider: string;
  /** Steps `create` already performs (the lifecycle then skips them). Default: none. */
  readonly delegates?: ReadonlySet<DelegatedStep> | undefined;
  /** Base environment of the program before the declared env. Default: this process's. */
  readonly baseEnv?: NodeJS.ProcessEnv | undefined;
  /** Extra variables hooks see beside the program's env (e.g. `GC_TMUX_SOCKET`). */
  readonly hookEnv?: Readonly<Record<string, string>> | undefined;
  /**
   * Runs one shell command (`/bin/sh -c`) in the target's environment: a hook. Local
   * backends use {@link runLocalCommand}; a pod or container backend runs it inside.
   * Rejects with OperationTimeoutError past `timeoutMs` and with the signal's reason on abort.
   */
  runCommand(command: readonly string[], opts: CommandOptions): Promise<RunResult>;
  /**
   * Stages `overlay_dir` and `copy_files` into the work dir (before `create`). Local backends
   * use {@link stageLocal}; a remote one may keep the list and transfer it in `create`.
   * @throws ProviderError naming the missing or unreadable source.
   */
  stage(plan: StartPlan, signal: AbortSignal): Promise<void>;
  /**
   * Creates the target and starts the program (`plan.argv`, `plan.env`, `plan.workDir`).
   * @throws SessionExistsError when the name is taken. Leaves nothing behind when it rejects.
   */
  create(plan: StartPlan, signal: AbortSignal): Promise<void>;
  /** True while the program runs. */
  alive(signal: AbortSignal): Promise<boolean>;
  /** The error to report when the program is gone (exit status, last output). */
  died(): Promise<Error>;
  /** The visible screen, newest line last. Absent: no readiness-by-prompt, no dialogs. */
  screen?(signal: AbortSignal): Promise<string>;
  /** Raw keys (`Enter`, `Down`, …). Absent: dialogs are only detected, never answered. */
  sendKeys?(keys: readonly string[], signal: AbortSignal): Promise<void>;
  /**
   * Waits up to `ms` for the prompt `prefix` to show (or the program to exit). Optional:
   * a backend that can be told (the pty holder) answers early; default is to sleep.
   */
  waitForPrompt?(prefix: string, ms: number, signal: AbortSignal): Promise<void>;
  /** Types `text` and submits it, confirmed (the initial nudge). Absent: nudge unsupported. */
  nudge?(text: string, signal: AbortSignal): Promise<void>;
  /** Removes everything `create` made. Idempotent; never throws for "already gone". */
  destroy(): Promise<void>;
}

/** Deadlines and dialog settings of one start (milliseconds). */
export interface StartLimits {
  /** The whole start: past it the start rejects with GC_TIMEOUT and leaves nothing. */
  readonly startupTimeoutMs: number;
  /** Each hook command (pre_start, session_setup, its script, session_live). */
  readonly setupTimeoutMs: number;
  /** How long readiness waits for `readyPromptPrefix` before going on anyway. */
  readonly readyTimeoutMs: number;
  /** How long startup dialogs are watched for when `emitsPermissionWarning` is set. */
  readonly dialogTimeoutMs: number;
}
