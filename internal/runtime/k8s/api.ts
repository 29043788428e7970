/**
 * The k8s provider's only door to the API server: `@kubernetes/client-node` (imported lazily,
 * so no other provider loads it), calls retried with backoff on 429/5xx and dropped
 * connections, and commands run in a pod's container over the exec WebSocket (v5 channels)
 * with binary-safe stdin, collected output and the exit code from the status frame.
 */
import { PassThrough, Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type * as K8s from "@kubernetes/client-node";
import { type FailureFault, OperationTimeoutError, ProviderError } from "../../base/errors.js";
import { OutputCapture } from "../../proc/capture.js";
import { CONTAINER } from "./spec.js";

type ClientModule = typeof K8s;
let loading: Promise<ClientModule> | undefined;

/** Loads `@kubernetes/client-node` once, on first use. */
export function loadClient(): Promise<ClientModule> {
  loading ??= import("@kubernetes/client-node");
  return loading;
}

/** How to reach the API server. */
export interface ConnectOptions {
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
}

/** Retry policy of API calls. */
export interface RetryPolicy {
  /** Attempts in all (≥ 1). */
  readonly attempts: number;
  /** First backoff; doubled each time, with ±50 % jitter, capped at `maxDelayMs`. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseDelayMs: 100, maxDelayMs: 3_000 };

const NET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENOTFOUND",
  "UND_ERR_SOCKET",
]);

/** HTTP status of a failed call (ApiException `.code`, or a refused WebSocket upgrade), else `undefined`. */
export function httpStatus(e: unknown): number | undefined {
  if (typeof e !== "object" || e === null) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code === "number") return code;
  const msg = String((e as { message?: unknown }).message ?? "");
  const m = /Unexpected server response: (\d{3})/.exec(msg);
  return m ? Number(m[1]) : undefined;
}

/** True for failures worth retrying: 429, 5xx, and dropped or refused connections. */
export function isTransient(e: unknown): boolean {
  const status = httpStatus(e);
  if (status !== undefined) return status === 429 || (status >= 500 && status !== 501);
  let cur: unknown = e;
  for (let i = 0; i < 4 && typeof cur === "object" && cur !== null; i++) {
    const c = cur as { code?: unknown; errno?: unknown; type?: unknown; cause?: unknown; message?: unknown };
    if (typeof c.code === "string" && NET_CODES.has(c.code)) return true;
    if (typeof c.errno === "string" && NET_CODES.has(c.errno)) return true;
    if (c.type === "system" || /socket hang up|ECONNREFUSED|ECONNRESET/.test(String(c.message ?? "")))
      return true;
    cur = c.cause;
  }
  return false;
}

/** Seconds from a `Retry-After` header of a 429/5xx ApiException, when present. */
function retryAfterMs(e: unknown): number | undefined {
  const h = (e as { headers?: Record<string, string> }).headers;
  const v = h?.["retry-after"] ?? h?.["Retry-After"];
  const n = v === undefined ? Number.NaN : Number(v);
  return Number.isFinite(n) && n >= 0 ? Math.min(n * 1000, 10_000) : undefined;
}

/**
 * Runs `fn`, retrying transient failures ({@link isTransient}) with exponential backoff
 * (honouring `Retry-After`). Other failures and the last transient one are thrown.
 * Aborting `signal` stops waiting at once.
 */
export async function withRetry<T>(
  fn: () => Promise<T>,
  opts: {
    signal?: AbortSignal | undefined;
    policy?: RetryPolicy | undefined;
    onRetry?: (e: unknown) => void;
  } = {},
): Promise<T> {
  const p = opts.policy ?? DEFAULT_RETRY;
  for (let attempt = 1; ; attempt++) {
    opts.signal?.throwIfAborted();
    try {
      return await fn();
    } catch (e) {
      if (attempt >= p.attempts || !isTransient(e)) throw e;
      opts.onRetry?.(e);
      const base = Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1));
      const delay = retryAfterMs(e) ?? base * (0.5 + Math.random());
      await sleep(delay, undefined, { signal: opts.signal });
    }
  }
}

/** The Status message of a failed API call, never the request or response body as a whole. */
export function apiMessage(e: unknown): string {
  const status = httpStatus(e);
  const body = (e as { body?: unknown }).body;
  let msg: string | undefined;
  if (typeof body === "string") {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === "string") msg = parsed.message;
    } catch {
      // not a Status
    }
  } else if (
    body &&
    typeof body === "object" &&
    typeof (body as { message?: unknown }).message === "string"
  ) {
    msg = (body as { message: string }).message;
  }
  if (status !== undefined) return `HTTP ${status}${msg ? `: ${msg}` : ""}`;
  return e instanceof Error ? e.message.split("\n")[0]! : String(e);
}

/**
 * A failed API call as a ProviderError `<what>: HTTP <code>: <the API's message>`, with its
 * fault: 401/403 (admission, RBAC, a terminating namespace) are `configuration`; transient
 * failures ({@link isTransient}: 429, 5xx, refused or dropped connections) that outlived the
 * retries are `infrastructure`. Pure.
 */
export function apiFailure(what: string, e: unknown): ProviderError {
  const status = httpStatus(e);
  const fault: FailureFault | undefined =
    status === 401 || status === 403 ? "configuration" : isTransient(e) ? "infrastructure" : undefined;
  const hint = fault === "configuration" ? " (a configuration problem: the cluster refused the request)" : "";
  return new ProviderError("k8s", `${what}: ${apiMessage(e)}${hint}`, {
    cause: e,
    ...(fault ? { fault } : {}),
  });
}

const V5 = "v5.channel.k8s.io";
const V4 = "v4.channel.k8s.io";

/**
 * Runs `$2…` with exactly `$1` bytes of this shell's stdin as its stdin, then EOF: the
 * command's input ends without a stdin close, which `v4.channel.k8s.io` lacks.
 */
export const STDIN_BY_LENGTH = 'n=$1; shift; head -c "$n" | "$@"';

/**
 * The negotiated subprotocol of an exec WebSocket: v5 or v4 (channels 0–4; v5 adds the
 * stdin close). Anything else (an older protocol, none) is refused and the socket dropped.
 * @throws ProviderError for an unsupported subprotocol.
 */
function checkProtocol(ws: ExecSocket, pod: string): typeof V5 | typeof V4 {
  const p = ws.protocol;
  if (p === V5 || p === V4) return p;
  ws.terminate();
  throw new ProviderError(
    "k8s",
    `exec in pod ${pod}: the API server chose subprotocol ${JSON.stringify(p)}; gc speaks ${V5} and ${V4}`,
  );
}

/** All of `r`'s bytes. */
async function collect(r: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of r) parts.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(parts);
}

/** The WebSocket of an exec. */
export type ExecSocket = Awaited<ReturnType<K8s.Exec["exec"]>>;

/** Result of a command run in a pod. */
export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
}

/** Options of {@link KubeApi.exec}. */
export interface ExecOptions {
  /** Bytes for the command's stdin (then EOF); absent = no stdin. */
  readonly stdin?: string | Buffer | Readable | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
  /** On a deadline or abort, hang the output received on the error (`capturedOutputOf`). */
  readonly keepOutputOnCut?: boolean | undefined;
}

/** Exit code from an exec status frame: `Success` → 0, `NonZeroExitCode` → its code. */
export function exitCodeOf(status: K8s.V1Status | undefined): number | undefined {
  if (!status) return undefined;
  if (status.status === "Success") return 0;
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const n = cause?.message === undefined ? Number.NaN : Number(cause.message);
  return Number.isInteger(n) ? n : undefined;
}

/** Counts requests (for tests and `gc` diagnostics). */
export interface ApiStats {
  requests: number;
  retries: number;
}

/** The API surface the provider uses; built by {@link connect}. */
export class KubeApi {
  readonly stats: ApiStats = { requests: 0, retries: 0 };
  /** Retries of {@link KubeApi.call} (tests shorten it). */
  retry: RetryPolicy = DEFAULT_RETRY;
  readonly config: K8s.KubeConfig;
  readonly core: K8s.CoreV1Api;
  readonly coordination: K8s.CoordinationV1Api;
  private readonly mod: ClientModule;
  private readonly execClient: K8s.Exec;
  private readonly watchClient: K8s.Watch;
  constructor(mod: ClientModule, config: K8s.KubeConfig) {
    this.mod = mod;
    this.config = config;
    this.core = config.makeApiClient(mod.CoreV1Api);
    this.coordination = config.makeApiClient(mod.CoordinationV1Api);
    this.execClient = new mod.Exec(config);
    this.watchClient = new mod.Watch(config);
  }

  /** The namespace of the kubeconfig's current context, when it names one. */
  contextNamespace(): string | undefined {
    return this.config.getContextObject(this.config.getCurrentContext())?.namespace || undefined;
  }

  /** One API call with retries; counted. */
  call<T>(fn: (core: K8s.CoreV1Api) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withRetry(
      () => {
        this.stats.requests++;
        return fn(this.core);
      },
      { signal, policy: this.retry, onRetry: () => this.stats.retries++ },
    );
  }

  /** One coordination.k8s.io/v1 call (Leases) with retries; counted. */
  callCoordination<T>(fn: (co: K8s.CoordinationV1Api) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withRetry(
      () => {
        this.stats.requests++;
        return fn(this.coordination);
      },
      { signal, policy: this.retry, onRetry: () => this.stats.retries++ },
    );
  }

  /**
   * Opens one watch on `path` (client-node's Watch: `watch=true` plus `query`), counted as one
   * request, never retried. `onEvent` gets each `{type, object}` line; `onDone` is called once,
   * when the stream ends, fails (an HTTP status other than 200 carries `statusCode`) or is
   * aborted. Resolves with the AbortController that ends it.
   */
  watch(
    path: string,
    query: Readonly<Record<string, string | boolean | undefined>>,
    onEvent: (type: string, object: unknown) => void,
    onDone: (err: unknown) => void,
  ): Promise<AbortController> {
    this.stats.requests++;
    return this.watchClient.watch(path, { ...query }, onEvent, onDone);
  }

  /** Options that send a PATCH as a JSON merge patch. */
  mergePatch(): K8s.ConfigurationOptions {
    return this.mod.setHeaderOptions("Content-Type", this.mod.PatchStrategy.MergePatch);
  }

  /**
   * Runs `argv` (no shell) in the pod's `agent` container and collects its output (each
   * stream capped, proc/capture.ts). A refused upgrade that is transient (429/5xx, connection
   * refused) is retried: the command never ran.
   * @throws ProviderError when the exec cannot start or ends without a status;
   * OperationTimeoutError past `timeoutMs`; the abort reason when `signal` aborts — both
   * carrying the output received until then with `keepOutputOnCut`.
   */
  async exec(
    namespace: string,
    pod: string,
    argv: readonly string[],
    opts: ExecOptions = {},
  ): Promise<ExecResult> {
    return withRetry(() => this.execOnce(namespace, pod, argv, opts), {
      signal: opts.signal,
      onRetry: () => this.stats.retries++,
    });
  }

  private async execOnce(
    namespace: string,
    pod: string,
    argv: readonly string[],
    opts: ExecOptions,
  ): Promise<ExecResult> {
    opts.signal?.throwIfAborted();
    const capture = new OutputCapture({ keepOnCut: opts.keepOutputOnCut });
    const sink = (into: (b: Buffer) => void) =>
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          into(chunk);
          cb();
        },
      });
    // stdin travels length-prefixed (see STDIN_BY_LENGTH): under v4 there is no stdin close.
    const data =
      opts.stdin === undefined
        ? undefined
        : opts.stdin instanceof Readable
          ? await collect(opts.stdin)
          : typeof opts.stdin === "string"
            ? Buffer.from(opts.stdin, "utf8")
            : opts.stdin;
    const stdin = data === undefined ? null : new PassThrough();
    const command =
      data === undefined
        ? [...argv]
        : ["/bin/sh", "-c", STDIN_BY_LENGTH, "gc-stdin", String(data.length), ...argv];
    let status: K8s.V1Status | undefined;
    this.stats.requests++;
    const ws = await this.execClient.exec(
      namespace,
      pod,
      CONTAINER,
      command,
      sink(capture.stdout),
      sink(capture.stderr),
      stdin,
      false,
      (s) => {
        status = s;
      },
    );
    const protocol = checkProtocol(ws, pod);
    if (stdin && data) {
      stdin.write(data);
      // v5 closes the command's stdin itself; v4 cannot (client-node would close the socket
      // and lose the output and status), and needs not: the length ends the data.
      if (protocol === V5) stdin.end();
    }
    return new Promise<ExecResult>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (fn: () => void) => {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
        fn();
      };
      const onAbort = () => {
        ws.terminate();
        finish(() => reject(capture.cut(opts.signal?.reason)));
      };
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      if (opts.signal?.aborted) return onAbort(); // aborted while the exec was being opened
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          ws.terminate();
          finish(() =>
            reject(capture.cut(new OperationTimeoutError(`exec ${argv[0]} in pod ${pod}`, opts.timeoutMs!))),
          );
        }, opts.timeoutMs);
      }
      ws.on("close", () => {
        const code = exitCodeOf(status);
        if (code !== undefined) {
          finish(() => resolve({ exitCode: code, ...capture.bytes() }));
        } else {
          const why = status?.message ?? "the exec stream closed without a status";
          finish(() => reject(new ProviderError("k8s", `exec in pod ${pod}: ${why}`)));
        }
      });
      ws.on("error", () => undefined); // the close that follows reports it
    });
  }

  /**
   * Opens a long-lived exec of `argv` with stdin attached (a tmux control channel): output
   * reaches `stdout`/`stderr` as it comes, `stdin`'s data is sent as it is written. One
   * counted request, never retried. Resolves with the open WebSocket (its `protocol` is the
   * negotiated subprotocol).
   */
  async execStream(
    namespace: string,
    pod: string,
    argv: readonly string[],
    io: { stdout: Writable; stderr: Writable; stdin: Readable },
  ): Promise<ExecSocket> {
    this.stats.requests++;
    const ws = await this.execClient.exec(
      namespace,
      pod,
      CONTAINER,
      [...argv],
      io.stdout,
      io.stderr,
      io.stdin,
      false,
    );
    checkProtocol(ws, pod);
    return ws;
  }

  /**
   * Runs `argv` with a TTY, wiring the caller's terminal (raw mode, resizes) to it until the
   * command ends. Resolves with its exit code.
   */
  async execTty(
    namespace: string,
    pod: string,
    argv: readonly string[],
    signal?: AbortSignal,
  ): Promise<number> {
    const stdin = process.stdin;
    const wasRaw = stdin.isTTY ? stdin.isRaw : false;
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.resume();
    let status: K8s.V1Status | undefined;
    const stdout = sizedStdout();
    try {
      this.stats.requests++;
      const ws = await this.execClient.exec(
        namespace,
        pod,
        CONTAINER,
        [...argv],
        stdout.stream,
        null,
        stdin,
        true,
        (s) => {
          status = s;
        },
      );
      await new Promise<void>((resolve) => {
        const onAbort = () => ws.close();
        signal?.addEventListener("abort", onAbort, { once: true });
        ws.on("close", () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        });
        ws.on("error", () => undefined);
      });
      return exitCodeOf(status) ?? 1;
    } finally {
      stdout.dispose();
      if (stdin.isTTY) stdin.setRawMode(wasRaw);
      stdin.pause();
    }
  }
}

/**
 * Loads the client and a kubeconfig: `kubeconfig` when given, else the default chain
 * (`$KUBECONFIG`, `~/.kube/config`, in-cluster service account), then `context`.
 * @throws ProviderError when no usable cluster is configured.
 */
export async function connect(opts: ConnectOptions): Promise<KubeApi> {
  const mod = await loadClient();
  const kc = new mod.KubeConfig();
  try {
    if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
    else kc.loadFromDefault();
    if (opts.context) kc.setCurrentContext(opts.context);
  } catch (e) {
    throw new ProviderError("k8s", `loading kubeconfig: ${(e as Error).message}`, { cause: e });
  }
  if (opts.context && !kc.getContextObject(opts.context)) {
    throw new ProviderError("k8s", `kubeconfig has no context ${JSON.stringify(opts.context)}`);
  }
  if (!kc.getCurrentCluster()) throw new ProviderError("k8s", "kubeconfig names no cluster");
  return new KubeApi(mod, kc);
}

/**
 * process.stdout for a TTY exec, reporting the terminal's size only while it is a real one:
 * a terminal that says 0×0 (`script` on a pipe) would shrink the session's window to 1×1 for
 * good. client-node sends the size of a stream that has `columns` and `rows`, and each
 * `resize` it emits.
 */
function sizedStdout(): { stream: Writable; dispose: () => void } {
  const out = new PassThrough();
  out.pipe(process.stdout, { end: false });
  const real = () => (process.stdout.columns ?? 0) > 0 && (process.stdout.rows ?? 0) > 0;
  if (!real()) return { stream: out, dispose: () => out.unpipe(process.stdout) };
  Object.defineProperties(out, {
    columns: { get: () => process.stdout.columns },
    rows: { get: () => process.stdout.rows },
  });
  const onResize = () => {
    if (real()) out.emit("resize");
  };
  process.stdout.on("resize", onResize);
  return {
    stream: out,
    dispose: () => {
      process.stdout.off("resize", onResize);
      out.unpipe(process.stdout);
    },
  };
}
