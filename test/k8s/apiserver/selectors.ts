/**
 * Label and field selectors as the API server parses them (apimachinery `labels/selector.go`,
 * `fields/selector.go`). Pure.
 */
import { badRequest } from "./status.js";

/** A compiled selector: true when an object matches. */
export type Matcher = (obj: KObject) => boolean;

/** The loosest shape of a stored object. */
export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string | undefined;
    namespace?: string | undefined;
    labels?: Record<string, string> | undefined;
    annotations?: Record<string, string> | undefined;
    resourceVersion?: string | undefined;
    uid?: string | undefined;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

type Req =
  | { op: "in" | "notin"; key: string; values: string[] }
  | { op: "exists" | "!"; key: string }
  | { op: "gt" | "lt"; key: string; value: number };

/** Splits at commas that are not inside parentheses. */
function splitTop(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((s) => s.trim()).filter((s) => s !== "");
}

function parseLabelReq(term: string): Req {
  let m = /^!\s*([^\s=!<>(),]+)$/.exec(term);
  if (m) return { op: "!", key: m[1]! };
  m = /^([^\s=!<>(),]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
  if (m) {
    const values = m[3]!
      .split(",")
      .map((v) => v.trim())
      .filter((v, _i, a) => v !== "" || a.length === 1);
    return { op: m[2] as "in" | "notin", key: m[1]!, values };
  }
  m = /^([^\s=!<>(),]+)\s*(==|=|!=)\s*([^\s=!<>(),]*)$/.exec(term);
  if (m) return { op: m[2] === "!=" ? "notin" : "in", key: m[1]!, values: [m[3]!] };
  m = /^([^\s=!<>(),]+)\s*([<>])\s*(-?\d+)$/.exec(term);
  if (m) return { op: m[2] === ">" ? "gt" : "lt", key: m[1]!, value: Number(m[3]) };
  m = /^([^\s=!<>(),]+)$/.exec(term);
  if (m) return { op: "exists", key: m[1]! };
  throw badRequest(`unable to parse requirement: ${JSON.stringify(term)}`);
}

/** Compiles a `labelSelector` query value; empty or absent matches everything. */
export function parseLabelSelector(text: string | null | undefined): Matcher {
  if (!text) return () => true;
  const reqs = splitTop(text).map(parseLabelReq);
  return (obj) => {
    const labels = obj.metadata.labels ?? {};
    return reqs.every((r) => {
      const has = Object.hasOwn(labels, r.key);
      const v = labels[r.key];
      switch (r.op) {
        case "in":
          return has && r.values.includes(v!);
        case "notin":
          return !has || !r.values.includes(v!);
        case "exists":
          return has;
        case "!":
          return !has;
        case "gt":
          return has && Number(v) > r.value;
        case "lt":
          return has && Number(v) < r.value;
      }
      return false;
    });
  };
}

/** Field getters per resource; a field not listed is rejected with 400. */
export type FieldGetters = Record<string, (obj: KObject) => string>;

/** Compiles a `fieldSelector` against the resource's supported fields. */
export function parseFieldSelector(text: string | null | undefined, fields: FieldGetters): Matcher {
  if (!text) return () => true;
  const reqs = splitTop(text).map((term) => {
    const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    const get = fields[m[1]!];
    if (!get) throw badRequest(`field label not supported: ${m[1]}`);
    return { get, neg: m[2] === "!=", value: m[3]! };
  });
  return (obj) => reqs.every((r) => (r.get(obj) === r.value) !== r.neg);
}
