/**
 * The loopback Kubernetes API server: HTTP routing for discovery, OpenAPI, REST, watch, logs and
 * the exec/attach WebSocket upgrades, with fault injection and a request log. Start it with
 * {@link startApiServer}; it writes a kubeconfig that real kubectl and client-node accept
 * (plain HTTP + `insecure-skip-tls-verify: true`, bearer token).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type WebSocket, WebSocketServer } from "ws";
import { parse as parseYaml } from "yaml";
import {
  AGGREGATED_TYPE,
  aggregatedApi,
  aggregatedApis,
  apiGroup,
  apiResourceList,
  legacyApi,
  legacyApis,
  openApiIndex,
  openApiV1,
  VERSION,
  wantsAggregated,
} from "./discovery.js";
import { Faults } from "./faults.js";
import { GarbageCollector } from "./gc.js";
import { Kubelet, type LogBuffer } from "./kubelet.js";
import { PATCH_TYPES, type PatchType } from "./patch.js";
import type { Proc } from "./proc.js";
import { GROUPS, RESOURCES, type ResourceDef, resourceDef } from "./resources.js";
import { queryBool, Rest } from "./rest.js";
import type { KObject } from "./selectors.js";
import {
  ApiError,
  badRequest,
  methodNotAllowed,
  notFound,
  toApiError,
  unauthorized,
  unsupportedMediaType,
} from "./status.js";
import { Store } from "./store.js";
import { ChannelSocket, exitStatus, internalStatus, STREAM_PROTOCOLS, type StreamFlags } from "./streams.js";
import { podTable, wantsTable } from "./table.js";

/** One request as the server saw it. */
export interface RequestRecord {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: string;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection, connect, or "discovery"/"other". */
  readonly verb: string;
  readonly resource?: string | undefined;
  readonly subresource?: string | undefined;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  readonly userAgent: string;
  /** HTTP status answered (101 for an accepted upgrade). */
  status: number;
  readonly at: number;
}

/** Every request since start (or the last clear). */
export class RequestLog {
  readonly entries: RequestRecord[] = [];
  /** Number of requests matching `filter` (all fields given must be equal; or a predicate). */
  count(filter: Partial<RequestRecord> | ((r: RequestRecord) => boolean) = {}): number {
    if (typeof filter === "function") return this.entries.filter(filter).length;
    return this.entries.filter((r) =>
      Object.entries(filter).every(([k, v]) => r[k as keyof RequestRecord] === v),
    ).length;
  }
  clear(): void {
    this.entries.length = 0;
  }
}

/** Options of {@link startApiServer}; every field optional. */
export interface ApiServerOptions {
  /** TCP port on 127.0.0.1 (default 0: any free port). */
  readonly port?: number;
  /**
   * Exec/attach subprotocols served, most preferred first (default {@link STREAM_PROTOCOLS}).
   * `["v4.channel.k8s.io"]` is a Kubernetes ≤ 1.29 server: no stdin close.
   */
  readonly streamProtocols?: readonly string[];
  /** Directory for the kubeconfig, kubectl cache and pod directories (default: a new temp dir, removed on stop). */
  readonly dir?: string;
  /** Bearer token written to the kubeconfig; when `requireToken`, other tokens get 401. */
  readonly token?: string;
  readonly requireToken?: boolean;
  /** Pending → scheduled (default 20 ms). */
  readonly scheduleDelayMs?: number;
  /** ContainerCreating → Running (default 50 ms). */
  readonly startDelayMs?: number;
  /** First CrashLoopBackOff delay (default 500 ms, doubling). */
  readonly restartBackoffMs?: number;
  /** What a container without command/args runs (default `sleep infinity`). */
  readonly defaultEntrypoint?: readonly string[];
  /**
   * Which pods get real main-container processes (default: all). `false` (or a predicate
   * answering false) makes a pod Running with no process behind it; exec still works. A
   * predicate answering an argv runs that in the container's stead (a cheap stand-in for its
   * command). For scale tests with hundreds of pods.
   */
  readonly runProcesses?: boolean | ((pod: KObject, container: string) => boolean | readonly string[]);
  /** Interval of BOOKMARK events on watches that allow them (default 60 s, as a real server). */
  readonly bookmarkIntervalMs?: number;
  /** Watch history length before older resourceVersions expire (default 5000 events). */
  readonly historyLimit?: number;
  /** Extra namespaces to create at start. */
  readonly namespaces?: readonly string[];
}

/** Options of {@link ApiServer.restart}. */
export interface RestartOptions {
  /** Keep objects (an API server restart over etcd; default) or drop everything (a new cluster). */
  readonly keepState?: boolean;
  /** How long the port stays closed (default 0). */
  readonly downMs?: number;
  /**
   * Called while the port is closed, after the history was compacted: e.g. writes straight to
   * the store, so the versions watchers resume from are too old (410) when they come back.
   */
  readonly whileDown?: () => void;
}

/** A running loopback API server. */
export interface ApiServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly port: number;
  /** kubeconfig for kubectl and client-node (context `loopback`, namespace `default`). */
  readonly kubeconfigPath: string;
  /** Environment for running real kubectl against this server (KUBECONFIG, KUBECACHEDIR). */
  readonly kubectlEnv: { readonly KUBECONFIG: string; readonly KUBECACHEDIR: string };
  readonly faults: Faults;
  readonly requestLog: RequestLog;
  /** The object store (read it in tests; write through the API). */
  readonly store: Store;
  /** Drops every connection and listens again on the same port. */
  restart(opts?: RestartOptions): Promise<void>;
  /** Stops listening, kills every process it started, removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

interface Route {
  def?: ResourceDef | undefined;
  ns?: string | undefined;
  name?: string | undefined;
  sub?: string | undefined;
  watchPath: boolean;
}

/** Parses `/api/v1/...` into a resource route; undefined when it is not one. */
function parseRoute(path: string): Route | undefined {
  let parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  let group = "";
  if (parts[0] === "api" && parts[1] === "v1") parts = parts.slice(2);
  else if (parts[0] === "apis" && GROUPS.includes(parts[1] ?? "") && parts[2] === "v1" && parts.length > 3) {
    group = parts[1]!;
    parts = parts.slice(3);
  } else return undefined;
  let watchPath = false;
  if (parts[0] === "watch") {
    watchPath = true;
    parts = parts.slice(1);
  }
  if (parts.length === 0) return undefined;
  if (
    parts[0] === "namespaces" &&
    parts.length >= 3 &&
    !(parts.length === 3 && ["status", "finalize"].includes(parts[2]!))
  ) {
    const [, ns, resource, name, sub] = parts;
    const def = resourceDef(resource!, group);
    if (!def?.namespaced || parts.length > 5) return { def: undefined, watchPath };
    return { def, ns, name, sub, watchPath };
  }
  const [resource, name, sub] = parts;
  const def = resourceDef(resource!, group);
  if (!def || parts.length > 3) return { def: undefined, watchPath };
  if (def.namespaced && name !== undefined) return { def: undefined, watchPath };
  return { def, name, sub, watchPath };
}

function sendJson(res: ServerResponse, code: number, body: unknown, type = "application/json"): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": type, "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, e: ApiError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
  sendJson(res, e.code, e.status);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function parseBody(raw: Buffer, contentType: string): unknown {
  const text = raw.toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    if (contentType.includes("yaml")) return parseYaml(text);
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`error decoding request body: ${(e as Error).message}`);
  }
}

function kubeconfigYaml(url: string, token: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: loopback",
    "  cluster:",
    `    server: ${url}`,
    "    insecure-skip-tls-verify: true",
    "users:",
    "- name: loopback",
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: loopback",
    "  context:",
    "    cluster: loopback",
    "    user: loopback",
    "    namespace: default",
    "current-context: loopback",
    "",
  ].join("\n");
}

/** Starts a loopback API server on 127.0.0.1. */
export async function startApiServer(opts: ApiServerOptions = {}): Promise<ApiServer> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? realpathSync(mkdtempSync(join(tmpdir(), "gck-")));
  mkdirSync(dir, { recursive: true });
  const token = opts.token ?? `loopback-${randomBytes(6).toString("hex")}`;
  const store = new Store(opts.historyLimit);
  const faults = new Faults();
  const requestLog = new RequestLog();
  const rest = new Rest(store);
  rest.seed();
  const collector = new GarbageCollector(store, (resource, ns, name, uid) => {
    rest.delete(RESOURCES.find((d) => d.resource === resource)!, ns, name, new URLSearchParams(), {
      preconditions: { uid },
      propagationPolicy: "Background",
    });
  });
  for (const ns of opts.namespaces ?? []) {
    rest.create(resourceDef("namespaces")!, undefined, { metadata: { name: ns } }, new URLSearchParams());
  }
  const kubelet = new Kubelet(
    store,
    {
      rootDir: join(dir, "p"),
      serverId: randomBytes(8).toString("hex"),
      scheduleDelayMs: opts.scheduleDelayMs ?? 20,
      startDelayMs: opts.startDelayMs ?? 50,
      restartBackoffMs: opts.restartBackoffMs ?? 500,
      defaultEntrypoint: opts.defaultEntrypoint ?? ["sleep", "infinity"],
      ...(opts.runProcesses === undefined || opts.runProcesses === true
        ? {}
        : { runProcesses: typeof opts.runProcesses === "function" ? opts.runProcesses : () => false }),
      nodeName: "loopback-node",
    },
    faults,
  );
  const bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 60_000;
  const sockets = new Set<Socket>();
  const endWatches = new Set<() => void>();
  const protocols: readonly string[] = opts.streamProtocols ?? STREAM_PROTOCOLS;
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => protocols.find((p) => offered.has(p)) ?? false,
  });
  let port = opts.port ?? 0;
  let hostPort = "";

  const record = (req: IncomingMessage, url: URL, route: Route | undefined, verb: string): RequestRecord => {
    const r: RequestRecord = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.search.replace(/^\?/, ""),
      verb,
      resource: route?.def?.resource,
      subresource: route?.sub,
      namespace: route?.ns,
      name: route?.name,
      userAgent: String(req.headers["user-agent"] ?? ""),
      status: 0,
      at: Date.now(),
    };
    requestLog.entries.push(r);
    return r;
  };

  const verbOf = (method: string, route: Route | undefined, q: URLSearchParams): string => {
    if (!route?.def) return "other";
    const watch = route.watchPath || queryBool(q, "watch");
    if (route.sub === "exec" || route.sub === "attach") return "connect";
    switch (method) {
      case "GET":
        return watch ? "watch" : route.name === undefined ? "list" : "get";
      case "POST":
        return "create";
      case "PUT":
        return "update";
      case "PATCH":
        return "patch";
      case "DELETE":
        return route.name === undefined ? "deletecollection" : "delete";
      default:
        return "other";
    }
  };

  const authorize = (req: IncomingMessage): void => {
    if (!opts.requireToken) return;
    if (req.headers.authorization !== `Bearer ${token}`) throw unauthorized();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://loopback");
    const q = url.searchParams;
    const method = req.method ?? "GET";
    const route = parseRoute(url.pathname);
    const discovery = !route;
    const verb = discovery ? "discovery" : verbOf(method, route, q);
    const rec = record(req, url, route, verb);
    res.on("finish", () => {
      rec.status = res.statusCode;
    });
    try {
      if (faults.latencyMs > 0) await sleep(faults.latencyMs);
      authorize(req);
      const fault = faults.takeFailure(method, url.pathname, verb === "watch");
      if (fault) throw fault;
      if (discovery) return serveDiscovery(req, res, url.pathname);
      const def = route.def;
      if (!def) throw notFound("", url.pathname.split("/").pop() ?? "");
      const ns = def.namespaced ? route.ns : undefined;
      const name = route.name;
      const contentType = String(req.headers["content-type"] ?? "application/json")
        .split(";")[0]!
        .trim();
      if (route.sub === "exec" || route.sub === "attach") {
        throw badRequest("Upgrade request required");
      }
      if (
        method !== "GET" &&
        method !== "PATCH" &&
        contentType !== "application/json" &&
        !contentType.includes("yaml")
      ) {
        // protobuf/CBOR bodies: client-go retries once in JSON after a 415
        throw unsupportedMediaType(contentType);
      }
      if (route.sub === "log") {
        if (method !== "GET") throw methodNotAllowed();
        return serveLog(res, rest.get(def, ns, name!), q);
      }
      if (route.sub !== undefined && route.sub !== "status") throw notFound(def.resource, name ?? "");
      if (route.sub === "status" && !def.subresources.some((s) => s.name === "status"))
        throw notFound(def.resource, name ?? "");
      if (name === undefined) {
        if (method === "GET") {
          if (verb === "watch") {
            const asTable =
              def.resource === "pods" && wantsTable(req.headers.accept)
                ? (o: KObject) =>
                    podTable({ metadata: { resourceVersion: o.metadata.resourceVersion }, items: [o] })
                : undefined;
            const end = rest.watch(def, route.ns, q, res, { bookmarkIntervalMs, asTable });
            endWatches.add(end);
            res.on("close", () => endWatches.delete(end));
            return;
          }
          const list = rest.list(def, route.ns, q);
          if (def.resource === "pods" && wantsTable(req.headers.accept)) {
            return sendJson(res, 200, podTable(list), "application/json;as=Table;v=v1;g=meta.k8s.io");
          }
          return sendJson(res, 200, list);
        }
        const body = parseBody(await readBody(req), contentType);
        if (method === "POST") return sendJson(res, 201, rest.create(def, route.ns, body, q));
        if (method === "DELETE")
          return sendJson(
            res,
            200,
            rest.deleteCollection(def, route.ns, q, (body ?? {}) as Record<string, unknown>),
          );
        throw methodNotAllowed();
      }
      if (method === "GET") {
        const obj = rest.get(def, ns, name);
        if (def.resource === "pods" && !route.sub && wantsTable(req.headers.accept)) {
          return sendJson(
            res,
            200,
            podTable({ metadata: { resourceVersion: obj.metadata.resourceVersion }, items: [obj] }),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
          );
        }
        return sendJson(res, 200, obj);
      }
      const body = parseBody(await readBody(req), contentType);
      if (method === "PUT") return sendJson(res, 200, rest.update(def, ns, name, body, q, route.sub));
      if (method === "PATCH") {
        if (!(PATCH_TYPES as readonly string[]).includes(contentType))
          throw unsupportedMediaType(contentType, PATCH_TYPES.join(", "));
        const out = rest.patch(def, ns, name, contentType as PatchType, body, q, route.sub);
        return sendJson(res, out.created ? 201 : 200, out.obj);
      }
      if (method === "DELETE") {
        const options = (body ?? {}) as Record<string, unknown>;
        return sendJson(res, 200, rest.delete(def, ns, name, q, options));
      }
      throw methodNotAllowed();
    } catch (e) {
      sendError(res, toApiError(e));
    }
  };

  const serveDiscovery = (req: IncomingMessage, res: ServerResponse, path: string): void => {
    const aggregated = wantsAggregated(req.headers.accept);
    // /apis/<group>, /apis/<group>/v1, /openapi/v3/apis/<group>/v1 of a served group
    const g = /^\/(openapi\/v3\/)?apis\/([^/]+)(\/v1)?\/*$/.exec(path);
    if (g && GROUPS.includes(g[2]!)) {
      if (g[1] && g[3]) {
        sendJson(res, 200, openApiV1(g[2]));
        return;
      }
      if (!g[1]) {
        sendJson(res, 200, g[3] ? apiResourceList(g[2]) : apiGroup(g[2]!));
        return;
      }
    }
    switch (path.replace(/\/+$/, "")) {
      case "/version":
        sendJson(res, 200, VERSION);
        return;
      case "/api":
        if (aggregated) sendJson(res, 200, aggregatedApi(), AGGREGATED_TYPE);
        else sendJson(res, 200, legacyApi(hostPort));
        return;
      case "/apis":
        if (aggregated) sendJson(res, 200, aggregatedApis(), AGGREGATED_TYPE);
        else sendJson(res, 200, legacyApis());
        return;
      case "/api/v1":
        sendJson(res, 200, apiResourceList());
        return;
      case "/openapi/v3":
        sendJson(res, 200, openApiIndex());
        return;
      case "/openapi/v3/api/v1":
        sendJson(res, 200, openApiV1());
        return;
      case "/healthz":
      case "/livez":
      case "/readyz":
        res.writeHead(200, { "Content-Type": "text/plain" });
        res.end("ok");
        return;
      default:
        throw notFound("", path);
    }
  };

  const serveLog = (res: ServerResponse, pod: KObject, q: URLSearchParams): void => {
    const buf: LogBuffer = kubelet.logBuffer(pod, q.get("container") ?? undefined, queryBool(q, "previous"));
    const timestamps = queryBool(q, "timestamps");
    const since = q.get("sinceSeconds") !== null ? Date.now() - Number(q.get("sinceSeconds")) * 1000 : 0;
    let limit = q.get("limitBytes") !== null ? Number(q.get("limitBytes")) : Number.POSITIVE_INFINITY;
    const fmt = (ts: number, data: Buffer): Buffer => {
      if (!timestamps) return data;
      const stamp = `${new Date(ts).toISOString().replace("Z", "000000Z")} `;
      const lines = data.toString("utf8").split(/(?<=\n)/);
      return Buffer.from(lines.map((l) => stamp + l).join(""));
    };
    let chunks = buf.chunks.filter((c) => c.ts >= since);
    const tail = q.get("tailLines");
    let body = Buffer.concat(chunks.map((c) => fmt(c.ts, c.data)));
    if (tail !== null) {
      const lines = body
        .toString("utf8")
        .split(/(?<=\n)/)
        .filter((l) => l !== "");
      body = Buffer.from(lines.slice(Math.max(0, lines.length - Number(tail))).join(""));
    }
    chunks = [];
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.flushHeaders();
    const write = (b: Buffer) => {
      if (limit <= 0) return;
      const part = b.subarray(0, Math.min(b.length, limit));
      limit -= part.length;
      res.write(part);
      if (limit <= 0) res.end();
    };
    write(body);
    if (!queryBool(q, "follow") || buf.ended || res.writableEnded) {
      if (!res.writableEnded) res.end();
      return;
    }
    const onData = (d: Buffer) => write(fmt(Date.now(), d));
    const onEnd = () => {
      cleanup();
      if (!res.writableEnded) res.end();
    };
    const cleanup = () => {
      buf.off("data", onData);
      buf.off("end", onEnd);
    };
    buf.on("data", onData);
    buf.on("end", onEnd);
    res.on("close", cleanup);
    endWatches.add(onEnd);
    res.on("close", () => endWatches.delete(onEnd));
  };

  /** exec/attach upgrades. Refusals are answered as plain HTTP with a Status body. */
  const onUpgrade = async (req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://loopback");
    const q = url.searchParams;
    const route = parseRoute(url.pathname);
    const rec = record(req, url, route, "connect");
    // A client may reset the connection at any point of the upgrade: without a listener the
    // socket's error would be uncaught and end the whole server.
    socket.on("error", () => socket.destroy());
    const refuse = (e: ApiError) => {
      rec.status = e.code;
      if (socket.destroyed) return;
      const body = JSON.stringify(e.status);
      socket.end(
        `HTTP/1.1 ${e.code} ${e.status.reason ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    try {
      if (faults.latencyMs > 0) await sleep(faults.latencyMs);
      authorize(req);
      const fault = faults.takeFailure(req.method ?? "GET", url.pathname, false);
      if (fault) throw fault;
      const isStream = route?.sub === "exec" || route?.sub === "attach";
      if (!route?.name || route.def?.resource !== "pods" || !isStream) {
        throw notFound("", url.pathname);
      }
      const pod = rest.get(route.def, route.ns, route.name);
      const flags: StreamFlags = {
        stdin: queryBool(q, "stdin"),
        stdout: queryBool(q, "stdout"),
        stderr: queryBool(q, "stderr"),
        tty: queryBool(q, "tty"),
      };
      if (!flags.stdin && !flags.stdout && !flags.stderr) {
        throw badRequest("you must specify at least 1 of stdin, stdout, stderr");
      }
      const container = q.get("container") ?? undefined;
      const offered = String(req.headers["sec-websocket-protocol"] ?? "")
        .split(",")
        .map((s) => s.trim());
      if (!protocols.some((p) => offered.includes(p))) {
        throw badRequest(
          `unable to upgrade connection: none of the offered subprotocols ${JSON.stringify(offered)} is supported (want ${protocols.join(", ")})`,
        );
      }
      if (route.sub === "exec") {
        const argv = q.getAll("command");
        if (argv.length === 0) throw badRequest("you must specify at least one command for the container");
        kubelet.runningContainer(pod, container); // refuse before upgrading
        if (socket.destroyed) return; // the client went away while we checked
        wss.handleUpgrade(req, socket, head, (ws) => {
          rec.status = 101;
          runExec(ws, flags, () => kubelet.exec(pod, container, argv, flags.tty), argv);
        });
      } else {
        const target = kubelet.attachTarget(pod, container);
        wss.handleUpgrade(req, socket, head, (ws) => {
          rec.status = 101;
          runAttach(ws, flags, target);
        });
      }
    } catch (e) {
      refuse(toApiError(e));
    }
  };

  const runExec = (ws: WebSocket, flags: StreamFlags, start: () => Proc, argv: string[]) => {
    const ch = new ChannelSocket(ws, ws.protocol, flags);
    let proc: Proc;
    try {
      proc = start();
    } catch (e) {
      const err = e as Error & { code?: string };
      ch.finish(
        err instanceof ApiError
          ? internalStatus(err.message)
          : internalStatus(
              `error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: ${err.message}: unknown`,
            ),
      );
      return;
    }
    proc.on("output", (stream, data) => ch.output(stream, data));
    if (!flags.stdin) proc.endStdin();
    ch.wireInput(proc, {
      onClientGone: () => {
        if (flags.tty) proc.signal("SIGHUP");
        else proc.endStdin();
      },
    });
    void proc.exited.then(async (exit) => {
      if (flags.tty) await sleep(20); // a PTY may deliver its last output after the exit event
      ch.finish(exitStatus(exit, argv));
    });
  };

  const runAttach = (ws: WebSocket, flags: StreamFlags, target: ReturnType<Kubelet["attachTarget"]>) => {
    const ch = new ChannelSocket(ws, ws.protocol, flags);
    const listener = (stream: 1 | 2, data: Buffer) => ch.output(stream, data);
    target.attachers.add(listener);
    const proc = target.proc;
    ch.wireInput(
      {
        ...proc,
        pid: proc.pid,
        on: proc.on.bind(proc),
        write: (d: Buffer) => {
          if (target.spec.stdin) proc.write(d);
        },
        endStdin: () => {
          if (target.spec.stdinOnce) proc.endStdin();
        },
        resize: (c: number, r: number) => proc.resize(c, r),
        signal: () => {},
        exited: proc.exited,
      },
      { onClientGone: () => target.attachers.delete(listener) },
    );
    ws.on("close", () => target.attachers.delete(listener));
    void proc.exited.then(() => {
      target.attachers.delete(listener);
      ch.finish({ metadata: {}, status: "Success" });
    });
  };

  let server: Server;
  const listen = async (): Promise<void> => {
    server = createServer((req, res) => void handle(req, res));
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    server.on("upgrade", (req, socket, head) => void onUpgrade(req, socket as Socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    hostPort = `127.0.0.1:${port}`;
  };
  const close = async (): Promise<void> => {
    for (const end of [...endWatches]) end();
    for (const ws of wss.clients) ws.terminate();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };

  await listen();
  const url = `http://${hostPort}`;
  const kubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfigYaml(url, token), { mode: 0o600 });
  const cacheDir = join(dir, "kube-cache");
  let stopped = false;
  return {
    url,
    port,
    kubeconfigPath,
    kubectlEnv: { KUBECONFIG: kubeconfigPath, KUBECACHEDIR: cacheDir },
    faults,
    requestLog,
    store,
    async restart(r: RestartOptions = {}) {
      await close();
      if (r.keepState === false) {
        await kubelet.dropAll();
        store.clear();
        rest.seed();
      } else {
        store.compact();
      }
      r.whileDown?.();
      if (r.downMs) await sleep(r.downMs);
      await listen();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await close();
      collector.stop();
      await kubelet.stop();
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
