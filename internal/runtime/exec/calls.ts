/**
 * The exec script's operations as the provider reads them (one {@link ScriptCalls} per
 * provider): which operations the script implements, one call with the provider's deadline,
 * its exit code read as a protocol outcome (v2 exit codes; for v1 only "already exists" on
 * stderr), the errors built from a failed call, and the three call shapes every operation
 * uses — a best-effort {@link ScriptCalls.command}, a metadata command, and a
 * {@link ScriptCalls.query} on one session. A failed call is "gone" (not an error) when
 * `is-running` then says the session no longer runs.
 */
import { HookFailedError, ProviderError, SessionNotFoundError, UnsupportedError } from "../../base/errors.js";
import type { OpOptions } from "../provider.js";
import type { ExecProbeResult } from "./probe.js";
import { clip, EXIT, type ExecOperationName, parseBool } from "./protocol.js";
import { type CallResult, callScript, describeCall, type ScriptContext } from "./script.js";

/** How a call ended, in protocol terms. */
export type Outcome = "ok" | "unknown" | "not-found" | "exists" | "died" | "hook" | "unset" | "failed";

const HOOK_NAMES = ["session_setup_script", "session_setup", "session_live", "pre_start"] as const;

/** The calls of one exec script; safe for concurrent use (each call is its own process). */
export class ScriptCalls {
  /** The resolved script and the environment/cwd of every call. */
  readonly ctx: ScriptContext;
  /** Absolute path of the script. */
  readonly script: string;
  /** True for a protocol v2 (or later) script. */
  readonly v2: boolean;
  private readonly implemented: ReadonlySet<ExecOperationName>;
  private readonly timeoutMs: number;

  constructor(context: ScriptContext, probe: ExecProbeResult, timeoutMs: number) {
    this.ctx = context;
    this.script = context.script;
    this.v2 = probe.protocol >= 2;
    this.timeoutMs = timeoutMs;
    // A v1 script is assumed to implement what the probe could not try (the reference
    // behaviour); operations introduced by v2 are never sent to it.
    this.implemented = new Set(
      probe.operations
        .filter((o) => o.status === "implemented" || (o.status === "not-probed" && o.since === 1))
        .filter((o) => this.v2 || o.since === 1)
        .map((o) => o.op),
    );
  }

  /** True when the script implements `op` (declared by `capabilities`, or found by the probe). */
  supports(op: ExecOperationName): boolean {
    return this.implemented.has(op);
  }

  /**
   * `is-running <name>` (the name already validated): `true`/`false` on stdout (exit 3 = false).
   * @throws ProviderError on any other output or a failure; UnsupportedError on exit 2.
   */
  async running(name: string, opts?: OpOptions): Promise<boolean> {
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

  /** True when `is-running` says the session is gone (errors count as "not known gone"). */
  async isGone(name: string, opts?: OpOptions): Promise<boolean> {
    try {
      return !(await this.running(name, opts));
    } catch {
      return false;
    }
  }

  /** `stop` after a failed start, so nothing is left behind; never throws. */
  async cleanupFailedStart(name: string): Promise<void> {
    try {
      await this.command("stop", name, []);
    } catch {
      // best-effort: the original failure is what the caller needs to see
    }
  }

  /** One call of `op`, bounded by the provider's deadline unless `opts.timeoutMs` says otherwise. */
  call(
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

  outcome(r: CallResult, op?: ExecOperationName): Outcome {
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
  failure(op: ExecOperationName, name: string | undefined, r: CallResult): ProviderError {
    return new ProviderError("exec", `${describeCall(this.ctx, op, name)}: ${stderrOf(r)}`);
  }

  unsupported(op: ExecOperationName): UnsupportedError {
    return new UnsupportedError(`exec script ${this.script} does not implement "${op}"`);
  }

  /** An idempotent or best-effort command: a missing session or an unknown op is success. */
  async command(
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
  async metaCommand(
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
  async query(
    op: ExecOperationName,
    name: string,
    args: readonly string[],
    opts: OpOptions | undefined,
    unsetAllowed: true,
  ): Promise<CallResult | undefined>;
  async query(
    op: ExecOperationName,
    name: string,
    args: readonly string[],
    opts: OpOptions | undefined,
  ): Promise<CallResult>;
  async query(
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

/** The call's stderr (clipped), or its exit code when stderr is empty. */
export function stderrOf(r: CallResult): string {
  const t = r.stderr.trim();
  return t ? clip(t, 2_000) : `exit ${r.exit}`;
}

/** HookFailedError from exit 6: stderr starts with the hook's name (`pre_start: …`). */
export function hookError(r: CallResult): HookFailedError {
  const text = stderrOf(r);
  const hook = HOOK_NAMES.find((h) => text.startsWith(h));
  const detail = hook ? text.slice(hook.length).replace(/^[:\s]+/, "") : text;
  return new HookFailedError(hook ?? "hook", detail || "failed");
}
