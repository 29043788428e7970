/**
 * Starting a session through an exec script ({@link ScriptStart}): the start backend the one
 * start lifecycle (lifecycle/start.ts) drives — the script's `start` does hooks, staging and
 * the initial nudge itself; gc waits for readiness and answers startup dialogs through
 * `peek`/`send-keys` when the script has `peek` — the `start` call with its outcomes read
 * as gc errors, and for a protocol v1 script what v1 cannot say (v1.ts: the start JSON it
 * understands, its stderr classified, a post-start `is-running` check). Whatever fails after
 * the script may have made something runs `stop`, so nothing is left behind.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  HookFailedError,
  isGcError,
  SessionDiedDuringStartupError,
  SessionExistsError,
} from "../../base/errors.js";
import {
  type DelegatedStep,
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
} from "../lifecycle/index.js";
import type { OpOptions, Provider, StartConfig, StartReport } from "../provider.js";
import { hookError, type ScriptCalls, stderrOf } from "./calls.js";
import { EXIT, type ExecStartPayload, startPayload } from "./protocol.js";
import type { CallResult } from "./script.js";
import {
  classifyV1StartFailure,
  diedDuringStartupDetail,
  V1_START_SETTLE_MS,
  v1Hooks,
  v1PromptCommand,
} from "./v1.js";

/** Start steps an exec script's `start` performs itself. */
const SCRIPT_STEPS: ReadonlySet<DelegatedStep> = new Set([
  "stage",
  "pre_start",
  "session_setup",
  "nudge",
  "session_live",
]);
/** The same, plus readiness: a script without `peek` waits for its prompt itself. */
const SCRIPT_STEPS_AND_READINESS: ReadonlySet<DelegatedStep> = new Set([...SCRIPT_STEPS, "readiness"]);

/** The session operations a start uses (the provider's own, names validated). */
export type StartSession = Pick<Provider, "isRunning" | "peek" | "sendKeys">;

/** Starts sessions of one exec script. */
export class ScriptStart {
  private readonly calls: ScriptCalls;
  private readonly session: StartSession;
  /** The provider's name (in lifecycle errors). */
  private readonly provider: string;
  private readonly city: string;
  /** Deadline of the script's `start` call. */
  private readonly startTimeoutMs: number;

  constructor(opts: {
    readonly calls: ScriptCalls;
    readonly session: StartSession;
    readonly provider: string;
    readonly city: string;
    readonly startTimeoutMs: number;
  }) {
    this.calls = opts.calls;
    this.session = opts.session;
    this.provider = opts.provider;
    this.city = opts.city;
    this.startTimeoutMs = opts.startTimeoutMs;
  }

  /**
   * Starts `name` (already validated) as `ExecProvider.start` (provider.ts) describes.
   * @throws as {@link ScriptStart.startScript}; UnsupportedError when the script has no `start`.
   */
  async start(name: string, config: StartConfig, signal: AbortSignal | undefined): Promise<StartReport> {
    if (!this.calls.supports("start")) throw this.calls.unsupported("start");
    const screen = this.calls.supports("peek");
    const scriptConfig: StartConfig = screen
      ? { ...config, readyPromptPrefix: undefined, readyDelayMs: undefined }
      : config;
    let made = false;
    const backend: StartBackend = {
      provider: this.provider,
      delegates: screen ? SCRIPT_STEPS : SCRIPT_STEPS_AND_READINESS,
      runCommand: runLocalCommand,
      stage: async () => undefined, // the script stages (sources were checked by the lifecycle)
      create: async (_p, signal) => {
        await this.startScript(name, scriptConfig, signal);
        made = true;
      },
      alive: (signal) => this.session.isRunning(name, { signal }),
      died: async () => new SessionDiedDuringStartupError(name, "the session is no longer running"),
      ...(screen ? { screen: (signal: AbortSignal) => this.startupScreen(name, signal) } : {}),
      ...(this.calls.supports("send-keys")
        ? {
            sendKeys: (keys: readonly string[], signal: AbortSignal) =>
              this.session.sendKeys(name, keys, { signal }),
          }
        : {}),
      destroy: async () => {
        if (made) await this.calls.cleanupFailedStart(name);
      },
    };
    return runStart(backend, planStart(name, this.city, config), limitsFor(config), signal);
  }

  /**
   * `start <name>` with the start JSON on stdin, bounded by the start deadline.
   * @throws SessionExistsError (exit 4, or "already exists" on stderr) — nothing is cleaned up.
   * @throws SessionDiedDuringStartupError (exit 5), HookFailedError (exit 6): the script left nothing.
   * @throws OperationTimeoutError / the abort reason / ProviderError: `stop` is run to leave nothing behind.
   */
  private async startScript(name: string, config: StartConfig, signal: AbortSignal): Promise<void> {
    const stdin = JSON.stringify(
      this.calls.v2 ? startPayload(name, config, this.city) : this.v1StartPayload(name, config),
    );
    let r: CallResult;
    const began = Date.now();
    try {
      r = await this.calls.call("start", name, [], { stdin, signal, timeoutMs: this.startTimeoutMs });
    } catch (e) {
      // Timed out, aborted or not runnable: the script may have got half-way.
      await this.calls.cleanupFailedStart(name);
      throw e;
    }
    if (!this.calls.v2 && r.exit !== EXIT.OK && r.exit !== EXIT.UNKNOWN_OP)
      return this.v1StartFailed(name, r);
    const out = this.calls.outcome(r, "start");
    switch (out) {
      case "ok":
        if (!this.calls.v2) await this.v1ConfirmStarted(name, Date.now() - began, { signal });
        return;
      case "exists":
        throw new SessionExistsError(name, { cause: this.calls.failure("start", name, r) });
      case "died":
        throw new SessionDiedDuringStartupError(name, stderrOf(r), {
          cause: this.calls.failure("start", name, r),
        });
      case "hook":
        throw hookError(r);
      case "unknown":
        throw this.calls.unsupported("start");
      default: {
        const err = this.calls.failure("start", name, r);
        await this.calls.cleanupFailedStart(name);
        throw err;
      }
    }
  }

  /**
   * The screen during startup. A session that vanished between the lifecycle's liveness check
   * and this peek died during startup: SessionDiedDuringStartupError, not "not found".
   */
  private async startupScreen(name: string, signal: AbortSignal): Promise<string> {
    try {
      return await this.session.peek(name, 60, { signal });
    } catch (e) {
      if (isGcError(e, "GC_SESSION_NOT_FOUND")) {
        throw new SessionDiedDuringStartupError(
          name,
          "the program exited while gc waited for it to be ready",
          {
            cause: e,
          },
        );
      }
      throw e;
    }
  }

  // ---- protocol v1 start compensations (what a v1 script cannot say; see v1.ts)

  /**
   * The start JSON for a v1 script: the v1 keys only, with the prompt and its flag carried
   * inside `command` ({@link v1PromptCommand}) and the hook dir inside the hook commands
   * ({@link v1Hooks}); the v2 `prompt`, `prompt_flag` and `hook_dir` keys are left out so a
   * script cannot deliver the prompt twice.
   * @throws UnsupportedError when the prompt cannot be carried (nothing is started).
   */
  private v1StartPayload(name: string, config: StartConfig): ExecStartPayload {
    const command = v1PromptCommand(this.calls.script, config);
    const {
      prompt: _p,
      prompt_flag: _f,
      hook_dir: _h,
      ...payload
    } = startPayload(
      name,
      {
        ...config,
        ...v1Hooks(config),
        command,
        prompt: undefined,
        promptFlag: undefined,
        hookDir: undefined,
      },
      this.city,
    );
    return payload;
  }

  /**
   * A v1 `start` failed (exit other than 0 and 2): classify its stderr
   * ({@link classifyV1StartFailure}). An existing session is left alone; in every other case
   * `stop` runs so nothing is left behind.
   */
  private async v1StartFailed(name: string, r: CallResult): Promise<never> {
    const cause = this.calls.failure("start", name, r);
    const kind = classifyV1StartFailure(r.stderr);
    if (kind.kind === "exists") throw new SessionExistsError(name, { cause });
    await this.calls.cleanupFailedStart(name);
    if (kind.kind === "died") throw new SessionDiedDuringStartupError(name, stderrOf(r), { cause });
    if (kind.kind === "hook") throw new HookFailedError(kind.hook, kind.detail, { cause });
    throw cause;
  }

  /**
   * After a v1 `start` exited 0: let the program settle — {@link V1_START_SETTLE_MS} from when
   * `start` was called, peeking meanwhile — then ask `is-running` (and peek again). A program that is gone → `stop` (nothing left behind)
   * and SessionDiedDuringStartupError with the last screen gc could read.
   */
  private async v1ConfirmStarted(name: string, startTookMs: number, opts?: OpOptions): Promise<void> {
    let lastPeek: string | undefined;
    const look = async () => {
      try {
        lastPeek = await this.session.peek(name, 50, opts);
      } catch {
        // gone already, or peek unsupported: keep what was seen before
      }
    };
    let alive: boolean;
    try {
      // The program has run at least as long as the script's start call took: only the rest of
      // the settle time is waited, with a first look meanwhile; the second look runs together
      // with is-running.
      const settle = Math.max(0, V1_START_SETTLE_MS - startTookMs);
      if (settle > 0) await Promise.all([look(), sleep(settle, undefined, { signal: opts?.signal })]);
      [alive] = await Promise.all([this.session.isRunning(name, opts), look()]);
    } catch (e) {
      await this.calls.cleanupFailedStart(name);
      throw opts?.signal?.aborted ? opts.signal.reason : e;
    }
    if (alive) return;
    await this.calls.cleanupFailedStart(name);
    throw new SessionDiedDuringStartupError(name, diedDuringStartupDetail(lastPeek));
  }
}
