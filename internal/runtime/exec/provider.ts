/**
 * ExecProvider: every {@link Provider} operation delegated to a user script as
 * `<script> <operation> <name> [args]` (no shell), wire-compatible with Gas City's exec
 * session protocol plus the v2 extensions in protocol.ts. Values travel on stdin, results on
 * stdout; every call has a deadline and its whole process group is killed on timeout or
 * abort. For a protocol v1 script the provider also does what v1 cannot say (v1.ts: the
 * prompt inside `command`, hooks in the hook dir, a post-start `is-running` check, framed
 * metadata, "not found" from `is-running`, start failures classified from stderr). Built by
 * `createProvider` in index.ts; the protocol is documented in docs/exec-protocol.md.
 */
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { isAbsolute, posix } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  HookFailedError,
  InvalidNameError,
  isGcError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
  SessionNotFoundError,
  UnsupportedError,
} from "../../base/errors.js";
import { nameProblem, validateMetaKey, validateSessionName } from "../../base/names.js";
import {
  type DelegatedStep,
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
} from "../lifecycle/index.js";
import {
  flattenContent,
  type NudgeContent,
  type OpOptions,
  type Provider,
  type ProviderCapabilities,
  type StartConfig,
  type StartReport,
} from "../provider.js";
import type { ExecProbeResult } from "./probe.js";
import {
  clip,
  EXIT,
  type ExecOperationName,
  type ExecStartPayload,
  isImageRef,
  isKeyName,
  parseActivity,
  parseBool,
  startPayload,
  trimTrailingNewlines,
} from "./protocol.js";
import {
  type CallResult,
  callScript,
  describeCall,
  EXEC_OP_TIMEOUT_MS,
  EXEC_START_TIMEOUT_MS,
  type ScriptContext,
} from "./script.js";
import {
  classifyV1StartFailure,
  diedDuringStartupDetail,
  frameMetaV1,
  unframeMetaV1,
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

/** Options of {@link ExecProvider}. */
export interface ExecProviderOptions {
  /** The resolved script and the environment/cwd of every call. */
  readonly context: ScriptContext;
  /** City name (also `GC_CITY` in the script's environment). */
  readonly city: string;
  /** What the probe learnt about the script: its protocol version and operations. */
  readonly probe: ExecProbeResult;
  /** Deadline of each call. Default {@link EXEC_OP_TIMEOUT_MS}. */
  readonly timeoutMs?: number | undefined;
  /** Deadline of `start` and `run-live` (readiness and hooks). Default {@link EXEC_START_TIMEOUT_MS}. */
  readonly startTimeoutMs?: number | undefined;
}

/** How a call ended, in protocol terms. */
type Outcome = "ok" | "unknown" | "not-found" | "exists" | "died" | "hook" | "unset" | "failed";

const HOOK_NAMES = ["session_setup_script", "session_setup", "session_live", "pre_start"] as const;
const PREFIX_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const CONTROL_RE = /[\u0000-\u001f\u007f]/;

/**
 * A {@link Provider} backed by an exec session script. Safe for concurrent use: each call is
 * an independent process. The script only ever sees the operation, a validated session name,
 * a validated metadata key, a line count, a validated prefix, key names or paths on argv;
 * config, nudge text, metadata values and process names go through stdin.
 */
export class ExecProvider implements Provider {
  readonly name: string;
  /** Absolute path of the script. */
  readonly script: string;
  /** The probe result this provider was built from. */
  readonly probe: ExecProbeResult;
  readonly city: string;
  private readonly ctx: ScriptContext;
  private readonly v2: boolean;
  private readonly implemented: ReadonlySet<ExecOperationName>;
  private readonly caps: ProviderCapabilities;
  private readonly timeoutMs: number;
  private readonly startTimeoutMs: number;

  constructor(opts: ExecProviderOptions) {
    this.ctx = opts.context;
    this.script = opts.context.script;
    this.name = `exec:${this.script}`;
    this.city = opts.city;
    this.probe = opts.probe;
    this.v2 = opts.probe.protocol >= 2;
    this.timeoutMs = opts.timeoutMs ?? EXEC_OP_TIMEOUT_MS;
    this.startTimeoutMs = opts.startTimeoutMs ?? EXEC_START_TIMEOUT_MS;
    // A v1 script is assumed to implement what the probe could not try (the reference
    // behaviour); operations introduced by v2 are never sent to it.
    this.implemented = new Set(
      opts.probe.operations
        .filter((o) => o.status === "implemented" || (o.status === "not-probed" && o.since === 1))
        .filter((o) => this.v2 || o.since === 1)
        .map((o) => o.op),
    );
    this.caps = {
      executes: true,
      attach: this.supports("attach"),
      attachDetect: this.supports("is-attached"),
      // v1 scripts may print an empty time for "unknown"; only a v2 declaration is a promise.
      activity: this.v2 && this.supports("get-last-activity"),
      interaction: false,
      idleWait: false,
      processNames: this.supports("process-alive"),
      copyTo: this.supports("copy-to"),
      runLive: this.supports("run-live"),
      exitStatus: false,
      exec: false,
    };
  }

  /** True when the script implements `op` (declared by `capabilities`, or found by the probe). */
  supports(op: ExecOperationName): boolean {
    return this.implemented.has(op);
  }

  capabilities(): ProviderCapabilities {
    return this.caps;
  }

  /**
   * Starts `name` through the one start lifecycle (lifecycle/start.ts): the script's `start`
   * does the hooks, staging and the initial nudge itself; when the script has `peek`, gc
   * waits for readiness and answers startup dialogs through `peek`/`send-keys` (then the
   * script is not asked to wait for the prompt). The whole start is bounded by
   * `startupTimeoutMs`; copy sources are checked before the script runs.
   * @throws as {@link startScript}, and OperationTimeoutError past the start deadline.
   */
  async start(name: string, config: StartConfig, opts?: OpOptions): Promise<StartReport> {
    validateSessionName(name);
    opts?.signal?.throwIfAborted();
    if (!this.supports("start")) throw this.unsupported("start");
    const screen = this.supports("peek");
    const scriptConfig: StartConfig = screen
      ? { ...config, readyPromptPrefix: undefined, readyDelayMs: undefined }
      : config;
    let made = false;
    const backend: StartBackend = {
      provider: this.name,
      delegates: screen ? SCRIPT_STEPS : SCRIPT_STEPS_AND_READINESS,
      runCommand: runLocalCommand,
      stage: async () => undefined, // the script stages (sources were checked by the lifecycle)
      create: async (_p, signal) => {
        await this.startScript(name, scriptConfig, signal);
        made = true;
      },
      alive: (signal) => this.isRunning(name, { signal }),
      died: async () => new SessionDiedDuringStartupError(name, "the session is no longer running"),
      ...(screen ? { screen: (signal: AbortSignal) => this.startupScreen(name, signal) } : {}),
      ...(this.supports("send-keys")
        ? {
            sendKeys: (keys: readonly string[], signal: AbortSignal) => this.sendKeys(name, keys, { signal }),
          }
        : {}),
      destroy: async () => {
        if (made) await this.cleanupFailedStart(name);
      },
    };
    return runStart(backend, planStart(name, this.city, config), limitsFor(config), opts?.signal);
  }

  /**
   * `start <name>` with the start JSON on stdin, bounded by the start deadline.
   * @throws SessionExistsError (exit 4, or "already exists" on stderr) — nothing is cleaned up.
   * @throws SessionDiedDuringStartupError (exit 5), HookFailedError (exit 6): the script left nothing.
   * @throws OperationTimeoutError / the abort reason / ProviderError: `stop` is run to leave nothing behind.
   */
  private async startScript(name: string, config: StartConfig, signal: AbortSignal): Promise<void> {
    const stdin = JSON.stringify(
      this.v2 ? startPayload(name, config, this.city) : this.v1StartPayload(name, config),
    );
    let r: CallResult;
    const began = Date.now();
    try {
      r = await this.call("start", name, [], { stdin, signal, timeoutMs: this.startTimeoutMs });
    } catch (e) {
      // Timed out, aborted or not runnable: the script may have got half-way.
      await this.cleanupFailedStart(name);
      throw e;
    }
    if (!this.v2 && r.exit !== EXIT.OK && r.exit !== EXIT.UNKNOWN_OP) return this.v1StartFailed(name, r);
    const out = this.outcome(r, "start");
    switch (out) {
      case "ok":
        if (!this.v2) await this.v1ConfirmStarted(name, Date.now() - began, { signal });
        return;
      case "exists":
        throw new SessionExistsError(name, { cause: this.failure("start", name, r) });
      case "died":
        throw new SessionDiedDuringStartupError(name, stderrOf(r), { cause: this.failure("start", name, r) });
      case "hook":
        throw hookError(r);
      case "unknown":
        throw this.unsupported("start");
      default: {
        const err = this.failure("start", name, r);
        await this.cleanupFailedStart(name);
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
      return await this.peek(name, 60, { signal });
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

  /** `stop <name>`. Idempotent: resolves when the session is missing. */
  async stop(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    await this.command("stop", name, [], opts);
  }

  /** `interrupt <name>`. Best-effort: resolves when the session is missing. */
  async interrupt(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    await this.command("interrupt", name, [], opts);
  }

  /**
   * `is-running <name>`: `true`/`false` on stdout (exit 3 = false).
   * @throws ProviderError on any other output or a failure; UnsupportedError on exit 2.
   */
  async isRunning(name: string, opts?: OpOptions): Promise<boolean> {
    validateSessionName(name);
    if (!this.supports("is-running")) throw this.unsupported("is-running");
    const r = await this.call("is-running", name, [], opts);
    switch (this.outcome(r)) {
      case "ok":
        return parseBool(describeCall(this.ctx, "is-running", name), r.stdout);
      case "not-found":
        return false;
      case "unknown":
        throw this.unsupported("is-running");
      default:
        throw this.failure("is-running", name, r);
    }
  }

  /**
   * `list-running <prefix>`: one name per line. Names not starting with `prefix` are dropped;
   * a line that is not a valid session name is an error. An invalid prefix lists nothing
   * without calling the script.
   */
  async listRunning(prefix: string, opts?: OpOptions): Promise<string[]> {
    if (prefix !== "" && !PREFIX_RE.test(prefix)) return [];
    if (!this.supports("list-running")) throw this.unsupported("list-running");
    const r = await this.call("list-running", undefined, [prefix], opts);
    switch (this.outcome(r)) {
      case "ok":
        break;
      case "unknown":
        throw this.unsupported("list-running");
      default:
        throw this.failure("list-running", prefix, r);
    }
    const names = new Set<string>();
    for (const raw of r.stdout.split("\n")) {
      const line = raw.replace(/\r$/, "");
      if (line === "") continue;
      if (nameProblem(line) !== undefined) {
        throw new ProviderError(
          "exec",
          `${describeCall(this.ctx, "list-running", prefix)}: not a session name on stdout: ${JSON.stringify(clip(line, 200))}`,
        );
      }
      if (line.startsWith(prefix)) names.add(line);
    }
    return [...names];
  }

  /**
   * `process-alive <name>` with the names on stdin, one per line. An empty list asks
   * `is-running` instead; so does a script without `process-alive`.
   */
  async processAlive(name: string, names: readonly string[], opts?: OpOptions): Promise<boolean> {
    validateSessionName(name);
    for (const n of names) {
      if (n === "" || CONTROL_RE.test(n)) {
        throw new InvalidNameError("process name", n, "must be non-empty, without control characters");
      }
    }
    if (names.length === 0 || !this.supports("process-alive")) return this.isRunning(name, opts);
    const r = await this.call("process-alive", name, [], { ...opts, stdin: names.join("\n") });
    switch (this.outcome(r)) {
      case "ok":
        return parseBool(describeCall(this.ctx, "process-alive", name), r.stdout);
      case "not-found":
        return false;
      case "unknown":
        return this.isRunning(name, opts);
      default:
        if (await this.isGone(name, opts)) return false;
        throw this.failure("process-alive", name, r);
    }
  }

  /** `nudge <name>` with the flattened text on stdin. Best-effort for a missing session. */
  async nudge(name: string, content: NudgeContent, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    const text = flattenContent(content);
    if (text === "") return;
    await this.command("nudge", name, [], { ...opts, stdin: text });
  }

  /** `send-keys <name> <key>…` — key names are validated before they reach argv. */
  async sendKeys(name: string, keys: readonly string[], opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    for (const k of keys) {
      if (!isKeyName(k))
        throw new InvalidNameError("key", k, "must be a key name such as Enter, C-c, Down or y");
    }
    if (keys.length === 0) return;
    await this.command("send-keys", name, keys, opts);
  }

  /** `peek <name> <lines>`; trailing newlines trimmed. @throws SessionNotFoundError when missing. */
  async peek(name: string, lines: number, opts?: OpOptions): Promise<string> {
    validateSessionName(name);
    const n = Number.isFinite(lines) ? Math.trunc(lines) : 0;
    const r = await this.query("peek", name, [String(n)], opts);
    return trimTrailingNewlines(r.stdout);
  }

  /**
   * `set-meta <name> <key>` with the value on stdin (v1: framed by {@link frameMetaV1}, and
   * only after `is-running` confirmed the session).
   * @throws SessionNotFoundError when missing.
   */
  async setMeta(name: string, key: string, value: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    if (!this.v2) {
      await this.v1RequireRunning(name, "set-meta", opts);
      await this.metaCommand("set-meta", name, key, frameMetaV1(value), opts);
      return;
    }
    await this.metaCommand("set-meta", name, key, value, opts);
  }

  /**
   * `get-meta <name> <key>`. v2: stdout is the exact value and exit 7 means unset; v1: see
   * {@link v1GetMeta}.
   * @throws SessionNotFoundError when the session is missing.
   */
  async getMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    if (!this.v2) return this.v1GetMeta(name, key, opts);
    const r = await this.query("get-meta", name, [key], opts, true);
    return r?.stdout;
  }

  /** `remove-meta <name> <key>`. @throws SessionNotFoundError when missing. */
  async removeMeta(name: string, key: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.metaCommand("remove-meta", name, key, undefined, opts);
  }

  /** `get-last-activity <name>`: RFC 3339 or empty. `undefined` when missing or unsupported. */
  async getLastActivity(name: string, opts?: OpOptions): Promise<Date | undefined> {
    validateSessionName(name);
    if (!this.supports("get-last-activity")) return undefined;
    const r = await this.call("get-last-activity", name, [], opts);
    switch (this.outcome(r)) {
      case "ok":
        return parseActivity(describeCall(this.ctx, "get-last-activity", name), r.stdout);
      case "not-found":
      case "unknown":
        return undefined;
      default:
        if (await this.isGone(name, opts)) return undefined;
        throw this.failure("get-last-activity", name, r);
    }
  }

  /** `clear-scrollback <name>`. Best-effort. */
  async clearScrollback(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    await this.command("clear-scrollback", name, [], opts);
  }

  /**
   * `copy-to <name> <src> <rel_dst>`. Best-effort: resolves without calling the script when
   * `src` does not exist. `src` must be absolute and `relDst` relative without `..`.
   */
  async copyTo(name: string, src: string, relDst: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    if (!isAbsolute(src) || CONTROL_RE.test(src)) {
      throw new InvalidNameError("copy source", src, "must be an absolute path without control characters");
    }
    const dst = checkRelPath("copy destination", relDst);
    try {
      await stat(src);
    } catch {
      return;
    }
    await this.command("copy-to", name, [src, dst], opts);
  }

  /** `run-live <name>` with the start JSON on stdin; a no-op when the script lacks it. */
  async runLive(name: string, config: StartConfig, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    if (!this.supports("run-live")) return;
    const stdin = JSON.stringify(startPayload(name, config, this.city));
    await this.command("run-live", name, [], { ...opts, stdin }, this.startTimeoutMs);
  }

  /**
   * `attach <name>` with the caller's stdio inherited (no deadline: it lasts until detach).
   * Not run through the pipe-based spawn helper: the script needs the real TTY and must stay
   * in the terminal's foreground process group.
   */
  async attach(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    if (!this.caps.attach) throw this.unsupported("attach");
    opts?.signal?.throwIfAborted();
    const signal = opts?.signal;
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(this.script, ["attach", name], {
        stdio: "inherit",
        env: this.ctx.env,
        cwd: this.ctx.cwd,
      });
      const onAbort = () => child.kill("SIGTERM");
      signal?.addEventListener("abort", onAbort, { once: true });
      child.once("error", (e) => {
        signal?.removeEventListener("abort", onAbort);
        reject(
          new ProviderError("exec", `${describeCall(this.ctx, "attach", name)}: ${e.message}`, { cause: e }),
        );
      });
      child.once("close", (c) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(c);
      });
    });
    signal?.throwIfAborted();
    if (code === EXIT.OK) return;
    if (code === EXIT.UNKNOWN_OP) throw this.unsupported("attach");
    if (this.v2 && code === EXIT.NOT_FOUND) throw new SessionNotFoundError(name);
    throw new ProviderError("exec", `${describeCall(this.ctx, "attach", name)}: exit ${code ?? "by signal"}`);
  }

  /** `is-attached <name>` (v2). False when missing or unsupported. */
  async isAttached(name: string, opts?: OpOptions): Promise<boolean> {
    validateSessionName(name);
    if (!this.supports("is-attached")) return false;
    const r = await this.call("is-attached", name, [], opts);
    switch (this.outcome(r)) {
      case "ok":
        return parseBool(describeCall(this.ctx, "is-attached", name), r.stdout);
      case "not-found":
      case "unknown":
        return false;
      default:
        if (await this.isGone(name, opts)) return false;
        throw this.failure("is-attached", name, r);
    }
  }

  /**
   * `check-image <image>`: lets a container backend verify an image before sessions use it.
   * Resolves when the script lacks it (not a container backend).
   */
  async checkImage(image: string, opts?: OpOptions): Promise<void> {
    if (!isImageRef(image)) throw new InvalidNameError("image", image, "must be an image reference");
    if (!this.supports("check-image")) return;
    const r = await this.call("check-image", undefined, [image], opts);
    const out = this.outcome(r);
    if (out !== "ok" && out !== "unknown") throw this.failure("check-image", image, r);
  }

  /** `copy-from <name> <path>`: a file's contents from the session's work dir. */
  async copyFrom(name: string, path: string, opts?: OpOptions): Promise<string> {
    validateSessionName(name);
    const rel = checkRelPath("copy-from path", path);
    if (rel === "") throw new InvalidNameError("copy-from path", path, "must name a file");
    const r = await this.query("copy-from", name, [rel], opts);
    return r.stdout;
  }

  /** Nothing to release: every call is its own process. */
  async close(): Promise<void> {}

  // ---- protocol v1 compensations (what a v1 script cannot say; see v1.ts)

  /**
   * The start JSON for a v1 script: the v1 keys only, with the prompt and its flag carried
   * inside `command` ({@link v1PromptCommand}) and the hook dir inside the hook commands
   * ({@link v1Hooks}); the v2 `prompt`, `prompt_flag` and `hook_dir` keys are left out so a
   * script cannot deliver the prompt twice.
   * @throws UnsupportedError when the prompt cannot be carried (nothing is started).
   */
  private v1StartPayload(name: string, config: StartConfig): ExecStartPayload {
    const command = v1PromptCommand(this.script, config);
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
    const cause = this.failure("start", name, r);
    const kind = classifyV1StartFailure(r.stderr);
    if (kind.kind === "exists") throw new SessionExistsError(name, { cause });
    await this.cleanupFailedStart(name);
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
        lastPeek = await this.peek(name, 50, opts);
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
      [alive] = await Promise.all([this.isRunning(name, opts), look()]);
    } catch (e) {
      await this.cleanupFailedStart(name);
      throw opts?.signal?.aborted ? opts.signal.reason : e;
    }
    if (alive) return;
    await this.cleanupFailedStart(name);
    throw new SessionDiedDuringStartupError(name, diedDuringStartupDetail(lastPeek));
  }

  /**
   * v1 `get-meta` (run together with `is-running`, since a v1 script cannot say "no such
   * session"): a session that is not running → SessionNotFoundError; otherwise the value
   * unframed by {@link unframeMetaV1} (empty output = unset).
   */
  private async v1GetMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    const [got, running] = await Promise.allSettled([
      this.query("get-meta", name, [key], opts, true),
      this.isRunning(name, opts),
    ]);
    if (running.status === "fulfilled" && !running.value) throw new SessionNotFoundError(name);
    if (got.status === "rejected") throw got.reason;
    if (running.status === "rejected") throw running.reason;
    return got.value === undefined ? undefined : unframeMetaV1(got.value.stdout);
  }

  /** SessionNotFoundError unless `is-running` says the session runs (v1 `set-meta` would create it). */
  private async v1RequireRunning(name: string, op: ExecOperationName, opts?: OpOptions): Promise<void> {
    if (!(await this.isRunning(name, opts))) {
      throw new SessionNotFoundError(name, `${this.script} ${op}: the session is not running`);
    }
  }

  // ---- internals

  private call(
    op: ExecOperationName,
    name: string | undefined,
    args: readonly string[],
    opts: {
      stdin?: string | undefined;
      signal?: AbortSignal | undefined;
      timeoutMs?: number | undefined;
    } = {},
  ): Promise<CallResult> {
    return callScript(this.ctx, op, name, args, {
      stdin: opts.stdin,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs ?? this.timeoutMs,
    });
  }

  private outcome(r: CallResult, op?: ExecOperationName): Outcome {
    if (r.exit === EXIT.OK) return "ok";
    if (r.exit === EXIT.UNKNOWN_OP) return "unknown";
    if (this.v2) {
      switch (r.exit) {
        case EXIT.NOT_FOUND:
          return "not-found";
        case EXIT.EXISTS:
          return "exists";
        case EXIT.DIED:
          return "died";
        case EXIT.HOOK_FAILED:
          return "hook";
        case EXIT.UNSET:
          return "unset";
      }
    }
    // The reference protocol's only error classification: "already exists" on stderr.
    if (op === "start" && /already exists/i.test(r.stderr)) return "exists";
    return "failed";
  }

  /** `exec: <script> <op> <name>: <stderr>` (or the exit code when stderr is empty). */
  private failure(op: ExecOperationName, name: string | undefined, r: CallResult): ProviderError {
    return new ProviderError("exec", `${describeCall(this.ctx, op, name)}: ${stderrOf(r)}`);
  }

  private unsupported(op: ExecOperationName): UnsupportedError {
    return new UnsupportedError(`exec script ${this.script} does not implement "${op}"`);
  }

  /** True when `is-running` says the session is gone (errors count as "not known gone"). */
  private async isGone(name: string, opts?: OpOptions): Promise<boolean> {
    try {
      return !(await this.isRunning(name, opts));
    } catch {
      return false;
    }
  }

  private async cleanupFailedStart(name: string): Promise<void> {
    try {
      await this.stop(name);
    } catch {
      // best-effort: the original failure is what the caller needs to see
    }
  }

  /** An idempotent or best-effort command: a missing session or an unknown op is success. */
  private async command(
    op: ExecOperationName,
    name: string,
    args: readonly string[],
    opts?: { stdin?: string | undefined; signal?: AbortSignal | undefined },
    timeoutMs?: number,
  ): Promise<void> {
    if (!this.supports(op)) return;
    const r = await this.call(op, name, args, { ...opts, timeoutMs });
    switch (this.outcome(r, op)) {
      case "ok":
      case "unknown":
      case "not-found":
        return;
      case "hook":
        throw hookError(r);
      default:
        if (await this.isGone(name, opts)) return;
        throw this.failure(op, name, r);
    }
  }

  /** set-meta / remove-meta: need the session; an unknown op is a no-op (reference semantics). */
  private async metaCommand(
    op: "set-meta" | "remove-meta",
    name: string,
    key: string,
    stdin: string | undefined,
    opts?: OpOptions,
  ): Promise<void> {
    if (!this.supports(op)) return;
    const r = await this.call(op, name, [key], { ...opts, stdin });
    switch (this.outcome(r)) {
      case "ok":
      case "unknown":
        return;
      case "not-found":
        throw new SessionNotFoundError(name, undefined, { cause: this.failure(op, name, r) });
      default: {
        const err = this.failure(op, name, r);
        if (await this.isGone(name, opts)) throw new SessionNotFoundError(name, undefined, { cause: err });
        throw err;
      }
    }
  }

  /** A query on one session: missing → SessionNotFoundError; exit 2 → UnsupportedError. */
  private async query(
    op: ExecOperationName,
    name: string,
    args: readonly string[],
    opts: OpOptions | undefined,
    unsetAllowed: true,
  ): Promise<CallResult | undefined>;
  private async query(
    op: ExecOperationName,
    name: string,
    args: readonly string[],
    opts: OpOptions | undefined,
  ): Promise<CallResult>;
  private async query(
    op: ExecOperationName,
    name: string,
    args: readonly string[],
    opts: OpOptions | undefined,
    unsetAllowed = false,
  ): Promise<CallResult | undefined> {
    if (!this.supports(op)) throw this.unsupported(op);
    const r = await this.call(op, name, args, opts);
    switch (this.outcome(r)) {
      case "ok":
        return r;
      case "unset":
        if (unsetAllowed) return undefined;
        throw this.failure(op, name, r);
      case "unknown":
        throw this.unsupported(op);
      case "not-found":
        throw new SessionNotFoundError(name, undefined, { cause: this.failure(op, name, r) });
      default: {
        const err = this.failure(op, name, r);
        if (await this.isGone(name, opts)) throw new SessionNotFoundError(name, undefined, { cause: err });
        throw err;
      }
    }
  }
}

function stderrOf(r: CallResult): string {
  const t = r.stderr.trim();
  return t ? clip(t, 2_000) : `exit ${r.exit}`;
}

/** HookFailedError from exit 6: stderr starts with the hook's name (`pre_start: …`). */
function hookError(r: CallResult): HookFailedError {
  const text = stderrOf(r);
  const hook = HOOK_NAMES.find((h) => text.startsWith(h));
  const detail = hook ? text.slice(hook.length).replace(/^[:\s]+/, "") : text;
  return new HookFailedError(hook ?? "hook", detail || "failed");
}

/** Normalises a relative path for argv; rejects absolute paths, `..`, leading `-` and control characters. */
function checkRelPath(kind: string, rel: string): string {
  if (rel === "" || rel === ".") return "";
  const n = posix.normalize(rel).replace(/\/+$/, "");
  if (
    isAbsolute(rel) ||
    CONTROL_RE.test(rel) ||
    n === ".." ||
    n.startsWith("../") ||
    n.startsWith("-") ||
    n.split("/").includes("..")
  ) {
    throw new InvalidNameError(
      kind,
      rel,
      "must be a relative path inside the work dir (no .., no leading -)",
    );
  }
  return n === "." ? "" : n;
}
