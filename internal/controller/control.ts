/**
 * The controller's control socket (`<city>/.gc/controller.sock`, mode 0600): JSON lines.
 * Requests: `status`, `desired` (what the last pass resolved, digest-cache.ts DesiredDigest),
 * `pending` (the pending interactions of running sessions, by provider), `snapshot` (the whole
 * `gc status --json` document, observed at request time: status-snapshot.ts), `watch` (progress
 * of the current pass, then its summary), `poke` (run a pass now and watch it), `shutdown`. The
 * client side is used by `gc start|stop|status|reconcile`. This module loads nothing of the
 * config or the providers, so a client (`gc status`) stays cheap.
 */
import { createHash } from "node:crypto";
import { chmod, mkdir, rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { ProgressEvent } from "../reconcile/execute.js";
import type { TickSummary } from "../reconcile/summary.js";
import type { PendingInteraction } from "../runtime/provider.js";
import {
  bindInSocketDir,
  checkPrivateDir,
  ensurePrivateDir,
  isShortSocketDir,
  releaseSocketDir,
} from "../runtime/socket-dir.js";
import type { DesiredDigest } from "./digest-cache.js";
import type { Seen } from "./sessions.js";
import type { ControllerStatus, StatusJson } from "./status-snapshot.js";

/** A request to the controller. */
export type ControlRequest =
  | { op: "status" }
  | { op: "desired" }
  | { op: "pending"; sessions: Record<string, string[]> }
  /** `file`: the city file the asker would load; a controller running another one refuses. */
  | { op: "snapshot"; file: string }
  | { op: "watch" }
  | { op: "poke"; allowMassStop?: boolean }
  | { op: "shutdown" };

/** One streamed message. */
export type ControlMessage =
  | { type: "status"; status: ControllerStatus }
  | { type: "desired"; desired: DesiredDigest | null }
  | {
      type: "pending";
      pending: Record<string, PendingInteraction>;
      /** What the controller's look showed of each session (sessions.ts Seen); absent from older builds. */
      seen?: Record<string, Seen>;
    }
  | { type: "snapshot"; snapshot: StatusJson }
  | { type: "progress"; event: ProgressEvent }
  | { type: "done"; summary: TickSummary | undefined; error?: string | undefined }
  | { type: "ok" }
  | { type: "error"; error: string };

/** The controller side's hooks. */
export interface ControlHandlers {
  status(): ControllerStatus;
  /** The digest of the desired sessions the last pass resolved (none before the first). */
  desired(): DesiredDigest | undefined;
  /**
   * A look at the named running sessions (provider → names: interaction, work, screen), from
   * the controller's providers, whose caches skip re-reading screens that did not change.
   */
  pending(sessions: ReadonlyMap<string, readonly string[]>): Promise<Map<string, Seen>>;
  /**
   * The status snapshot of the city observed now (status-snapshot.ts controllerSnapshot);
   * rejects when `file` is not the controller's city file or the city file is invalid (the
   * asker then builds the snapshot itself, on the last good config).
   */
  snapshot(file: string): Promise<StatusJson>;
  /** Streams the current pass (or, if idle and `poke`, a new one) to `send`; resolves when done. */
  watch(send: (m: ControlMessage) => void, poke: boolean, opts?: { allowMassStop?: boolean }): Promise<void>;
  shutdown(): void;
}

const OPS: ReadonlySet<string> = new Set([
  "status",
  "desired",
  "pending",
  "snapshot",
  "watch",
  "poke",
  "shutdown",
]);

/** The `sessions` of a `pending` request, checked: provider → session names. */
function pendingSessions(v: unknown): Map<string, string[]> | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const out = new Map<string, string[]>();
  for (const [provider, names] of Object.entries(v)) {
    if (!Array.isArray(names) || !names.every((n) => typeof n === "string")) return undefined;
    out.set(provider, names);
  }
  return out;
}

/** True for a well-formed request (anything else gets "bad request", never a crash). */
function isRequest(v: unknown): v is ControlRequest {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as { op?: unknown }).op === "string" &&
    OPS.has((v as { op: string }).op)
  );
}

/** Longest request line accepted; a longer one is refused and the connection closed. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/**
 * Requests served at once (a watch counts while it lasts); one more is answered "busy" and
 * closed, never left hanging.
 */
export const MAX_CONNECTIONS = 64;
/**
 * Connections still waiting for their request line that are kept (each costs a descriptor and
 * a little memory until {@link REQUEST_IDLE_MS}); a new one past this closes the oldest
 * waiting one. Large on purpose: a real request's line follows its connect at once, but under
 * load the server may accept a whole burst before it reads any of them, so a small cap closes
 * real requests accepted in the same burst as a flood — and every close makes a flooder
 * reconnect at once, a storm that holds the controller's CPU.
 */
export const MAX_WAITING = 4096;
/** A connection that has not sent its request line within this long is closed. */
export const REQUEST_IDLE_MS = 2_000;

/**
 * Listens on `path` (replacing a stale socket file) with mode 0600. When the server closes,
 * the short /tmp directory of a fallback path is removed if no other socket is left in it.
 */
export async function serveControl(path: string, h: ControlHandlers): Promise<Server> {
  // A /tmp directory someone else made (or could write to) is refused: their socket could pose
  // as ours. The state dir inside the city is the city owner's.
  if (isShortSocketDir(dirname(path))) ensurePrivateDir(dirname(path));
  else await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await rm(path, { force: true });
  /** Connections without their request line yet, oldest first. */
  const waiting = new Set<Socket>();
  let serving = 0;
  const server = createServer((sock: Socket) => {
    if (waiting.size >= MAX_WAITING) {
      const oldest = waiting.values().next().value;
      if (oldest) {
        waiting.delete(oldest);
        oldest.destroy();
      }
    }
    waiting.add(sock);
    let served = false;
    sock.on("close", () => {
      waiting.delete(sock);
      if (served) serving--;
    });
    // Bytes are collected as chunks and scanned once each for the newline: linear in the
    // request size, and bounded by MAX_REQUEST_BYTES.
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const send = (m: ControlMessage) => {
      if (!sock.destroyed) sock.write(`${JSON.stringify(m)}\n`);
    };
    sock.on("error", () => sock.destroy());
    sock.setTimeout(REQUEST_IDLE_MS, () => {
      if (!done) sock.destroy();
    });
    sock.on("data", (chunk: Buffer) => {
      if (done) return;
      const nl = chunk.indexOf(0x0a);
      if (size + (nl < 0 ? chunk.length : nl) > MAX_REQUEST_BYTES) {
        done = true;
        send({ type: "error", error: `request longer than ${MAX_REQUEST_BYTES} bytes` });
        sock.end();
        sock.destroySoon?.();
        return;
      }
      if (nl < 0) {
        chunks.push(chunk);
        size += chunk.length;
        return;
      }
      done = true;
      waiting.delete(sock);
      sock.setTimeout(0); // a watch may legitimately stay quiet for long
      if (serving >= MAX_CONNECTIONS) {
        send({ type: "error", error: `controller busy: ${serving} requests in progress; try again` });
        sock.end();
        return;
      }
      served = true;
      serving++;
      chunks.push(chunk.subarray(0, nl));
      const line = Buffer.concat(chunks).toString("utf8");
      chunks.length = 0;
      let req: unknown;
      try {
        req = JSON.parse(line);
      } catch {
        req = undefined;
      }
      if (!isRequest(req)) {
        send({ type: "error", error: "bad request" });
        sock.end();
        return;
      }
      handle(req)
        .catch((e: unknown) => send({ type: "error", error: e instanceof Error ? e.message : String(e) }))
        .finally(() => sock.end());
    });
    async function handle(req: ControlRequest): Promise<void> {
      switch (req.op) {
        case "status":
          send({ type: "status", status: h.status() });
          return;
        case "desired":
          send({ type: "desired", desired: h.desired() ?? null });
          return;
        case "pending": {
          const sessions = pendingSessions(req.sessions);
          if (!sessions) {
            send({ type: "error", error: "bad request" });
            return;
          }
          const seen = await h.pending(sessions);
          const pending: Record<string, PendingInteraction> = {};
          for (const [n, v] of seen) if (v.interaction) pending[n] = v.interaction;
          send({ type: "pending", pending, seen: Object.fromEntries(seen) });
          return;
        }
        case "snapshot":
          if (typeof req.file !== "string") {
            send({ type: "error", error: "bad request" });
            return;
          }
          send({ type: "snapshot", snapshot: await h.snapshot(req.file) });
          return;
        case "watch":
        case "poke":
          await h.watch(send, req.op === "poke", {
            allowMassStop: req.op === "poke" && req.allowMassStop === true,
          });
          return;
        case "shutdown":
          send({ type: "ok" });
          h.shutdown();
          return;
        default:
          send({ type: "error", error: "unknown op" });
      }
    }
  });
  await bindInSocketDir(
    path,
    () =>
      new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        // The kernel's largest listen queue: a burst of connections waits to be accepted.
        server.listen({ path, backlog: 4096 }, () => resolve());
      }),
    ensurePrivateDir,
  );
  // Closing unlinks the socket; a short /tmp directory goes with its last socket.
  server.on("close", () => releaseSocketDir(path));
  await chmod(path, 0o600);
  return server;
}

/** Longest unix socket path Linux accepts (`sun_path` is 108 bytes including the NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Where the control socket of the city whose state dir is `stateDir` lives: `<stateDir>/
 * controller.sock` when that fits a unix socket path, else `/tmp/gc-<uid>-<hash>/controller.sock`
 * (deterministic, so every gc process finds it; the directory is created 0700 by the server,
 * and removed when it closes unless another socket is in it).
 */
export function controlSocketPath(stateDir: string): string {
  const direct = join(stateDir, "controller.sock");
  if (Buffer.byteLength(direct) <= MAX_SOCKET_PATH_BYTES) return direct;
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const hash = createHash("sha256").update(stateDir).digest("hex").slice(0, 12);
  return join("/tmp", `gc-${uid}-${hash}`, "controller.sock");
}

/** Times an idempotent request closed without any answer is asked again. */
const UNANSWERED_RETRIES = 5;
/** The requests that are asked again when closed without any answer (reads and a poke). */
const RETRIED_OPS: ReadonlySet<string> = new Set(["status", "desired", "pending", "snapshot", "poke"]);

/** Options of {@link requestControl}. */
interface RequestOptions {
  onMessage?: (m: ControlMessage) => void;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Sends one request and collects the streamed replies (calling `onMessage` for each).
 * Rejects when nothing listens (ENOENT/ECONNREFUSED) or on `timeoutMs`. A full listen queue
 * (EAGAIN: a flood of connections ahead of this one) is waited out until `timeoutMs`: the
 * request was not sent, so trying again is safe. A connection closed with no answer at all
 * (the server dropped it before reading its line) is retried a few times for the idempotent
 * requests ({@link RETRIED_OPS}); when a retry cannot connect, the empty answer stands.
 */
export async function requestControl(
  path: string,
  req: ControlRequest,
  opts: RequestOptions = {},
): Promise<ControlMessage[]> {
  // Only through a /tmp directory that is ours alone: a socket another user placed is never asked.
  if (isShortSocketDir(dirname(path))) checkPrivateDir(dirname(path));
  const deadline = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs;
  for (let unanswered = 0; ; ) {
    try {
      const left = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
      const msgs = await requestOnce(path, req, {
        ...opts,
        ...(left === undefined ? {} : { timeoutMs: left }),
      });
      // Closed before any answer: under a flood of idle connections the server may close this
      // one before reading its line (nothing was done), so an idempotent request asks again.
      if (
        msgs.length > 0 ||
        !RETRIED_OPS.has(req.op) ||
        ++unanswered > UNANSWERED_RETRIES ||
        opts.signal?.aborted ||
        (deadline !== undefined && Date.now() >= deadline)
      )
        return msgs;
      await sleep(20 * unanswered, undefined, opts.signal ? { signal: opts.signal } : {});
    } catch (e) {
      if (unanswered > 0 && (e as NodeJS.ErrnoException).code !== "EAGAIN") return [];
      const queueFull = (e as NodeJS.ErrnoException).code === "EAGAIN";
      if (!queueFull || opts.signal?.aborted || (deadline !== undefined && Date.now() >= deadline)) throw e;
      await sleep(20, undefined, opts.signal ? { signal: opts.signal } : {});
    }
  }
}

function requestOnce(path: string, req: ControlRequest, opts: RequestOptions): Promise<ControlMessage[]> {
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    const msgs: ControlMessage[] = [];
    let buf = "";
    const timer = opts.timeoutMs
      ? setTimeout(() => fail(new Error("controller did not answer in time")), opts.timeoutMs)
      : undefined;
    const onAbort = () => fail(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    function fail(e: unknown) {
      cleanup();
      sock.destroy();
      reject(e);
    }
    function cleanup() {
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    }
    sock.setEncoding("utf8");
    sock.on("connect", () => sock.write(`${JSON.stringify(req)}\n`));
    sock.on("data", (chunk: string) => {
      buf += chunk;
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const m = JSON.parse(line) as ControlMessage;
          msgs.push(m);
          opts.onMessage?.(m);
        } catch {
          // ignore a garbled line
        }
        nl = buf.indexOf("\n");
      }
    });
    sock.on("error", (e) => fail(e));
    sock.on("close", () => {
      cleanup();
      resolve(msgs);
    });
  });
}
