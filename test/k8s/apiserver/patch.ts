/**
 * The four PATCH flavours an API server accepts: RFC 6902 JSON Patch, RFC 7386 merge patch,
 * strategic merge patch (merge keys of the core types, `$patch`, `$setElementOrder/…`,
 * `$retainKeys`, `$deleteFromPrimitiveList/…`), and server-side apply (treated as a strategic
 * merge of the whole object). Pure: inputs are never mutated.
 */
import { ApiError, badRequest } from "./status.js";

type Json = unknown;
type JsonMap = Record<string, Json>;

const isMap = (v: Json): v is JsonMap => typeof v === "object" && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));

function rejected(message: string): ApiError {
  return new ApiError({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `the server rejected our request due to an error in our request: ${message}`,
    reason: "Invalid",
    code: 422,
  });
}

/** RFC 7386: null deletes, maps merge recursively, everything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isMap(patch)) return clone(patch);
  const out: JsonMap = isMap(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescapePointer(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

function parsePointer(path: unknown): string[] {
  if (typeof path !== "string" || (path !== "" && !path.startsWith("/"))) {
    throw rejected(`invalid JSON pointer ${JSON.stringify(path)}`);
  }
  return path === "" ? [] : path.slice(1).split("/").map(unescapePointer);
}

function getAt(doc: Json, tokens: string[]): Json {
  let cur = doc;
  for (const t of tokens) {
    if (Array.isArray(cur)) {
      const i = Number(t);
      if (!/^\d+$/.test(t) || i >= cur.length) throw rejected(`index ${t} out of range`);
      cur = cur[i];
    } else if (isMap(cur)) {
      if (!Object.hasOwn(cur, t)) throw rejected(`missing key ${JSON.stringify(t)}`);
      cur = cur[t];
    } else throw rejected(`cannot descend into a scalar at ${JSON.stringify(t)}`);
  }
  return cur;
}

/** Applies one add/remove/replace at `tokens` on a (mutable) clone. Returns the new root. */
function mutate(doc: Json, tokens: string[], op: "add" | "remove" | "replace", value?: Json): Json {
  if (tokens.length === 0) {
    if (op === "remove") return undefined;
    return clone(value);
  }
  const parent = getAt(doc, tokens.slice(0, -1));
  const last = tokens[tokens.length - 1]!;
  if (Array.isArray(parent)) {
    const i = last === "-" ? parent.length : Number(last);
    if (!(last === "-" || /^\d+$/.test(last))) throw rejected(`invalid array index ${last}`);
    if (op === "add") {
      if (i > parent.length) throw rejected(`index ${last} out of range`);
      parent.splice(i, 0, clone(value));
    } else {
      if (i >= parent.length) throw rejected(`index ${last} out of range`);
      if (op === "remove") parent.splice(i, 1);
      else parent[i] = clone(value);
    }
  } else if (isMap(parent)) {
    if (op !== "add" && !Object.hasOwn(parent, last)) {
      throw rejected(`unable to ${op} nonexistent key: ${last}: missing value`);
    }
    if (op === "remove") delete parent[last];
    else parent[last] = clone(value);
  } else throw rejected(`cannot ${op} into a scalar`);
  return doc;
}

/** RFC 6902. A body that is not an array is a 400, as on a real server. */
export function jsonPatch(target: Json, patch: Json): Json {
  if (!Array.isArray(patch)) {
    throw badRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  }
  let doc = clone(target);
  for (const raw of patch) {
    if (!isMap(raw)) throw badRequest("json: cannot unmarshal into Go value of type jsonpatch.Operation");
    const op = raw.op;
    const path = parsePointer(raw.path);
    switch (op) {
      case "add":
      case "replace":
        if (!Object.hasOwn(raw, "value")) throw rejected(`${op} operation does not apply: missing value`);
        doc = mutate(doc, path, op, raw.value);
        break;
      case "remove":
        doc = mutate(doc, path, "remove");
        break;
      case "move": {
        const from = parsePointer(raw.from);
        const v = clone(getAt(doc, from));
        doc = mutate(doc, from, "remove");
        doc = mutate(doc, path, "add", v);
        break;
      }
      case "copy":
        doc = mutate(doc, path, "add", clone(getAt(doc, parsePointer(raw.from))));
        break;
      case "test":
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(raw.value)) {
          throw rejected(`testing value ${raw.path} failed: test failed`);
        }
        break;
      default:
        throw rejected(`Unexpected kind: ${String(op)}`);
    }
  }
  return doc;
}

/** `patchMergeKey` of the core/v1 list fields that merge (others are atomic and replace). */
const MERGE_KEYS: Record<string, string> = {
  containers: "name",
  initContainers: "name",
  ephemeralContainers: "name",
  env: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  ports: "containerPort",
  imagePullSecrets: "name",
  conditions: "type",
  ownerReferences: "uid",
  hostAliases: "ip",
  readinessGates: "conditionType",
  resourceClaims: "name",
};
/** Primitive lists with `patchStrategy:merge` (union). */
const MERGE_PRIMITIVE_LISTS = new Set(["finalizers"]);

function orderBy(list: Json[], order: Json[], key: string | undefined): Json[] {
  const keyOf = (v: Json) => (key && isMap(v) ? JSON.stringify(v[key]) : JSON.stringify(v));
  const wanted = order.map((o) => (key && isMap(o) ? JSON.stringify(o[key]) : JSON.stringify(o)));
  const rank = new Map(wanted.map((k, i) => [k, i]));
  return [...list]
    .map((v, i) => ({ v, i, r: rank.get(keyOf(v)) }))
    .sort((a, b) => (a.r ?? Number.MAX_SAFE_INTEGER) - (b.r ?? Number.MAX_SAFE_INTEGER) || a.i - b.i)
    .map((x) => x.v);
}

function mergeList(field: string, target: Json, patch: Json[]): Json {
  const key = MERGE_KEYS[field];
  const base = Array.isArray(target) ? target : [];
  if (patch.some((p) => isMap(p) && p.$patch === "replace")) {
    return clone(patch.filter((p) => !(isMap(p) && p.$patch === "replace")));
  }
  if (MERGE_PRIMITIVE_LISTS.has(field)) {
    const out = [...base];
    for (const v of patch) if (!out.includes(v)) out.push(v);
    return out;
  }
  if (!key) return clone(patch);
  const out = base.map((v) => clone(v));
  for (const p of patch) {
    if (!isMap(p)) throw badRequest(`${field}: expected an object in a list with merge key ${key}`);
    const idx = out.findIndex((v) => isMap(v) && v[key] === p[key]);
    if (p.$patch === "delete") {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMerge(out[idx], p);
    else out.push(strategicMerge(undefined, p));
  }
  return out;
}

/** Strategic merge patch over core/v1 types. */
export function strategicMerge(target: Json, patch: Json): Json {
  if (!isMap(patch)) return clone(patch);
  if (patch.$patch === "replace") {
    const { $patch: _, ...rest } = patch;
    return strategicMerge(undefined, rest);
  }
  if (patch.$patch === "delete") return undefined;
  const out: JsonMap = isMap(target) ? { ...target } : {};
  const orders: [string, Json[]][] = [];
  let retain: string[] | undefined;
  for (const [k, v] of Object.entries(patch)) {
    if (k === "$patch") continue;
    if (k === "$retainKeys") {
      if (Array.isArray(v)) retain = v.map(String);
      continue;
    }
    if (k.startsWith("$setElementOrder/")) {
      if (Array.isArray(v)) orders.push([k.slice("$setElementOrder/".length), v]);
      continue;
    }
    if (k.startsWith("$deleteFromPrimitiveList/")) {
      const field = k.slice("$deleteFromPrimitiveList/".length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(v)) {
      out[k] = mergeList(k, out[k], v);
    } else if (isMap(v)) {
      const merged = strategicMerge(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  for (const [field, order] of orders) {
    const cur = out[field];
    if (Array.isArray(cur)) out[field] = orderBy(cur, order, MERGE_KEYS[field]);
  }
  if (retain) for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  return out;
}

/** The PATCH media types this server accepts. */
export const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
] as const;
export type PatchType = (typeof PATCH_TYPES)[number];

/** Applies `patch` of media type `type` to `target`. */
export function applyPatch(type: PatchType, target: Json, patch: Json): Json {
  switch (type) {
    case "application/json-patch+json":
      return jsonPatch(target, patch);
    case "application/merge-patch+json":
      if (!isMap(patch)) throw badRequest("merge patch body must be a JSON object");
      return mergePatch(target, patch);
    case "application/strategic-merge-patch+json":
    case "application/apply-patch+yaml":
      if (!isMap(patch)) throw badRequest("patch body must be an object");
      return strategicMerge(target, patch);
  }
}
