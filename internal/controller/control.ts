/**
 * The controller's control socket (`<city>/.gc/controller.sock`, mode 0600): JSON lines.
 * Requests: `status`, `watch` (progress of the current pass, then its summary), `poke` (run
 * a pass now and watch it), `shutdown`. The client side is used by `gc start|stop|status|reconcile`.
 */
import { chmod, rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import type { ProgressEvent } from "../reconcile/execute.js";
import type { TickSummary } from "../reconcile/summary.js";

/** A request to the controller. */
export type ControlRequest =
  | { op: "status" }
  | { op: "watch" }
  | { op: "poke"; allowMassStop?: boolean }
  | { op: "shutdown" };

/** What `status` answers. */
export interface ControllerStatus {
  readonly pid: number;
  readonly startedAt: number;
  readonly passes: number;
  readonly last: TickSummary | undefined;
  readonly lastError: string | undefined;
  readonly busy: boolean;
}

/** One streamed message. */
export type ControlMessage =
  | { type: "status"; status: ControllerStatus }
  | { type: "progress"; event: ProgressEvent }
  | { type: "done"; summary: TickSummary | undefined; error?: string | undefined }
  | { type: "ok" }
  | { type: "error"; error: string };

/** The controller side's hooks. */
export interface ControlHandlers {
  status(): ControllerStatus;
  /** Streams the current pass (or, if idle and `poke`, a new one) to `send`; resolves when done. */
  watch(send: (m: ControlMessage) => void, poke: boolean, opts?: { allowMassStop?: boolean }): Promise<void>;
  shutdown(): void;
}

const OPS: ReadonlySet<string> = new Set(["status", "watch", "poke", "shutdown"]);

/** True for a well-formed request (anything else gets "bad request", never a crash). */
function isRequest(v: unknown): v is ControlRequest {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as { op?: unknown }).op === "string" &&
    OPS.has((v as { op: string }).op)
  );
}

/** Listens on `path` (replacing a stale socket file) with mode 0600. */
export async function serveControl(path: string, h: ControlHandlers): Promise<Server> {
  await rm(path, { force: true });
  const server = createServer((sock: Socket) => {
    let buf = "";
    sock.setEncoding("utf8");
    const send = (m: ControlMessage) => {
      if (!sock.destroyed) sock.write(`${JSON.stringify(m)}\n`);
    };
    sock.on("error", () => sock.destroy());
    sock.on("data", (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      const line = buf.slice(0, nl);
      buf = "";
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
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o600);
  return server;
}

/**
 * Sends one request and collects the streamed replies (calling `onMessage` for each).
 * Rejects when nothing listens (ENOENT/ECONNREFUSED) or on `timeoutMs`.
 */
export function requestControl(
  path: string,
  req: ControlRequest,
  opts: { onMessage?: (m: ControlMessage) => void; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ControlMessage[]> {
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
