/**
 * Error classes shared by every layer of gc. Each class carries a stable `code`
 * (`GC_*`) that callers match on instead of message text, and keeps the original
 * failure as `cause`. Used by providers, the store, config loading and the CLI.
 */

/** Every stable error code gc uses. */
export type GcErrorCode =
  | "GC_SESSION_EXISTS"
  | "GC_SESSION_NOT_FOUND"
  | "GC_SESSION_INITIALIZING"
  | "GC_DIED_DURING_STARTUP"
  | "GC_UNSUPPORTED"
  | "GC_TIMEOUT"
  | "GC_CONFIG"
  | "GC_STALE_VERSION"
  | "GC_INVALID_NAME"
  | "GC_HOOK_FAILED"
  | "GC_NUDGE_NOT_DELIVERED"
  | "GC_DIALOG_REFUSED"
  | "GC_PROVIDER"
  | "GC_ILLEGAL_TRANSITION"
  | "GC_LOCKED"
  | "GC_USAGE"
  | "GC_STORE"
  | "GC_PARTIAL_OBSERVATION"
  | "GC_NOT_RUNNING"
  | "GC_READ_ONLY";

/** Base class of every gc error. `code` is stable; `message` is for humans. */
export abstract class GcError extends Error {
  abstract readonly code: GcErrorCode;
}

/** `start` was asked for a name that is already live. */
export class SessionExistsError extends GcError {
  override readonly name = "SessionExistsError";
  readonly code = "GC_SESSION_EXISTS";
  readonly session: string;
  /** `why`: who holds the name and what to do, when known (e.g. another city on a shared socket). */
  constructor(session: string, options?: ErrorOptions, why?: string) {
    super(`session ${JSON.stringify(session)} already exists${why ? `: ${why}` : ""}`, options);
    this.session = session;
  }
}

/** A query (peek, meta, …) named a session that does not exist. */
export class SessionNotFoundError extends GcError {
  override readonly name = "SessionNotFoundError";
  readonly code = "GC_SESSION_NOT_FOUND";
  readonly session: string;
  constructor(session: string, detail?: string, options?: ErrorOptions) {
    super(`session ${JSON.stringify(session)} not found${detail ? `: ${detail}` : ""}`, options);
    this.session = session;
  }
}

/** The session's infrastructure exists but is still booting: back off and retry. */
export class SessionInitializingError extends GcError {
  override readonly name = "SessionInitializingError";
  readonly code = "GC_SESSION_INITIALIZING";
  readonly session: string;
  constructor(session: string, detail?: string, options?: ErrorOptions) {
    super(`session ${JSON.stringify(session)} is still initializing${detail ? `: ${detail}` : ""}`, options);
    this.session = session;
  }
}

/** The session's program exited before `start` finished; nothing is left behind. */
export class SessionDiedDuringStartupError extends GcError {
  override readonly name = "SessionDiedDuringStartupError";
  readonly code = "GC_DIED_DURING_STARTUP";
  readonly session: string;
  constructor(session: string, detail?: string, options?: ErrorOptions) {
    super(`session ${JSON.stringify(session)} died during startup${detail ? `: ${detail}` : ""}`, options);
    this.session = session;
  }
}

/** The provider (or the routed backend) cannot do this operation. */
export class UnsupportedError extends GcError {
  override readonly name = "UnsupportedError";
  readonly code = "GC_UNSUPPORTED";
  constructor(what: string, options?: ErrorOptions) {
    super(`unsupported: ${what}`, options);
  }
}

/**
 * An operation ran past its deadline (as opposed to being cancelled by the caller). When the
 * operation was a command, the error carries what it printed first ({@link capturedOutputOf}).
 */
export class OperationTimeoutError extends GcError {
  override readonly name = "OperationTimeoutError";
  readonly code = "GC_TIMEOUT";
  readonly timeoutMs: number;
  constructor(what: string, timeoutMs: number, options?: ErrorOptions) {
    super(`${what}: timed out after ${timeoutMs} ms`, options);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * What a command printed before it was cut short (deadline or abort), bounded like its
 * normal output: the error such a command rejects with carries it (see {@link capturedOutputOf}).
 */
export interface CapturedOutput {
  readonly stdout: string;
  readonly stderr: string;
}

/** Where the captured output hangs on an error; `Symbol.for` so duplicate module copies agree. */
const CAPTURED_OUTPUT = Symbol.for("gc.capturedOutput");

/**
 * Hangs `output` on `e` — the {@link OperationTimeoutError} or the abort reason a cut command
 * rejects with — as a non-enumerable property, and returns `e`. A value that cannot carry it
 * (a primitive reason, a frozen object) is returned unchanged. An abort reason shared by
 * several commands keeps the output of the last one cut.
 */
export function attachCapturedOutput<E>(e: E, output: CapturedOutput): E {
  if ((typeof e === "object" && e !== null) || typeof e === "function") {
    if (Object.isExtensible(e)) {
      Object.defineProperty(e, CAPTURED_OUTPUT, { value: output, configurable: true, writable: true });
    }
  }
  return e;
}

/** The output a cut command printed before it was killed, when `e` carries it. */
export function capturedOutputOf(e: unknown): CapturedOutput | undefined {
  if ((typeof e !== "object" || e === null) && typeof e !== "function") return undefined;
  const v = (e as { [CAPTURED_OUTPUT]?: unknown })[CAPTURED_OUTPUT];
  if (typeof v !== "object" || v === null) return undefined;
  const { stdout, stderr } = v as { stdout?: unknown; stderr?: unknown };
  return typeof stdout === "string" && typeof stderr === "string" ? { stdout, stderr } : undefined;
}

/** Where in a file a config problem is. Lines and columns are 1-based. */
export interface ConfigLocation {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** Dotted key path, e.g. `agents[1].min_active_sessions`. */
  readonly path: string;
}

/** One problem found in a config file. */
export interface ConfigIssue extends ConfigLocation {
  readonly message: string;
}

/** The city file is invalid. `issues` lists every problem found, each with a location. */
export class ConfigError extends GcError {
  override readonly name = "ConfigError";
  readonly code = "GC_CONFIG";
  readonly issues: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[], options?: ErrorOptions) {
    super(issues.map(formatConfigIssue).join("\n"), options);
    this.issues = issues;
  }
}

/** `file:line:col: path: message` — the one format every config error is printed in. */
export function formatConfigIssue(i: ConfigIssue): string {
  return `${i.file}:${i.line}:${i.col}: ${i.path ? `${i.path}: ` : ""}${i.message}`;
}

/** A compare-and-set saw a different version than the caller expected. */
export class StaleVersionError extends GcError {
  override readonly name = "StaleVersionError";
  readonly code = "GC_STALE_VERSION";
  readonly expected: number;
  readonly actual: number | undefined;
  constructor(what: string, expected: number, actual: number | undefined, options?: ErrorOptions) {
    super(`${what}: stale version (expected ${expected}, found ${actual ?? "none"})`, options);
    this.expected = expected;
    this.actual = actual;
  }
}

/** A session, agent or metadata key name failed validation. Nothing was done. */
export class InvalidNameError extends GcError {
  override readonly name = "InvalidNameError";
  readonly code = "GC_INVALID_NAME";
  readonly value: string;
  constructor(kind: string, value: string, why: string, options?: ErrorOptions) {
    super(`invalid ${kind} ${JSON.stringify(value)}: ${why}`, options);
    this.value = value;
  }
}

/** A start hook (`pre_start`, `session_setup`, `session_setup_script`) failed. */
export class HookFailedError extends GcError {
  override readonly name = "HookFailedError";
  readonly code = "GC_HOOK_FAILED";
  readonly hook: string;
  constructor(hook: string, detail: string, options?: ErrorOptions) {
    super(`${hook} failed: ${detail}`, options);
    this.hook = hook;
  }
}

/**
 * A nudge could not be confirmed as submitted. Never reported as success. `sent`: the text
 * may have reached the program (it was typed, only its taking was not seen), so sending it
 * again could deliver it twice; false when gc refused before typing anything.
 */
export class NudgeNotDeliveredError extends GcError {
  override readonly name = "NudgeNotDeliveredError";
  readonly code = "GC_NUDGE_NOT_DELIVERED";
  readonly session: string;
  readonly sent: boolean;
  constructor(session: string, detail: string, options?: ErrorOptions & { readonly sent?: boolean }) {
    super(`nudge to ${JSON.stringify(session)} not delivered: ${detail}`, options);
    this.session = session;
    this.sent = options?.sent ?? false;
  }
}

/** A provider operation failed for a backend-specific reason; `provider` names the backend. */
export class ProviderError extends GcError {
  override readonly name = "ProviderError";
  readonly code = "GC_PROVIDER";
  readonly provider: string;
  /** Set when the failure is not the session's own (see {@link FailureFault}). */
  readonly fault: FailureFault | undefined;
  constructor(provider: string, message: string, options?: ErrorOptions & { fault?: FailureFault }) {
    super(`${provider}: ${message}`, options);
    this.provider = provider;
    this.fault = options?.fault;
  }
}

/**
 * Whose fault a failed operation is when it is not the session's program: `infrastructure`
 * (the backend's API failed: 5xx, refused or dropped connections, timeouts) or
 * `configuration` (the backend refused the request as configured: admission, RBAC). A start
 * failing for either reason is retried later but never counts towards quarantine.
 */
export type FailureFault = "infrastructure" | "configuration";

/** The {@link FailureFault} of `e` or of an error in its cause chain; `undefined` when none says. Pure. */
export function faultOf(e: unknown): FailureFault | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 8 && cur instanceof Error; i++) {
    if (cur instanceof ProviderError && cur.fault) return cur.fault;
    cur = cur.cause;
  }
  return undefined;
}

/** One failed backend of a partial observation. */
export interface FailedBackend {
  readonly backend: string;
  readonly error: string;
}

/**
 * A routing provider's listing in which some backends answered and others did not:
 * `running` holds what the healthy backends listed, `failed` names the rest. Callers must
 * not read the missing part as "none running" (the reconciler stops nothing that pass).
 */
export class PartialObservationError extends GcError {
  override readonly name = "PartialObservationError";
  readonly code = "GC_PARTIAL_OBSERVATION";
  readonly running: readonly string[];
  readonly failed: readonly FailedBackend[];
  constructor(
    provider: string,
    running: readonly string[],
    failed: readonly FailedBackend[],
    options?: ErrorOptions,
  ) {
    super(
      `${provider}: partial observation; ${failed.map((f) => `backend ${f.backend} failed: ${f.error}`).join("; ")}`,
      options,
    );
    this.running = running;
    this.failed = failed;
  }
}

/** A lifecycle transition that the state machine does not allow. */
export class IllegalTransitionError extends GcError {
  override readonly name = "IllegalTransitionError";
  readonly code = "GC_ILLEGAL_TRANSITION";
  readonly from: string;
  readonly to: string;
  constructor(from: string, to: string, options?: ErrorOptions) {
    super(`illegal lifecycle transition ${from} → ${to}`, options);
    this.from = from;
    this.to = to;
  }
}

/** Another control operation holds the session (or the city) right now. */
export class LockedError extends GcError {
  override readonly name = "LockedError";
  readonly code = "GC_LOCKED";
  constructor(what: string, options?: ErrorOptions) {
    super(what, options);
  }
}

/** The command line was wrong. The CLI exits 2. */
export class UsageError extends GcError {
  override readonly name = "UsageError";
  readonly code = "GC_USAGE";
}

/** An operation needs a live session, and this one exists in the city but has no runtime. */
export class SessionNotRunningError extends GcError {
  override readonly name = "SessionNotRunningError";
  readonly code = "GC_NOT_RUNNING";
  readonly session: string;
  /** `hint`: what brings it back (default: `gc start` or `gc session restart` starts it). */
  constructor(session: string, state?: string, options?: ErrorOptions & { hint?: string }) {
    super(
      `session ${JSON.stringify(session)} is not running${state ? ` (state: ${state})` : ""}; ` +
        (options?.hint ?? "`gc start` or `gc session restart` starts it"),
      options,
    );
    this.session = session;
  }
}

/**
 * A state change was asked of a view that may only observe: the controller is not running,
 * so the dashboard refuses actions (nothing is changed).
 */
export class ReadOnlyError extends GcError {
  override readonly name = "ReadOnlyError";
  readonly code = "GC_READ_ONLY";
}

/** The session store failed (corrupt file, foreign database, I/O). */
export class StoreError extends GcError {
  override readonly name = "StoreError";
  readonly code = "GC_STORE";
}

/**
 * True when `e` is a gc error (optionally with the given code). Works across duplicate
 * module copies because it checks the shape, not the prototype chain.
 */
export function isGcError<C extends GcErrorCode>(e: unknown, code?: C): e is GcError & { code: C } {
  return (
    e instanceof Error &&
    "code" in e &&
    typeof e.code === "string" &&
    e.code.startsWith("GC_") &&
    (code === undefined || e.code === code)
  );
}

/** One-line description of any thrown value, for logs and CLI output. */
export function describeError(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
