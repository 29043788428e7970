/**
 * The protocol probe: which operations an exec script implements. A v2 script says so itself
 * (`<script> capabilities`); for any script the probe can also run the read-only operations
 * against a session name that cannot exist and watch for exit 2. It never runs an operation
 * that creates or changes anything. Used by the exec provider (to fill `capabilities()`) and
 * by `gc conformance exec:PATH` (to report what a script author still has to implement).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeError, isGcError, ProviderError } from "../../base/errors.js";
import {
  clip,
  EXEC_OPERATIONS,
  EXIT,
  type ExecCapabilitiesDoc,
  type ExecOperationName,
  parseActivity,
  parseBool,
  parseCapabilities,
} from "./protocol.js";
import { type CallResult, callScript, resolveScript, type ScriptContext, scriptEnv } from "./script.js";

/** Whether a script implements one operation. */
export type OperationStatus =
  /** Declared by `capabilities`, or answered with an exit code other than 2. */
  | "implemented"
  /** Not declared by `capabilities`, or answered with exit 2. */
  | "missing"
  /** A protocol v1 script and the operation is not safe to try (it could change something). */
  | "not-probed";

/** The probe's finding for one operation. */
export interface ExecOperationReport {
  readonly op: ExecOperationName;
  readonly status: OperationStatus;
  /** A conformant script must implement it. */
  readonly required: boolean;
  /** Protocol version that introduced the operation. */
  readonly since: 1 | 2;
  /** What the probe saw when it ran the operation, e.g. `exit 1: boom` or a mismatch. */
  readonly detail?: string | undefined;
}

/** Everything the probe learnt about a script. */
export interface ExecProbeResult {
  /** Absolute script path. */
  readonly script: string;
  /** Protocol version the script speaks: the `capabilities` answer, else 1. */
  readonly protocol: number;
  /** `capabilities` when the script described itself, `exit-codes` when only probing told. */
  readonly source: "capabilities" | "exit-codes";
  /** One entry per protocol operation, in table order. */
  readonly operations: readonly ExecOperationReport[];
  /** The script's `backend` facts from `capabilities` (e.g. `{type: "tmux", socket}`), if any. */
  readonly backend?: Readonly<Record<string, unknown>> | undefined;
  /** Required operations the script does not implement. */
  readonly missingRequired: readonly ExecOperationName[];
}

/** Options of {@link probeExecScript}. */
export interface ExecProbeOptions {
  /** Base directory of a relative script path. Default: the current directory. */
  readonly cwd?: string | undefined;
  /** Base environment of the calls. Default: `process.env`. */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** `GC_EXEC_STATE_DIR` for the calls. Default: a temp dir, removed afterwards. */
  readonly stateDir?: string | undefined;
  /** `GC_CITY` for the calls. Default `gc-probe`. */
  readonly city?: string | undefined;
  /** Deadline of each call. Default 10 s. */
  readonly timeoutMs?: number | undefined;
  /**
   * Also run the read-only operations against a session name that cannot exist, even when
   * the script declared its operations, and report disagreements. Default true.
   */
  readonly thorough?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
}

const PROBE_TIMEOUT_MS = 10_000;

/**
 * Finds out which protocol operations the script at `script` implements (absolute, relative
 * to `opts.cwd`, or on PATH). Side-effect free: only `capabilities` and read-only operations
 * on a random session name (`gc-probe-none-<hex>`) are run, never start/stop/set-meta/nudge.
 * @throws ProviderError when the script cannot be found or run, or its `capabilities`
 * output is malformed; OperationTimeoutError when a call hangs.
 */
export async function probeExecScript(script: string, opts: ExecProbeOptions = {}): Promise<ExecProbeResult> {
  const base = opts.env ?? process.env;
  const path = await resolveScript(script, opts.cwd ?? process.cwd(), base);
  const tempState = opts.stateDir === undefined ? await mkdtemp(join(tmpdir(), "gc-exec-probe-")) : undefined;
  try {
    const ctx: ScriptContext = {
      script: path,
      env: scriptEnv(base, undefined, opts.stateDir ?? tempState ?? "", opts.city ?? "gc-probe"),
      cwd: opts.cwd ?? process.cwd(),
    };
    return await probeScript(ctx, {
      timeoutMs: opts.timeoutMs,
      thorough: opts.thorough ?? true,
      signal: opts.signal,
    });
  } finally {
    if (tempState) await rm(tempState, { recursive: true, force: true });
  }
}

/** The probe on an already-resolved script context (the provider's entry point). */
export async function probeScript(
  ctx: ScriptContext,
  opts: { timeoutMs?: number | undefined; thorough: boolean; signal?: AbortSignal | undefined },
): Promise<ExecProbeResult> {
  const timeoutMs = opts.timeoutMs ?? PROBE_TIMEOUT_MS;
  const caps = await callScript(ctx, "capabilities", undefined, [], { timeoutMs, signal: opts.signal });
  let doc: ExecCapabilitiesDoc | undefined;
  if (caps.exit === EXIT.OK) {
    doc = parseCapabilities(ctx.script, caps.stdout);
  } else if (caps.exit !== EXIT.UNKNOWN_OP) {
    throw new ProviderError("exec", `${ctx.script} capabilities: exit ${caps.exit}${tail(caps.stderr)}`);
  }
  const tried = new Map<ExecOperationName, Observation>();
  if (!doc || opts.thorough) {
    const name = `gc-probe-none-${randomBytes(8).toString("hex")}`;
    const ops = EXEC_OPERATIONS.filter((o) => o.probe);
    const seen = await Promise.all(ops.map((o) => observe(ctx, o.op, name, timeoutMs, opts.signal)));
    ops.forEach((o, i) => {
      tried.set(o.op, seen[i]!);
    });
  }
  const operations: ExecOperationReport[] = EXEC_OPERATIONS.map((o) => {
    const obs = tried.get(o.op);
    const row = { op: o.op, required: o.required, since: o.since };
    if (o.op === "capabilities") {
      return { ...row, status: doc ? "implemented" : "missing" };
    }
    if (doc) {
      const declared = doc.operations.includes(o.op);
      let detail = obs?.detail;
      if (obs && declared && obs.unknown) detail = "declared by capabilities, but exited 2 when probed";
      if (obs && !declared && !obs.unknown)
        detail = `not declared by capabilities, but answered (${obs.summary})`;
      return { ...row, status: declared ? "implemented" : "missing", detail };
    }
    if (!obs) return { ...row, status: "not-probed" };
    return { ...row, status: obs.unknown ? "missing" : "implemented", detail: obs.detail };
  });
  return {
    script: ctx.script,
    protocol: doc?.protocol ?? 1,
    source: doc ? "capabilities" : "exit-codes",
    operations,
    backend: doc?.backend,
    missingRequired: operations.filter((r) => r.required && r.status === "missing").map((r) => r.op),
  };
}

interface Observation {
  readonly unknown: boolean;
  readonly summary: string;
  readonly detail?: string | undefined;
}

async function observe(
  ctx: ScriptContext,
  op: ExecOperationName,
  name: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Observation> {
  let r: CallResult;
  try {
    switch (op) {
      case "process-alive":
        r = await callScript(ctx, op, name, [], { stdin: "gc-probe-none", timeoutMs, signal });
        break;
      case "get-meta":
        r = await callScript(ctx, op, name, ["gc_probe"], { timeoutMs, signal });
        break;
      case "peek":
        r = await callScript(ctx, op, name, ["1"], { timeoutMs, signal });
        break;
      case "copy-from":
        r = await callScript(ctx, op, name, ["gc-probe"], { timeoutMs, signal });
        break;
      case "list-running":
        // the prefix is the impossible name itself: the answer must be empty
        r = await callScript(ctx, op, undefined, [name], { timeoutMs, signal });
        break;
      default:
        r = await callScript(ctx, op, name, [], { timeoutMs, signal });
    }
  } catch (e) {
    if (signal?.aborted) throw e;
    const why = isGcError(e, "GC_TIMEOUT") ? "timed out" : describeError(e);
    return { unknown: false, summary: why, detail: why };
  }
  const summary = `exit ${r.exit}${tail(r.stderr)}`;
  if (r.exit === EXIT.UNKNOWN_OP) return { unknown: true, summary, detail: undefined };
  if (r.exit !== EXIT.OK) return { unknown: false, summary, detail: summary };
  return { unknown: false, summary, detail: checkAnswer(op, r.stdout) };
}

/** A note when a read-only answer about a missing session looks wrong, else `undefined`. */
function checkAnswer(op: ExecOperationName, stdout: string): string | undefined {
  try {
    switch (op) {
      case "is-running":
      case "is-attached":
      case "process-alive":
        if (parseBool(op, stdout)) return "answered true for a session that cannot exist";
        return undefined;
      case "get-last-activity":
        parseActivity(op, stdout);
        return undefined;
      case "list-running":
        return stdout.trim() === ""
          ? undefined
          : `listed sessions for an impossible prefix: ${clip(stdout, 80)}`;
      case "get-meta":
      case "peek":
      case "copy-from":
        return "exit 0 for a session that cannot exist (expected exit 3, or exit 1 with is-running false)";
      default:
        return undefined;
    }
  } catch (e) {
    return describeError(e);
  }
}

function tail(stderr: string): string {
  const t = stderr.trim();
  return t ? `: ${clip(t.split("\n")[0] ?? "", 160)}` : "";
}

/** Human-readable probe report, one line per operation (what `gc conformance exec:PATH` prints). */
export function formatProbe(p: ExecProbeResult): string {
  const lines = [
    `exec script ${p.script}: protocol v${p.protocol} (${p.source === "capabilities" ? "declared by capabilities" : "inferred from exit codes"})`,
  ];
  for (const o of p.operations) {
    const mark = o.status === "implemented" ? "✓" : o.status === "missing" ? (o.required ? "✗" : "-") : "?";
    lines.push(
      `  ${mark} ${o.op.padEnd(18)} ${o.status}${o.required ? " (required)" : ""}${o.detail ? ` — ${o.detail}` : ""}`,
    );
  }
  if (p.missingRequired.length > 0)
    lines.push(`  missing required operations: ${p.missingRequired.join(", ")}`);
  return lines.join("\n");
}
