/**
 * The one start sequence every provider runs, written once:
 *
 *   pre_start → stage (overlay_dir, copy_files) → create → readiness (with startup dialogs
 *   answered) → session_setup → session_setup_script → initial nudge → session_live
 *
 * bounded by `startupTimeoutMs` for the whole start (→ GC_TIMEOUT) and `setupTimeoutMs` for
 * each hook command (→ GC_HOOK_FAILED), cancellable by the caller's signal, and leaving
 * nothing behind when any step fails: what `create` made is destroyed before the rejection.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describeError, HookFailedError, OperationTimeoutError } from "../../base/errors.js";
import { type RunResult, run } from "../../proc/run.js";
import { screenShowsMarker } from "../agent-screens.js";
import { hookDirOf, launchArgv, type SessionCity, SHELL, sessionEnv } from "../launch.js";
import type { StartConfig, StartReport } from "../provider.js";
import { DIALOG_CATALOGUE } from "../screen/catalogue.js";
import { looksLikePrompt, screenNeedsOperator, screenShowsPrompt } from "../screen/classify.js";
import {
  type AnsweredDialog,
  acceptStartupDialogs,
  DialogRefusedError,
  type DialogStep,
  dismissStartupDialog,
  type ScreenIO,
} from "../screen/keys.js";
import { matchDialog } from "../screen/parse.js";
import type { CommandOptions, DelegatedStep, StartBackend, StartLimits, StartPlan } from "./backend.js";
import { checkStageSources } from "./stage.js";

/** `session.startup_timeout`'s default: the deadline of one whole start. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 60_000;
/** `session.setup_timeout`'s default: the deadline of each hook command. */
export const DEFAULT_SETUP_TIMEOUT_MS = 10_000;
/** Default wait for `readyPromptPrefix` before going on anyway. */
export const DEFAULT_READY_TIMEOUT_MS = 60_000;
/** Default watch for startup dialogs when `emitsPermissionWarning` is set. */
export const DEFAULT_DIALOG_TIMEOUT_MS = 10_000;
/** Screen polling interval during readiness. */
const POLL_MS = 100;

/** Limits of a start: the config's own (`startupTimeoutMs`, `setupTimeoutMs`) over `defaults`. */
export function limitsFor(config: StartConfig, defaults: Partial<StartLimits> = {}): StartLimits {
  return {
    startupTimeoutMs: config.startupTimeoutMs ?? defaults.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
    setupTimeoutMs: config.setupTimeoutMs ?? defaults.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS,
    readyTimeoutMs: defaults.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
    dialogTimeoutMs: defaults.dialogTimeoutMs ?? DEFAULT_DIALOG_TIMEOUT_MS,
  };
}

/**
 * The plan of a start: dirs, the program's env and argv. `config`'s dirs should already be
 * absolute. `terminal` holds the provider's own terminal variables (a pty's `TERM`). Pure.
 */
export function planStart(
  name: string,
  city: SessionCity,
  config: StartConfig,
  opts: {
    baseEnv?: NodeJS.ProcessEnv;
    terminal?: Readonly<Record<string, string>>;
    /** Base of relative copy sources; default the current directory. */
    sourceDir?: string;
  } = {},
): StartPlan {
  return {
    name,
    city: typeof city === "string" ? city : city.name,
    config,
    workDir: config.workDir,
    hookDir: hookDirOf(config),
    sourceDir: opts.sourceDir ?? process.cwd(),
    env: sessionEnv(opts.baseEnv ?? process.env, name, config, city, opts.terminal),
    argv: launchArgv(config),
  };
}

/**
 * Runs the start sequence of `plan` on `backend`.
 * @throws OperationTimeoutError (GC_TIMEOUT) when the whole start exceeds its deadline.
 * @throws HookFailedError (GC_HOOK_FAILED) when a hook fails or exceeds `setupTimeoutMs`.
 * @throws SessionDiedDuringStartupError (from `backend.died()`) when the program exits.
 * @throws DialogRefusedError when a startup dialog cannot be answered safely.
 * @throws the caller's `signal.reason` when it aborts.
 * Whatever the rejection, the target `create` made is destroyed first. Resolves with what
 * the start could not confirm (readiness that went on without the prompt).
 */
export async function runStart(
  backend: StartBackend,
  plan: StartPlan,
  limits: StartLimits,
  callerSignal?: AbortSignal,
): Promise<StartReport> {
  callerSignal?.throwIfAborted();
  const deadline = new AbortController();
  const timeout = new OperationTimeoutError(`start of ${JSON.stringify(plan.name)}`, limits.startupTimeoutMs);
  const timer = setTimeout(() => deadline.abort(timeout), limits.startupTimeoutMs);
  const signal = callerSignal ? AbortSignal.any([callerSignal, deadline.signal]) : deadline.signal;
  const steps = new Sequence(backend, plan, limits, signal, Date.now() + limits.startupTimeoutMs);
  try {
    return await steps.run();
  } catch (e) {
    if (steps.created) await backend.destroy().catch(() => undefined);
    if (callerSignal?.aborted) throw callerSignal.reason;
    if (deadline.signal.aborted) {
      // A step that knew why it was still waiting (a pod still Pending: ImagePullBackOff)
      // rejected with its own error: the timeout says it.
      const why = e !== timeout && e instanceof Error && e.name !== "AbortError" ? ` (${e.message})` : "";
      throw new OperationTimeoutError(
        `start of ${JSON.stringify(plan.name)}${why}`,
        limits.startupTimeoutMs,
        {
          cause: e,
        },
      );
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/** One start in progress. */
class Sequence {
  created = false;
  /**
   * The program was last seen alive by {@link Sequence.requireAlive} and nothing touched or
   * looked at the session since (no hook, script, nudge, screen read, dialog answer, wait):
   * asking again at once is redundant. Every step that awaits anything of the session clears
   * it, so the check that ends a start always comes after the start's last look at the
   * program.
   */
  private confirmedAlive = false;
  private readonly b: StartBackend;
  private readonly plan: StartPlan;
  private readonly limits: StartLimits;
  private readonly signal: AbortSignal;
  private readonly deadlineAt: number;
  private readonly hookEnv: Readonly<Record<string, string>>;
  /** Why readiness went on without the prompt ({@link StartReport.unconfirmed}). */
  private unconfirmed: string | undefined;
  /** Startup dialogs answered ({@link StartReport.answered}). */
  private readonly answered: AnsweredDialog[] = [];

  constructor(
    b: StartBackend,
    plan: StartPlan,
    limits: StartLimits,
    signal: AbortSignal,
    deadlineAt: number,
  ) {
    this.b = b;
    this.plan = plan;
    this.limits = limits;
    this.signal = signal;
    this.deadlineAt = deadlineAt;
    this.hookEnv = { ...plan.env, ...(b.hookEnv ?? {}) };
  }

  private does(step: DelegatedStep): boolean {
    return !this.b.delegates?.has(step);
  }

  async run(): Promise<StartReport> {
    const cfg = this.plan.config;
    // A missing copy source fails every start alike, before anything runs.
    await checkStageSources(this.b.provider, this.plan);
    if (this.does("pre_start")) await this.hooks("pre_start", cfg.preStart);
    if (this.does("stage")) await this.b.stage(this.plan, this.signal);
    this.signal.throwIfAborted();
    // create leaves nothing behind when it rejects; from its success on, failures destroy.
    await this.b.create(this.plan, this.signal);
    this.created = true;
    this.signal.throwIfAborted();
    if (this.does("readiness")) await this.awaitReady();
    if (this.does("session_setup")) {
      await this.hooks("session_setup", cfg.sessionSetup);
      if (cfg.sessionSetupScript) await this.script(cfg.sessionSetupScript);
    }
    if (cfg.nudge && this.does("nudge")) {
      await this.requireAlive();
      if (!this.b.nudge) throw new HookFailedError("nudge", `${this.b.provider} cannot type into a session`);
      this.confirmedAlive = false;
      await this.b.nudge(cfg.nudge, this.signal);
    }
    if (this.does("session_live")) await this.hooks("session_live", cfg.sessionLive);
    await this.requireAlive();
    return {
      ...(this.answered.length > 0 ? { answered: this.answered } : {}),
      ...(this.unconfirmed === undefined ? {} : { unconfirmed: this.unconfirmed }),
    };
  }

  /**
   * @throws the backend's `died()` error unless the program is alive. Skipped (the signal still
   * checked) while {@link Sequence.confirmedAlive}.
   */
  private async requireAlive(): Promise<void> {
    this.signal.throwIfAborted();
    if (this.confirmedAlive) return;
    if (!(await this.b.alive(this.signal))) throw await this.b.died();
    this.confirmedAlive = true;
  }

  /** Runs each command of a hook in order, each bounded by `setupTimeoutMs`. */
  private async hooks(hook: string, commands: readonly string[] | undefined): Promise<void> {
    if (commands?.length) this.confirmedAlive = false;
    await runHookCommands(this.b, hook, commands, this.commandOptions());
  }

  private commandOptions(): CommandOptions {
    return {
      cwd: this.plan.hookDir,
      env: this.hookEnv,
      timeoutMs: this.limits.setupTimeoutMs,
      signal: this.signal,
    };
  }

  /** `session_setup_script`: run directly, or by the shell when it is not executable. */
  private async script(script: string): Promise<void> {
    this.confirmedAlive = false;
    const path = script.startsWith("/") ? script : `${this.plan.hookDir}/${script}`;
    let r: RunResult;
    try {
      r = await this.command("session_setup_script", path, [path]);
    } catch (e) {
      const code = (e as { cause?: NodeJS.ErrnoException }).cause?.code;
      if (code !== "EACCES" && code !== "ENOEXEC") throw e;
      r = await this.command("session_setup_script", path, [SHELL, path]);
    }
    if (r.exitCode !== 0) {
      throw new HookFailedError(
        "session_setup_script",
        `${path}: ${r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`}`,
      );
    }
  }

  /** One command through the backend; a timeout or spawn failure is the hook's failure. */
  private command(hook: string, what: string, argv: readonly string[]): Promise<RunResult> {
    return hookCommand(this.b, hook, what, argv, this.commandOptions());
  }

  /**
   * Readiness: `readyPromptPrefix` on screen (waited for at most `readyTimeoutMs`, and never
   * past the start's own deadline), else `readyDelayMs`; startup dialogs are answered on the
   * way, and watched for a while after when `emitsPermissionWarning` is set. A wait for the
   * prompt that runs out goes on, and says so in {@link Sequence.unconfirmed}.
   */
  private async awaitReady(): Promise<void> {
    const cfg = this.plan.config;
    const prefix = cfg.readyPromptPrefix?.trim() ? cfg.readyPromptPrefix : undefined;
    const markers = cfg.readyMarkers?.length ? cfg.readyMarkers : undefined;
    const delay = cfg.readyDelayMs ?? 0;
    if (!prefix && !markers && delay <= 0 && !cfg.emitsPermissionWarning) return; // fire and forget
    const io = this.screenIO();
    // Leave a quarter of what is left (at most 5 s) for the steps after readiness.
    const left = this.deadlineAt - Date.now();
    const cap = Date.now() + left - Math.min(5_000, left / 4);
    const expectsReady = prefix !== undefined || markers !== undefined;
    const readyWait = expectsReady ? this.limits.readyTimeoutMs : delay;
    const showsReady = (screen: string) =>
      (prefix !== undefined && screenShowsPrompt(screen, prefix)) || screenShowsMarker(screen, markers);
    /** Since when the ready screen has been seen without a break (`ready_settle_ms`). */
    let readySince: number | undefined;
    // The wait restarts after each answered dialog (the program moved on; Gemini CLI even
    // restarts itself after its trust dialog), never past the start's own deadline.
    let until = Math.min(cap, Date.now() + readyWait);
    let window = until - Date.now();
    let last: DialogStep = { status: "none" };
    let screen = "";
    let seen = false;
    const answered = new Map<string, number>();
    for (let first = true; ; first = false) {
      // Right after create the program is looked at first (create has just made it); a
      // failure to read or answer it then is reported as its death when it died.
      if (!first) await this.requireAlive();
      screen = io ? await this.orDied(first, () => io.screen()) : "";
      // What is decided from this screen must be confirmed by a look after it: the program
      // may have printed its prompt and exited since the check above.
      this.confirmedAlive = false;
      if (io) {
        last = await this.orDied(first, () =>
          dismissStartupDialog(io, screen, { signal: this.signal, deadline: cap }),
        );
        if (last.status === "refused") throw await this.refusal(last.dialog, last.reason);
        if (last.status === "handled") {
          const n = (answered.get(last.dialog) ?? 0) + 1;
          if (n > 2) throw new DialogRefusedError(last.dialog, "it keeps coming back after being answered");
          answered.set(last.dialog, n);
          this.answered.push({ dialog: last.dialog, chose: last.chose });
          until = Math.min(cap, Date.now() + readyWait);
          window = until - Date.now();
          continue;
        }
        if (expectsReady && last.status === "none" && showsReady(screen)) {
          // A program that draws its input before it takes Enter: ready only once the ready
          // screen has stood for `readySettleMs` (looked at again until then).
          readySince ??= Date.now();
          if (Date.now() - readySince >= (cfg.readySettleMs ?? 0)) {
            seen = true;
            break;
          }
        } else readySince = undefined;
        // A sign-in choice or approval prompt: only an operator gets past it (gc status shows it).
        if (last.status === "none" && screenNeedsOperator(screen)) {
          seen = true;
          break;
        }
      }
      const wait = Math.min(POLL_MS * 5, until - Date.now());
      if (wait <= 0) break;
      if (prefix && io && this.b.waitForPrompt && readySince === undefined)
        await this.b.waitForPrompt(prefix, wait, this.signal);
      else await sleep(Math.min(POLL_MS, wait), undefined, { signal: this.signal });
    }
    if (last.status === "pending") throw await this.refusal(last.dialog, `unfamiliar layout: ${last.reason}`);
    if (expectsReady && !seen) this.unconfirmed = notSeen(prefix, window, io ? screen : undefined, markers);
    if (cfg.emitsPermissionWarning && io) {
      // Some agents show their warning only after the first ready screen.
      const out = await acceptStartupDialogs(io, {
        timeoutMs: Math.max(0, Math.min(this.limits.dialogTimeoutMs, cap - Date.now())),
        deadline: cap,
        signal: this.signal,
        until: (screen) => (expectsReady ? showsReady(screen) : looksLikePrompt(screen)),
      });
      if (out.status !== "none") this.answered.push(...out.handled);
      if (out.status === "refused") throw await this.refusal(out.dialog, out.reason);
    }
    await this.requireAlive();
  }

  /**
   * The error for a dialog that could not be answered — unless the program has died: a dead
   * program's last screen may still show its dialog, and its death is the cause to report.
   * @throws the backend's `died()` error when the program is not alive.
   */
  private async refusal(dialog: string, reason: string): Promise<DialogRefusedError> {
    this.confirmedAlive = false;
    await this.requireAlive();
    return new DialogRefusedError(dialog, reason);
  }

  /**
   * `fn()`; when `check` and it rejects, the program's death (the backend's `died()` error)
   * when it is not alive, else `fn`'s own rejection.
   */
  private async orDied<T>(check: boolean, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (check && !this.signal.aborted) await this.requireAlive();
      throw e;
    }
  }

  /** The backend's screen and keys for the dialog code, when it has a screen. */
  private screenIO(): ScreenIO | undefined {
    const { screen, sendKeys } = this.b;
    if (!screen) return undefined;
    return {
      screen: () => screen.call(this.b, this.signal),
      sendKeys: async (keys) => {
        if (!sendKeys) throw new HookFailedError("startup dialog", `${this.b.provider} cannot send keys`);
        await sendKeys.call(this.b, keys, this.signal);
      },
    };
  }
}

/**
 * Why readiness went on: `prefix` not seen within `waitMs`. A startup dialog on the last
 * `screen` with text drawn below it was taken for an old frame (never answered again): that
 * is named, since the program may be waiting on it. No screen text is quoted (it may hold
 * secrets, and the reason is stored). Pure.
 */
/**
 * The warning of a start that went on without seeing the ready prompt `prefix` (or, without
 * one, any of the ready `markers`) within `waitMs`; names a leftover dialog frame. Pure.
 */
export function notSeen(
  prefix: string | undefined,
  waitMs: number,
  screen: string | undefined,
  markers: readonly string[] = [],
): string {
  const shown =
    prefix !== undefined
      ? `ready prompt ${JSON.stringify(prefix)}`
      : `a ready marker (${markers.map((m) => `/${m}/`).join(", ")})`;
  const what = `${shown} not seen within ${Math.round(waitMs / 1000)} s; went on`;
  if (screen === undefined) return `${what} (no screen to look at)`;
  const dialog = matchDialog(screen, DIALOG_CATALOGUE, ["startup"], { textBelow: true });
  return dialog
    ? `${what}; the screen shows the ${dialog.spec.id} dialog with text below it (taken for an old frame, not answered)`
    : what;
}

/**
 * Runs each command of `hook` in order through `backend.runCommand` (`/bin/sh -c CMD`), each
 * bounded by `opts.timeoutMs`: the one hook runner of a start, also used by a backend that
 * runs a delegated hook itself (k8s runs `pre_start` in the pod it has just created).
 * @throws HookFailedError on the first command that fails, times out or cannot run.
 * @throws the signal's reason when `opts.signal` aborts.
 */
export async function runHookCommands(
  backend: Pick<StartBackend, "runCommand">,
  hook: string,
  commands: readonly string[] | undefined,
  opts: CommandOptions,
): Promise<void> {
  for (const cmd of commands ?? []) {
    const r = await hookCommand(backend, hook, JSON.stringify(cmd), [SHELL, "-c", cmd], opts);
    if (r.exitCode !== 0) {
      throw new HookFailedError(
        hook,
        `${JSON.stringify(cmd)}: ${r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`}`,
      );
    }
  }
}

/** One command through the backend; a timeout or spawn failure is the hook's failure. */
async function hookCommand(
  backend: Pick<StartBackend, "runCommand">,
  hook: string,
  what: string,
  argv: readonly string[],
  opts: CommandOptions,
): Promise<RunResult> {
  opts.signal.throwIfAborted();
  try {
    return await backend.runCommand(argv, opts);
  } catch (e) {
    if (opts.signal.aborted) throw e;
    const detail =
      e instanceof OperationTimeoutError
        ? `${what}: did not finish within setup_timeout (${opts.timeoutMs} ms)`
        : `${what}: ${describeError(e)}`;
    throw new HookFailedError(hook, detail, { cause: e });
  }
}

/** {@link StartBackend.runCommand} for backends whose hooks run on this host. */
export function runLocalCommand(argv: readonly string[], opts: CommandOptions): Promise<RunResult> {
  return run(argv, { cwd: opts.cwd, env: opts.env, timeoutMs: opts.timeoutMs, signal: opts.signal });
}
