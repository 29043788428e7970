/**
 * ExecProvider: every {@link Provider} operation delegated to a user script as
 * `<script> <operation> <name> [args]` (no shell), wire-compatible with Gas City's exec
 * session protocol plus the v2 extensions in protocol.ts. Values travel on stdin, results on
 * stdout; every call has a deadline and its whole process group is killed on timeout or
 * abort. For a protocol v1 script the provider also does what v1 cannot say (v1.ts: the
 * prompt inside `command`, hooks in the hook dir, a post-start `is-running` check, framed
 * metadata, "not found" from `is-running`, start failures classified from stderr). This
 * module is the provider's surface and argv validation; calls and their outcomes are in
 * calls.ts, starting a session in start.ts. Built by `createProvider` in index.ts; the
 * protocol is documented in docs/exec-protocol.md.
 */
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { isAbsolute, posix } from "node:path";
import { InvalidNameError, ProviderError, SessionNotFoundError } from "../../base/errors.js";
import { nameProblem, validateMetaKey, validateSessionName } from "../../base/names.js";
import {
  flattenContent,
  type NudgeContent,
  type OpOptions,
  type Provider,
  type ProviderCapabilities,
  type StartConfig,
  type StartReport,
} from "../provider.js";
import { ScriptCalls } from "./calls.js";
import type { ExecProbeResult } from "./probe.js";
import {
  clip,
  EXIT,
  type ExecOperationName,
  isImageRef,
  isKeyName,
  parseActivity,
  parseBool,
  startPayload,
  trimTrailingNewlines,
} from "./protocol.js";
import { describeCall, EXEC_OP_TIMEOUT_MS, EXEC_START_TIMEOUT_MS, type ScriptContext } from "./script.js";
import { ScriptStart } from "./start.js";
import { frameMetaV1, unframeMetaV1 } from "./v1.js";

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
  private readonly calls: ScriptCalls;
  private readonly starter: ScriptStart;
  private readonly caps: ProviderCapabilities;
  private readonly startTimeoutMs: number;

  constructor(opts: ExecProviderOptions) {
    this.script = opts.context.script;
    this.name = `exec:${this.script}`;
    this.city = opts.city;
    this.probe = opts.probe;
    this.calls = new ScriptCalls(opts.context, opts.probe, opts.timeoutMs ?? EXEC_OP_TIMEOUT_MS);
    this.startTimeoutMs = opts.startTimeoutMs ?? EXEC_START_TIMEOUT_MS;
    this.starter = new ScriptStart({
      calls: this.calls,
      session: this,
      provider: this.name,
      city: this.city,
      startTimeoutMs: this.startTimeoutMs,
    });
    this.caps = {
      executes: true,
      attach: this.supports("attach"),
      attachDetect: this.supports("is-attached"),
      // v1 scripts may print an empty time for "unknown"; only a v2 declaration is a promise.
      activity: this.calls.v2 && this.supports("get-last-activity"),
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
    return this.calls.supports(op);
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
   * @throws as {@link ScriptStart.start}, and OperationTimeoutError past the start deadline.
   */
  async start(name: string, config: StartConfig, opts?: OpOptions): Promise<StartReport> {
    validateSessionName(name);
    opts?.signal?.throwIfAborted();
    return this.starter.start(name, config, opts?.signal);
  }

  /** `stop <name>`. Idempotent: resolves when the session is missing. */
  async stop(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    await this.calls.command("stop", name, [], opts);
  }

  /** `interrupt <name>`. Best-effort: resolves when the session is missing. */
  async interrupt(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    await this.calls.command("interrupt", name, [], opts);
  }

  /**
   * `is-running <name>`: `true`/`false` on stdout (exit 3 = false).
   * @throws ProviderError on any other output or a failure; UnsupportedError on exit 2.
   */
  async isRunning(name: string, opts?: OpOptions): Promise<boolean> {
    validateSessionName(name);
    return this.calls.running(name, opts);
  }

  /**
   * `list-running <prefix>`: one name per line. Names not starting with `prefix` are dropped;
   * a line that is not a valid session name is an error. An invalid prefix lists nothing
   * without calling the script.
   */
  async listRunning(prefix: string, opts?: OpOptions): Promise<string[]> {
    if (prefix !== "" && !PREFIX_RE.test(prefix)) return [];
    if (!this.supports("list-running")) throw this.calls.unsupported("list-running");
    const r = await this.calls.call("list-running", undefined, [prefix], opts);
    switch (this.calls.outcome(r)) {
      case "ok":
        break;
      case "unknown":
        throw this.calls.unsupported("list-running");
      default:
        throw this.calls.failure("list-running", prefix, r);
    }
    const names = new Set<string>();
    for (const raw of r.stdout.split("\n")) {
      const line = raw.replace(/\r$/, "");
      if (line === "") continue;
      if (nameProblem(line) !== undefined) {
        throw new ProviderError(
          "exec",
          `${describeCall(this.calls.ctx, "list-running", prefix)}: not a session name on stdout: ${JSON.stringify(clip(line, 200))}`,
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
    const r = await this.calls.call("process-alive", name, [], { ...opts, stdin: names.join("\n") });
    switch (this.calls.outcome(r)) {
      case "ok":
        return parseBool(describeCall(this.calls.ctx, "process-alive", name), r.stdout);
      case "not-found":
        return false;
      case "unknown":
        return this.isRunning(name, opts);
      default:
        if (await this.calls.isGone(name, opts)) return false;
        throw this.calls.failure("process-alive", name, r);
    }
  }

  /** `nudge <name>` with the flattened text on stdin. Best-effort for a missing session. */
  async nudge(name: string, content: NudgeContent, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    const text = flattenContent(content);
    if (text === "") return;
    await this.calls.command("nudge", name, [], { ...opts, stdin: text });
  }

  /** `send-keys <name> <key>…` — key names are validated before they reach argv. */
  async sendKeys(name: string, keys: readonly string[], opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    for (const k of keys) {
      if (!isKeyName(k))
        throw new InvalidNameError("key", k, "must be a key name such as Enter, C-c, Down or y");
    }
    if (keys.length === 0) return;
    await this.calls.command("send-keys", name, keys, opts);
  }

  /** `peek <name> <lines>`; trailing newlines trimmed. @throws SessionNotFoundError when missing. */
  async peek(name: string, lines: number, opts?: OpOptions): Promise<string> {
    validateSessionName(name);
    const n = Number.isFinite(lines) ? Math.trunc(lines) : 0;
    const r = await this.calls.query("peek", name, [String(n)], opts);
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
    if (!this.calls.v2) {
      await this.v1RequireRunning(name, "set-meta", opts);
      await this.calls.metaCommand("set-meta", name, key, frameMetaV1(value), opts);
      return;
    }
    await this.calls.metaCommand("set-meta", name, key, value, opts);
  }

  /**
   * `get-meta <name> <key>`. v2: stdout is the exact value and exit 7 means unset; v1: see
   * {@link v1GetMeta}.
   * @throws SessionNotFoundError when the session is missing.
   */
  async getMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    if (!this.calls.v2) return this.v1GetMeta(name, key, opts);
    const r = await this.calls.query("get-meta", name, [key], opts, true);
    return r?.stdout;
  }

  /** `remove-meta <name> <key>`. @throws SessionNotFoundError when missing. */
  async removeMeta(name: string, key: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.calls.metaCommand("remove-meta", name, key, undefined, opts);
  }

  /** `get-last-activity <name>`: RFC 3339 or empty. `undefined` when missing or unsupported. */
  async getLastActivity(name: string, opts?: OpOptions): Promise<Date | undefined> {
    validateSessionName(name);
    if (!this.supports("get-last-activity")) return undefined;
    const r = await this.calls.call("get-last-activity", name, [], opts);
    switch (this.calls.outcome(r)) {
      case "ok":
        return parseActivity(describeCall(this.calls.ctx, "get-last-activity", name), r.stdout);
      case "not-found":
      case "unknown":
        return undefined;
      default:
        if (await this.calls.isGone(name, opts)) return undefined;
        throw this.calls.failure("get-last-activity", name, r);
    }
  }

  /** `clear-scrollback <name>`. Best-effort. */
  async clearScrollback(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    await this.calls.command("clear-scrollback", name, [], opts);
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
    await this.calls.command("copy-to", name, [src, dst], opts);
  }

  /** `run-live <name>` with the start JSON on stdin; a no-op when the script lacks it. */
  async runLive(name: string, config: StartConfig, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    if (!this.supports("run-live")) return;
    const stdin = JSON.stringify(startPayload(name, config, this.city));
    await this.calls.command("run-live", name, [], { ...opts, stdin }, this.startTimeoutMs);
  }

  /**
   * `attach <name>` with the caller's stdio inherited (no deadline: it lasts until detach).
   * Not run through the pipe-based spawn helper: the script needs the real TTY and must stay
   * in the terminal's foreground process group.
   */
  async attach(name: string, opts?: OpOptions): Promise<void> {
    validateSessionName(name);
    if (!this.caps.attach) throw this.calls.unsupported("attach");
    opts?.signal?.throwIfAborted();
    const signal = opts?.signal;
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(this.script, ["attach", name], {
        stdio: "inherit",
        env: this.calls.ctx.env,
        cwd: this.calls.ctx.cwd,
      });
      const onAbort = () => child.kill("SIGTERM");
      signal?.addEventListener("abort", onAbort, { once: true });
      child.once("error", (e) => {
        signal?.removeEventListener("abort", onAbort);
        reject(
          new ProviderError("exec", `${describeCall(this.calls.ctx, "attach", name)}: ${e.message}`, {
            cause: e,
          }),
        );
      });
      child.once("close", (c) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(c);
      });
    });
    signal?.throwIfAborted();
    if (code === EXIT.OK) return;
    if (code === EXIT.UNKNOWN_OP) throw this.calls.unsupported("attach");
    if (this.calls.v2 && code === EXIT.NOT_FOUND) throw new SessionNotFoundError(name);
    throw new ProviderError(
      "exec",
      `${describeCall(this.calls.ctx, "attach", name)}: exit ${code ?? "by signal"}`,
    );
  }

  /** `is-attached <name>` (v2). False when missing or unsupported. */
  async isAttached(name: string, opts?: OpOptions): Promise<boolean> {
    validateSessionName(name);
    if (!this.supports("is-attached")) return false;
    const r = await this.calls.call("is-attached", name, [], opts);
    switch (this.calls.outcome(r)) {
      case "ok":
        return parseBool(describeCall(this.calls.ctx, "is-attached", name), r.stdout);
      case "not-found":
      case "unknown":
        return false;
      default:
        if (await this.calls.isGone(name, opts)) return false;
        throw this.calls.failure("is-attached", name, r);
    }
  }

  /**
   * `check-image <image>`: lets a container backend verify an image before sessions use it.
   * Resolves when the script lacks it (not a container backend).
   */
  async checkImage(image: string, opts?: OpOptions): Promise<void> {
    if (!isImageRef(image)) throw new InvalidNameError("image", image, "must be an image reference");
    if (!this.supports("check-image")) return;
    const r = await this.calls.call("check-image", undefined, [image], opts);
    const out = this.calls.outcome(r);
    if (out !== "ok" && out !== "unknown") throw this.calls.failure("check-image", image, r);
  }

  /** `copy-from <name> <path>`: a file's contents from the session's work dir. */
  async copyFrom(name: string, path: string, opts?: OpOptions): Promise<string> {
    validateSessionName(name);
    const rel = checkRelPath("copy-from path", path);
    if (rel === "") throw new InvalidNameError("copy-from path", path, "must name a file");
    const r = await this.calls.query("copy-from", name, [rel], opts);
    return r.stdout;
  }

  /** Nothing to release: every call is its own process. */
  async close(): Promise<void> {}

  // ---- protocol v1 compensations (what a v1 script cannot say; see v1.ts)

  /**
   * v1 `get-meta` (run together with `is-running`, since a v1 script cannot say "no such
   * session"): a session that is not running → SessionNotFoundError; otherwise the value
   * unframed by {@link unframeMetaV1} (empty output = unset).
   */
  private async v1GetMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    const [got, running] = await Promise.allSettled([
      this.calls.query("get-meta", name, [key], opts, true),
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
