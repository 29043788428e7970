/**
 * The model-API test double's HTTP server on 127.0.0.1 (port 0): routes each request
 * (requests.ts), asks the test's script what to send (script.ts), writes it in the API's wire
 * format (wire.ts) — streamed replies paced as scripted, stopped when the client goes away —
 * and logs every request with when its turn's last text chunk was written. Start it with
 * {@link startModelApi}.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate } from "node:zlib";
import { type ApiKind, classify, route } from "./requests.js";
import { type Planned, Script } from "./script.js";
import { errorBody, streamFrames, wholeBody } from "./wire.js";

/** One request the double received. */
export interface RequestRecord {
  readonly seq: number;
  readonly method: string;
  readonly url: string;
  readonly at: number;
  status: number;
  readonly api?: ApiKind | undefined;
  readonly kind?: "turn" | "side" | undefined;
  readonly model?: string | undefined;
  /** The parsed JSON body (generate requests). */
  readonly body?: unknown;
  /** Text blocks of the last user message. */
  readonly userTexts: readonly string[];
  readonly toolResult: boolean;
  /** What was sent: `text`, `tool` (a call), `error`, or `none` (404, bad body). */
  readonly reply: "text" | "tool" | "error" | "none";
  /** Epoch ms when the last text chunk was written (streamed text replies). */
  lastChunkAt?: number;
  /** Epoch ms when the response ended (or the client went away). */
  endedAt?: number;
  /** The client closed the stream before it ended (an interrupt). */
  aborted?: boolean;
}

/** A running double. */
export interface ModelApi {
  /** `http://127.0.0.1:PORT` (no trailing slash, no path). */
  readonly url: string;
  readonly script: Script;
  /** Every request, in arrival order. */
  readonly log: readonly RequestRecord[];
  /** The agent-turn requests (not side calls). */
  turns(): RequestRecord[];
  /** Whether a streamed reply is being written now. */
  streaming(): boolean;
  close(): Promise<void>;
}

const decoders: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  let buf: Buffer = Buffer.concat(chunks);
  const enc = String(req.headers["content-encoding"] ?? "").toLowerCase();
  if (enc && enc !== "identity") {
    const decode = decoders[enc];
    if (!decode) throw new Error(`unsupported content-encoding ${enc}`);
    buf = await decode(buf);
  }
  return buf.length === 0 ? {} : JSON.parse(buf.toString("utf8"));
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Starts the double; `script` decides the replies (a fresh one by default). */
export async function startModelApi(script = new Script()): Promise<ModelApi> {
  const log: RequestRecord[] = [];
  const sockets = new Set<Socket>();
  let active = 0;
  let seq = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const url = req.url ?? "/";
    const at = Date.now();
    const r = route(method, url);
    const base = { seq: ++seq, method, url, at, userTexts: [] as string[], toolResult: false };
    if (!r) {
      log.push({ ...base, status: 404, reply: "none", endedAt: Date.now() });
      req.resume();
      sendJson(res, 404, { error: { message: `not found: ${method} ${url}` } });
      return;
    }
    if (r.op === "hello") {
      log.push({ ...base, status: 200, reply: "none", endedAt: Date.now() });
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(method === "HEAD" ? undefined : "{}");
      return;
    }
    let body: unknown;
    try {
      body = await readBody(req);
    } catch (e) {
      log.push({ ...base, status: 400, reply: "none", endedAt: Date.now() });
      sendJson(res, 400, { error: { message: `bad request body: ${String(e)}` } });
      return;
    }
    if (r.op === "count") {
      log.push({ ...base, api: r.api, status: 200, reply: "none", endedAt: Date.now() });
      sendJson(res, 200, r.api === "anthropic" ? { input_tokens: 12 } : { totalTokens: 12 });
      return;
    }
    const c = classify(r, body);
    let planned: Planned;
    try {
      planned = script.plan(c);
    } catch (e) {
      planned = { kind: "error", status: 500, message: String(e) };
    }
    const rec: RequestRecord = {
      ...base,
      api: c.api,
      kind: c.kind,
      model: c.model,
      body,
      userTexts: c.userTexts,
      toolResult: c.toolResult,
      status: planned.kind === "error" ? planned.status : 200,
      reply: planned.kind,
    };
    log.push(rec);
    const id = `${rec.seq}`;
    if (planned.kind === "error") {
      const headers: Record<string, string> =
        planned.retryAfterS !== undefined ? { "retry-after": String(planned.retryAfterS) } : {};
      sendJson(res, planned.status, errorBody(c.api, planned.status, planned.message), headers);
      rec.endedAt = Date.now();
      return;
    }
    const call = planned.kind === "tool" ? planned.call : undefined;
    const parts = planned.kind === "text" ? planned.parts : [];
    if (!c.stream) {
      sendJson(res, 200, wholeBody(c.api, c.model, id, parts.join(""), call));
      if (planned.kind === "text") rec.lastChunkAt = Date.now();
      rec.endedAt = Date.now();
      return;
    }
    const frames = streamFrames(c.api, c.model, id, parts, call);
    const gone = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) gone.abort();
    });
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    active++;
    try {
      if (frames.head) res.write(frames.head);
      const pauses = planned.kind === "text" ? planned.pausesMs : [];
      for (const [i, delta] of frames.deltas.entries()) {
        if ((pauses[i] ?? 0) > 0) await sleep(pauses[i], undefined, { signal: gone.signal });
        res.write(delta);
        rec.lastChunkAt = Date.now();
      }
      if (frames.tail) res.write(frames.tail);
      res.end();
    } catch {
      rec.aborted = true;
      res.destroy();
    } finally {
      active--;
      rec.endedAt = Date.now();
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(e) } });
      else res.destroy();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    script,
    log,
    turns: () => log.filter((r) => r.kind === "turn"),
    streaming: () => active > 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
