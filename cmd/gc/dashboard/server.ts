/**
 * The dashboard's HTTP server (node:http): the static web app, the JSON API and the
 * server-sent event stream (docs/dashboard.md). Every API request needs the access token;
 * every state-changing request also needs a JSON body and, from a browser, the server's own
 * Origin; the Host header must name this server (no DNS rebinding). Actions go through
 * cmd/gc/actions.ts — the same code, locks and audit events as the CLI — and are refused
 * while the controller is down (the dashboard is then read-only).
 */
import { timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { describeError, isGcError, ReadOnlyError } from "../../../internal/base/errors.js";
import type { City } from "../../../internal/controller/city.js";
import { desiredView, viewedDrift } from "../../../internal/controller/drift-view.js";
import {
  holdDown,
  type NudgeMode,
  nudgeSession,
  nudgeView,
  resetSession,
  respondSession,
  restartSession,
} from "../../../internal/operate/actions.js";
import { reconcileNow } from "../../../internal/operate/pass.js";
import { targetIn } from "../../../internal/operate/target.js";
import type { CommandContext } from "../context.js";
import { durationFlag } from "../operate.js";
import { ScreenFeed, type ScreenFrame, StatusHub, screenSourceOf } from "./hub.js";

/** What the dashboard server needs. */
export interface DashboardOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly token: string;
  /** Status snapshot interval (one per interval for all viewers). */
  readonly intervalMs: number;
  /** Answer for any Host header (a non-loopback bind with `--allow-remote`). */
  readonly anyHost: boolean;
  /** The command's context: its signal ends the server; its output is silenced for passes. */
  readonly ctx: CommandContext;
}

/** A running dashboard. */
export interface Dashboard {
  /** The URL with the token, to open in a browser. */
  readonly url: string;
  readonly port: number;
  readonly hub: StatusHub;
  readonly server: Server;
  close(): Promise<void>;
}

/** Static files of the web app: URL path → file (never a path taken from the request). */
function staticFiles(): Record<string, { file: string; type: string }> {
  const here = dirname(fileURLToPath(import.meta.url));
  const xterm = dirname(createRequire(import.meta.url).resolve("@xterm/xterm"));
  const js = "text/javascript; charset=utf-8";
  return {
    "/": { file: join(here, "assets", "index.html"), type: "text/html; charset=utf-8" },
    "/app.js": { file: join(here, "assets", "app.js"), type: js },
    "/app.css": { file: join(here, "assets", "app.css"), type: "text/css; charset=utf-8" },
    "/vendor/xterm.js": { file: join(xterm, "xterm.js"), type: js },
    "/vendor/xterm.css": { file: join(xterm, "..", "css", "xterm.css"), type: "text/css; charset=utf-8" },
  };
}

const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};

/** True when `host` is a loopback address or name. Pure. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** An HTTP error with a stable code for the JSON body. */
class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The status and code of an error thrown by an action. Pure. */
function classify(e: unknown): { status: number; code: string } {
  if (e instanceof HttpError) return { status: e.status, code: e.code };
  if (isGcError(e, "GC_SESSION_NOT_FOUND")) return { status: 404, code: e.code };
  if (isGcError(e, "GC_USAGE") || isGcError(e, "GC_INVALID_NAME")) return { status: 400, code: e.code };
  if (isGcError(e, "GC_LOCKED") || isGcError(e, "GC_NOT_RUNNING") || isGcError(e, "GC_READ_ONLY"))
    return { status: 409, code: e.code };
  if (isGcError(e)) return { status: 500, code: e.code };
  return { status: 500, code: "GC_FAILED" };
}

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

const MAX_BODY = 64 * 1024;
/** Longest wait for the first snapshot before the server starts anyway. */
const WARM_UP_MS = 5_000;

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  if (!(req.headers["content-type"] ?? "").startsWith("application/json"))
    throw new HttpError(415, "GC_USAGE", "state-changing requests need Content-Type: application/json");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, "GC_USAGE", "request body too large");
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let v: unknown;
  try {
    v = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    throw new HttpError(400, "GC_USAGE", "the body is not JSON");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new HttpError(400, "GC_USAGE", "the body must be a JSON object");
  return v as Record<string, unknown>;
}

function str(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw new HttpError(400, "GC_USAGE", `${key} must be a string`);
  return v;
}

/** Starts the dashboard on `opts.host:opts.port` for an open city. */
export async function startDashboard(city: City, opts: DashboardOptions): Promise<Dashboard> {
  const signal = opts.ctx.signal;
  const hub = new StatusHub(city, opts.intervalMs, signal);
  const feeds = new Map<string, ScreenFeed>();
  const files = staticFiles();
  const cache = new Map<string, Buffer>();
  const quiet: CommandContext = { ...opts.ctx, json: true, out: () => undefined, err: () => undefined };
  const allowedHosts = new Set<string>();
  const sockets = new Set<ServerResponse>();

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      const { status, code } = classify(e);
      if (!res.headersSent) send(res, status, { error: { code, message: describeError(e) } });
      else res.end();
    });
  });

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res.writeHead(status, { ...SECURITY_HEADERS, "Content-Type": "application/json; charset=utf-8" });
    res.end(text);
  }

  /**
   * The page with the newest snapshot embedded (inert JSON, `<` escaped) when the URL carries
   * the right token: the grid is drawn before the event stream connects. Without the token
   * the page is served as is (it holds no city data).
   */
  function withInitialStatus(page: Buffer, url: URL): Buffer | string {
    const snap = hub.newest;
    if (!snap || !sameToken(url.searchParams.get("token") ?? undefined, opts.token)) return page;
    const data = snap.text.replace(/</g, "\\u003c");
    return page
      .toString("utf8")
      .replace("</body>", `<script type="application/json" id="gc-initial">${data}</script>\n</body>`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://dashboard.invalid");
    const host = req.headers.host ?? "";
    if (!opts.anyHost && !allowedHosts.has(host.toLowerCase()))
      throw new HttpError(421, "GC_USAGE", `this server does not answer for host ${JSON.stringify(host)}`);
    const file = files[url.pathname];
    if (file && req.method === "GET") {
      let body = cache.get(url.pathname);
      if (!body) {
        body = await readFile(file.file);
        cache.set(url.pathname, body);
      }
      res.writeHead(200, { ...SECURITY_HEADERS, "Content-Type": file.type });
      res.end(url.pathname === "/" ? withInitialStatus(body, url) : body);
      return;
    }
    if (!url.pathname.startsWith("/api/")) throw new HttpError(404, "GC_USAGE", "no such page");
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const header = req.headers["x-gc-token"];
    const given = bearer ?? (typeof header === "string" ? header : undefined);
    if (req.method === "GET") {
      if (!sameToken(given ?? url.searchParams.get("token") ?? undefined, opts.token))
        throw new HttpError(401, "GC_USAGE", "missing or wrong access token");
      return get(url, req, res);
    }
    if (req.method !== "POST") throw new HttpError(405, "GC_USAGE", "only GET and POST");
    // State changes: the token in a header (never the URL), and a browser's Origin must be ours.
    if (!sameToken(given, opts.token))
      throw new HttpError(401, "GC_USAGE", "state-changing requests need the token in X-GC-Token");
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${host}`)
      throw new HttpError(403, "GC_USAGE", `cross-origin request refused (origin ${origin})`);
    if (
      req.headers["sec-fetch-site"] &&
      !["same-origin", "none"].includes(String(req.headers["sec-fetch-site"]))
    )
      throw new HttpError(403, "GC_USAGE", "cross-site request refused");
    return post(url, req, res);
  }

  async function get(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (url.pathname === "/api/status") return send(res, 200, (await hub.current()).text);
    if (url.pathname === "/api/events") return events(url, req, res);
    const m = /^\/api\/sessions\/([^/]+)$/.exec(url.pathname);
    if (m) return send(res, 200, await sessionDetail(decodeURIComponent(m[1]!)));
    throw new HttpError(404, "GC_USAGE", "no such API path");
  }

  /** `/api/sessions/:name`: the status row, drift per field, peek history, recent events, queued nudges. */
  async function sessionDetail(name: string) {
    const t = await targetIn(city, name, signal);
    const snap = await hub.current();
    const row = snap.json.sessions.find((s) => s.name === t.name) ?? null;
    const [rec, events, nudges, peek, view] = await Promise.all([
      t.store.get(t.name),
      t.store.queryEvents({ session: t.name, order: "desc", limit: 50 }),
      t.store.listNudges({ session: t.name, states: ["queued", "claimed", "dead"] }),
      t.provider.peek(t.name, 500, { signal }).then(
        (text) => ({ text, error: null }),
        (e: unknown) => ({ text: "", error: describeError(e) }),
      ),
      // Beside a running controller, its view (drift-view.ts); else this process's.
      desiredView(city),
    ]);
    const now = Date.now();
    return {
      name: t.name,
      controller: snap.json.controller,
      session: row,
      generation: rec?.generation ?? null,
      lastError: rec?.lastError ?? null,
      drift: viewedDrift(view, t.name, rec),
      peek,
      screenSource: screenSourceOf(t.provider),
      events: events.map((e) => ({
        seq: e.seq,
        at: new Date(e.at).toISOString(),
        type: e.type,
        payload: e.payload,
      })),
      nudges: nudges.map((n) => nudgeView(n, now)),
    };
  }

  /** `/api/events[?session=NAME]`: server-sent `status` events (and `screen` frames of NAME). */
  async function events(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const name = url.searchParams.get("session");
    const t = name ? await targetIn(city, name, signal) : undefined;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      "Content-Type": "text/event-stream; charset=utf-8",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    sockets.add(res);
    const write = (event: string, data: string) => {
      if (!res.writableEnded) res.write(`event: ${event}\ndata: ${data}\n\n`);
    };
    res.write("retry: 1000\n\n");
    const offs: (() => void)[] = [];
    const snap = await hub.latestOrCurrent().catch(() => undefined);
    if (snap) write("status", snap.text);
    offs.push(hub.subscribe((s) => write("status", s.text)));
    if (t) {
      let feed = feeds.get(t.name);
      if (!feed) {
        const key = t.name;
        feed = new ScreenFeed(city, { name: t.name, provider: t.session.provider }, 250, signal, () => {
          if (feeds.get(key) === feed) feeds.delete(key);
        });
        feeds.set(t.name, feed);
      }
      offs.push(feed.subscribe((f: ScreenFrame) => write("screen", JSON.stringify(f))));
    }
    const ping = setInterval(() => {
      if (!res.writableEnded) res.write(": ping\n\n");
    }, 15_000);
    const end = () => {
      clearInterval(ping);
      for (const off of offs) off();
      sockets.delete(res);
    };
    req.on("close", end);
    res.on("close", end);
  }

  async function post(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const m = /^\/api\/sessions\/([^/]+)\/(nudge|respond|restart|reset|stop)$/.exec(url.pathname);
    if (!m) throw new HttpError(404, "GC_USAGE", "no such action");
    const body = await readJson(req);
    const snap = await hub.refresh();
    if (!snap.json.controller.running)
      throw new ReadOnlyError(
        "the controller is not running: the dashboard is read-only (`gc start` runs it)",
      );
    const t = await targetIn(city, decodeURIComponent(m[1]!), signal);
    const pass = () => reconcileNow(quiet, city);
    let result: Record<string, unknown>;
    switch (m[2]) {
      case "nudge": {
        const text = str(body, "text") ?? "";
        if (text.trim() === "") throw new HttpError(400, "GC_USAGE", "the nudge text is empty");
        const modes: Record<string, NudgeMode> = { now: "now", idle: "wait-idle", queue: "queue" };
        const mode = modes[str(body, "mode") ?? "idle"];
        if (!mode) throw new HttpError(400, "GC_USAGE", "mode must be now, idle or queue");
        const r = await nudgeSession(t, text, {
          mode,
          waitMs: durationFlag("wait", str(body, "wait"), 30_000),
          ttlMs: durationFlag("ttl", str(body, "ttl"), 24 * 60 * 60_000),
          attempts: 10,
          source: "dashboard",
          signal,
        });
        if (r.mode === "queue") result = { mode: "queue", queued: nudgeView(r.queued, Date.now()) };
        else if (!r.delivered) throw new HttpError(409, "GC_NUDGE_NOT_DELIVERED", r.reason);
        else result = { mode: r.mode, delivered: true };
        break;
      }
      case "respond": {
        const action = str(body, "action");
        if (!action) throw new HttpError(400, "GC_USAGE", "action is required (approve, deny, an option…)");
        const r = await respondSession(
          t,
          { action, text: str(body, "text"), requestId: str(body, "requestId") },
          signal,
        );
        if (!r.answered) throw new HttpError(409, "GC_FAILED", r.error);
        result = { answered: true, requestId: r.requestId, action };
        break;
      }
      case "restart": {
        const r = await restartSession(t, pass, signal);
        if (!r)
          throw new HttpError(
            409,
            "GC_FAILED",
            `${t.name} is not declared in the city file, so it cannot be started again`,
          );
        result = { restarted: r.running, state: r.state, generation: r.generation, why: r.why };
        break;
      }
      case "reset": {
        const r = await resetSession(t, pass, signal);
        result = { reset: true, state: r.state, running: r.running };
        break;
      }
      default: {
        await holdDown(city, t.store, t.session, signal);
        result = { stopped: t.name, held: true };
      }
    }
    void hub.refresh().catch(() => undefined);
    send(res, 200, { session: t.name, ...result });
  }

  // One snapshot before the URL is out, so the first viewer sees the city at once (a fresh
  // one follows); bounded, so a slow backend only delays the start, never blocks it.
  await Promise.race([
    hub.refresh().catch(() => undefined),
    sleep(WARM_UP_MS, undefined, { signal }).catch(() => undefined),
  ]);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  for (const h of [hostPart, ...(isLoopback(opts.host) ? ["localhost", "127.0.0.1", "[::1]"] : [])])
    allowedHosts.add(`${h.toLowerCase()}:${port}`);
  return {
    url: `http://${hostPart}:${port}/?token=${opts.token}`,
    port,
    hub,
    server,
    async close() {
      for (const r of sockets) r.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
