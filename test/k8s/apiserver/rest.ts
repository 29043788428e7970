/**
 * REST semantics over the store: create/get/list/update/patch/delete for every served resource,
 * selectors, resourceVersion preconditions, pod graceful deletion, namespace lifecycle and watch
 * streams (history replay, bookmarks, 410 Expired). Transport-free: handlers take parsed inputs
 * and return objects or throw ApiError; the HTTP layer lives in server.ts.
 */
import type { ServerResponse } from "node:http";
import { orphanDependents } from "./gc.js";
import { applyPatch, type PatchType } from "./patch.js";
import { ENFORCE_LABEL, podSecurityMessage, podSecurityViolations } from "./podsecurity.js";
import {
  apiVersionOf,
  defaultOnCreate,
  normalizeData,
  now,
  type ResourceDef,
  randomSuffix,
  validate,
} from "./resources.js";
import { type KObject, type Matcher, parseFieldSelector, parseLabelSelector } from "./selectors.js";
import { ApiError, alreadyExists, badRequest, conflict, expired, forbidden, notFound } from "./status.js";
import type { Store, StoreEvent } from "./store.js";

type Json = Record<string, unknown>;

/** Default namespaces of a fresh cluster. */
export const DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

/** Query parameters that matter to REST handlers. */
export type Query = URLSearchParams;

/**
 * A boolean query parameter as the API server parses it (Go's `strconv.ParseBool`): `1`, `t`,
 * `T`, `true`, `TRUE`, `True` — the official Python client sends `True`. Pure.
 */
export function queryBool(q: Query, name: string): boolean {
  return ["1", "t", "T", "true", "TRUE", "True"].includes(q.get(name) ?? "");
}

/** Builds a selector matcher from `labelSelector` + `fieldSelector`. */
export function selectorOf(def: ResourceDef, q: Query): Matcher {
  const labels = parseLabelSelector(q.get("labelSelector"));
  const fields = parseFieldSelector(q.get("fieldSelector"), def.fields);
  return (o) => labels(o) && fields(o);
}

function withoutTypeMeta(o: KObject): KObject {
  const { kind: _k, apiVersion: _a, ...rest } = o;
  return rest as KObject;
}

function sameContent(a: KObject, b: KObject): boolean {
  const strip = (o: KObject) =>
    JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
  return strip(a) === strip(b);
}

/** REST handlers bound to one store. */
export class Rest {
  private readonly store: Store;
  private readonly onNamespaceGone: (ns: string) => void;

  constructor(store: Store, onNamespaceGone: (ns: string) => void = () => {}) {
    this.store = store;
    this.onNamespaceGone = onNamespaceGone;
  }

  /** Seeds the default namespaces and their `default` service accounts. */
  seed(): void {
    for (const ns of DEFAULT_NAMESPACES) this.ensureNamespace(ns);
  }

  private ensureNamespace(name: string): void {
    if (this.store.get("namespaces", undefined, name)) return;
    const nsDef = { resource: "namespaces", kind: "Namespace", namespaced: false } as ResourceDef;
    this.store.put("namespaces", defaultOnCreate(nsDef, { metadata: { name } }, undefined));
    this.addDefaultServiceAccount(name);
  }

  private addDefaultServiceAccount(ns: string): void {
    const saDef = { resource: "serviceaccounts", kind: "ServiceAccount", namespaced: true } as ResourceDef;
    if (!this.store.get("serviceaccounts", ns, "default")) {
      this.store.put("serviceaccounts", defaultOnCreate(saDef, { metadata: { name: "default" } }, ns));
    }
  }

  private requireNamespace(ns: string | undefined, forCreate: boolean): void {
    if (ns === undefined) return;
    const obj = this.store.get("namespaces", undefined, ns);
    if (!obj) throw notFound("namespaces", ns);
    if (forCreate && obj.metadata.deletionTimestamp) {
      throw forbidden(
        "namespaces",
        ns,
        `unable to create new content in namespace ${ns} because it is being terminated`,
      );
    }
  }

  /** PodSecurity admission: 403 when the namespace enforces a level the pod violates. */
  private admitPodSecurity(pod: KObject): void {
    const ns = this.store.get("namespaces", undefined, pod.metadata.namespace!);
    const level = ns?.metadata.labels?.[ENFORCE_LABEL];
    if (!level) return;
    const violations = podSecurityViolations(pod, level);
    if (violations.length === 0) return;
    throw forbidden("pods", pod.metadata.name!, podSecurityMessage(pod.metadata.name!, level, violations));
  }

  get(def: ResourceDef, ns: string | undefined, name: string): KObject {
    const obj = this.store.get(def.resource, ns, name);
    if (!obj) throw notFound(def.resource, name, def.group);
    return obj;
  }

  /** LIST. A namespace that does not exist simply has no objects (200, empty), as on a real server. */
  list(def: ResourceDef, ns: string | undefined, q: Query): KObject {
    const match = selectorOf(def, q);
    const items = this.store
      .list(def.resource, def.namespaced ? ns : undefined)
      .filter(match)
      .map(withoutTypeMeta);
    return {
      kind: `${def.kind}List`,
      apiVersion: apiVersionOf(def),
      metadata: { resourceVersion: String(this.store.currentRv()) },
      items,
    } as unknown as KObject;
  }

  create(def: ResourceDef, ns: string | undefined, body: unknown, q: Query): KObject {
    if (typeof body !== "object" || body === null || Array.isArray(body))
      throw badRequest("the body of the request must be an object");
    const obj = body as KObject;
    obj.metadata ??= {};
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw badRequest(
        `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersionOf(def)})`,
      );
    }
    if (def.namespaced && obj.metadata.namespace !== undefined && obj.metadata.namespace !== ns) {
      throw badRequest(
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
    if (!obj.metadata.name && typeof obj.metadata.generateName === "string") {
      obj.metadata.name = `${obj.metadata.generateName}${randomSuffix()}`;
    }
    if (def.namespaced) this.requireNamespace(ns, true);
    const name = obj.metadata.name;
    if (name && this.store.get(def.resource, def.namespaced ? ns : undefined, name)) {
      throw alreadyExists(def.resource, name);
    }
    const out = defaultOnCreate(def, obj, def.namespaced ? ns : undefined);
    validate(def, out);
    if (def.resource === "pods") this.admitPodSecurity(out);
    if (q.get("dryRun") === "All") return out;
    const stored = this.store.put(def.resource, out);
    if (def.resource === "namespaces") this.addDefaultServiceAccount(name!);
    return stored;
  }

  /** Replaces an object (PUT). `subresource` "status" changes only the status. */
  update(
    def: ResourceDef,
    ns: string | undefined,
    name: string,
    body: unknown,
    q: Query,
    subresource?: string,
  ): KObject {
    if (typeof body !== "object" || body === null)
      throw badRequest("the body of the request must be an object");
    const obj = body as KObject;
    obj.metadata ??= {};
    if (obj.metadata.name !== undefined && obj.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    const old = this.get(def, ns, name);
    if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(def.resource, name);
    }
    return this.write(def, old, obj, q, subresource);
  }

  /** PATCH. Server-side apply of a missing object creates it. */
  patch(
    def: ResourceDef,
    ns: string | undefined,
    name: string,
    type: PatchType,
    body: unknown,
    q: Query,
    subresource?: string,
  ): { obj: KObject; created: boolean } {
    const old = this.store.get(def.resource, def.namespaced ? ns : undefined, name);
    if (!old) {
      if (type === "application/apply-patch+yaml" && !subresource) {
        const obj = structuredClone(body) as KObject;
        obj.metadata = { ...(obj.metadata ?? {}), name };
        return { obj: this.create(def, ns, obj, q), created: true };
      }
      throw notFound(def.resource, name);
    }
    const patched = applyPatch(type, old, body) as KObject;
    if (typeof patched !== "object" || patched === null) throw badRequest("patch produced a non-object");
    patched.metadata ??= {};
    if (
      patched.metadata.resourceVersion &&
      patched.metadata.resourceVersion !== old.metadata.resourceVersion
    ) {
      throw conflict(def.resource, name);
    }
    if (patched.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${String(patched.metadata.name)}) does not match the name on the URL (${name})`,
      );
    }
    return { obj: this.write(def, old, patched, q, subresource), created: false };
  }

  private write(def: ResourceDef, old: KObject, incoming: KObject, q: Query, subresource?: string): KObject {
    let next: KObject;
    if (subresource === "status") {
      next = { ...old, status: incoming.status };
    } else {
      next = normalizeData(def, {
        ...incoming,
        apiVersion: apiVersionOf(def),
        kind: def.kind,
        metadata: {
          ...incoming.metadata,
          name: old.metadata.name,
          namespace: old.metadata.namespace,
          // a uid the client sent must match (ValidateObjectMetaUpdate: 422 "field is immutable")
          uid: incoming.metadata.uid || old.metadata.uid,
          creationTimestamp: old.metadata.creationTimestamp,
          resourceVersion: old.metadata.resourceVersion,
        },
      });
      if (!def.namespaced) delete next.metadata.namespace;
      if (old.metadata.deletionTimestamp) {
        next.metadata.deletionTimestamp = old.metadata.deletionTimestamp;
        next.metadata.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
      }
      if (def.resource === "pods" || def.resource === "namespaces") next.status = old.status;
      if (def.resource === "namespaces") next.spec = old.spec;
      validate(def, next, old);
    }
    if (sameContent(old, next)) return old;
    if (q.get("dryRun") === "All") return next;
    return this.store.put(def.resource, next);
  }

  /** DELETE. Pods with grace > 0 get a deletionTimestamp and stay until the node removes them. */
  delete(def: ResourceDef, ns: string | undefined, name: string, q: Query, options: Json): KObject {
    const old = this.get(def, ns, name);
    const pre = (options.preconditions ?? {}) as { uid?: string; resourceVersion?: string };
    if (pre.uid && pre.uid !== old.metadata.uid) {
      throw conflict(
        def.resource,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    }
    if (pre.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(
        def.resource,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      );
    }
    const dryRun =
      q.get("dryRun") === "All" || (Array.isArray(options.dryRun) && options.dryRun.includes("All"));
    const policy = options.propagationPolicy ?? q.get("propagationPolicy");
    if (!dryRun && policy === "Orphan" && ns !== undefined)
      orphanDependents(this.store, ns, old.metadata.uid!);
    if (def.resource === "pods") return this.deletePod(old, q, options, dryRun);
    if (def.resource === "namespaces") return this.deleteNamespace(old, dryRun);
    if (dryRun) return old;
    this.store.remove(def.resource, ns, name);
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: { name, kind: def.resource, uid: old.metadata.uid },
    } as unknown as KObject;
  }

  private deletePod(old: KObject, q: Query, options: Json, dryRun: boolean): KObject {
    const spec = (old.spec ?? {}) as Json;
    const phase = ((old.status ?? {}) as Json).phase;
    const fromQuery = q.get("gracePeriodSeconds");
    let grace: number =
      typeof options.gracePeriodSeconds === "number"
        ? options.gracePeriodSeconds
        : fromQuery !== null
          ? Number(fromQuery)
          : Number(spec.terminationGracePeriodSeconds ?? 30);
    if (!spec.nodeName || phase === "Succeeded" || phase === "Failed") grace = 0;
    if (!Number.isFinite(grace) || grace < 0) grace = 0;
    if (dryRun) return old;
    const ns = old.metadata.namespace;
    const name = old.metadata.name!;
    if (old.metadata.deletionTimestamp) {
      const current = Number(old.metadata.deletionGracePeriodSeconds ?? 0);
      if (grace !== 0 && grace >= current) return old;
    }
    if (grace === 0) return this.store.remove("pods", ns, name)!;
    return this.store.put("pods", {
      ...old,
      metadata: { ...old.metadata, deletionTimestamp: now(grace * 1000), deletionGracePeriodSeconds: grace },
    });
  }

  private deleteNamespace(old: KObject, dryRun: boolean): KObject {
    if (dryRun || old.metadata.deletionTimestamp) return old;
    const name = old.metadata.name!;
    const terminating = this.store.put("namespaces", {
      ...old,
      metadata: { ...old.metadata, deletionTimestamp: now() },
      status: { phase: "Terminating" },
    });
    setImmediate(() => {
      for (const r of ["pods", "secrets", "configmaps", "serviceaccounts", "leases"]) {
        for (const o of this.store.list(r, name)) this.store.remove(r, name, o.metadata.name!);
      }
      this.store.remove("namespaces", undefined, name);
      this.onNamespaceGone(name);
    });
    return terminating;
  }

  /** DELETE on a collection: deletes every match, returns the list as it was. */
  deleteCollection(def: ResourceDef, ns: string | undefined, q: Query, options: Json): KObject {
    const list = this.list(def, ns, q) as unknown as { items: KObject[] };
    for (const o of list.items) {
      try {
        this.delete(def, o.metadata.namespace, o.metadata.name!, q, options);
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
    }
    return list as unknown as KObject;
  }

  /**
   * Streams a watch on `res` (headers already flushed by the caller are not assumed: this writes
   * them). Returns a function that ends the stream.
   */
  watch(
    def: ResourceDef,
    ns: string | undefined,
    q: Query,
    res: ServerResponse,
    opts: {
      bookmarkIntervalMs: number;
      /** What an event carries instead of the object (kubectl's `as=Table` watch: a Table of one row). */
      asTable?: ((o: KObject) => unknown) | undefined;
    },
  ): () => void {
    const match = selectorOf(def, q);
    const inScope = (o: KObject) => !def.namespaced || ns === undefined || o.metadata.namespace === ns;
    const rvParam = q.get("resourceVersion");
    const bookmarks = queryBool(q, "allowWatchBookmarks");
    res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private" });
    res.flushHeaders();
    const send = (type: string, object: unknown) => {
      if (res.writableEnded || res.destroyed) return;
      const out =
        opts.asTable && type !== "ERROR" && type !== "BOOKMARK" ? opts.asTable(object as KObject) : object;
      res.write(`${JSON.stringify({ type, object: out })}\n`);
    };
    let lastRv = this.store.currentRv();
    const deliver = (e: StoreEvent) => {
      if (e.resource !== def.resource || !inScope(e.object)) return;
      const now = match(e.object);
      const before = e.prev !== undefined && match(e.prev);
      lastRv = e.rv;
      if (e.type === "DELETED") {
        if (before || now) send("DELETED", e.object);
      } else if (e.type === "ADDED") {
        if (now) send("ADDED", e.object);
      } else if (now && before) send("MODIFIED", e.object);
      else if (now) send("ADDED", e.object);
      else if (before) send("DELETED", e.object);
    };
    let backlog: StoreEvent[] = [];
    if (!rvParam || rvParam === "0") {
      for (const o of this.store.list(def.resource, def.namespaced ? ns : undefined)) {
        if (match(o)) send("ADDED", o);
      }
    } else {
      const from = Number(rvParam);
      const events = Number.isFinite(from) ? this.store.since(from) : undefined;
      if (!events) {
        send("ERROR", expired(rvParam, String(this.store.oldestRv())));
        res.end();
        return () => {};
      }
      backlog = events;
    }
    for (const e of backlog) deliver(e);
    const unsubscribe = this.store.subscribe(deliver);
    const timers: NodeJS.Timeout[] = [];
    const end = () => {
      unsubscribe();
      for (const t of timers) clearTimeout(t);
      if (!res.writableEnded) res.end();
    };
    if (bookmarks) {
      const iv = setInterval(() => {
        send("BOOKMARK", {
          kind: def.kind,
          apiVersion: apiVersionOf(def),
          metadata: {
            resourceVersion: String(Math.max(lastRv, this.store.currentRv())),
            creationTimestamp: null,
          },
          ...(def.resource === "pods" ? { spec: { containers: null }, status: {} } : {}),
        });
      }, opts.bookmarkIntervalMs);
      timers.push(iv);
    }
    const timeout = Number(q.get("timeoutSeconds"));
    if (Number.isFinite(timeout) && timeout > 0) timers.push(setTimeout(end, timeout * 1000));
    res.on("close", end);
    return end;
  }
}
