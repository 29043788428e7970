/**
 * Kubernetes names for gc objects: pod/secret names (RFC 1123 DNS labels), label values and
 * metadata annotation keys. Every mapping is collision-proof: distinct inputs never share an
 * output, because anything that had to be changed or shortened carries a hash of the input.
 * Pure.
 */
import { createHash } from "node:crypto";

/** Longest RFC 1123 label (pod names here, label values, annotation name parts). */
export const MAX_LABEL = 63;

/** Label keys and annotation keys gc puts on every object it creates. */
export const LABELS = {
  managedBy: "app.kubernetes.io/managed-by",
  /** The city's ownership value: only objects with it are listed, stopped or deleted. */
  city: "gc.dev/city",
  /** The session identity (label form of the session name). */
  session: "gc.dev/session",
} as const;

export const ANNOTATIONS = {
  /** The exact gc session name (label values may be hashed). */
  session: "gc.dev/session-name",
  /** The exact ownership value (label values may be hashed). */
  city: "gc.dev/city",
  /** A random token per start: tells a pod this start created from one created by another. */
  startId: "gc.dev/start-id",
  /** Prefix of metadata keys (`meta.gc.dev/<key>`). */
  metaPrefix: "meta.gc.dev/",
} as const;

/** The value of {@link LABELS.managedBy}. */
export const MANAGED_BY = "gc";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** First `n` hex digits of sha256(parts joined by NUL). */
export function shortHash(n: number, ...parts: string[]): string {
  return createHash("sha256").update(parts.join("\0")).digest("hex").slice(0, n);
}

/** True when `s` is an RFC 1123 label (lowercase alphanumerics and `-`, ≤ 63). */
export function isDnsLabel(s: string): boolean {
  return s.length <= MAX_LABEL && DNS_LABEL.test(s);
}

/** True when `s` is a valid label value (empty allowed by Kubernetes, not by gc). */
export function isLabelValue(s: string): boolean {
  return s.length > 0 && s.length <= MAX_LABEL && LABEL_VALUE.test(s);
}

/**
 * The pod (and Secret) name of session `name` in city `owner`: the session name lowercased,
 * every other character turned into `-`, cut so that `-<10 hex>` of sha256(owner, name) fits
 * in 63. The hash is always present, so two cities sharing a namespace, or names differing
 * only in case or in `.`/`_`/`-`, never collide.
 */
export function podName(owner: string, name: string): string {
  const hash = shortHash(10, owner, name);
  const stem = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, MAX_LABEL - hash.length - 1)
    .replace(/^-+|-+$/g, "");
  return stem ? `${stem}-${hash}` : `s-${hash}`;
}

/**
 * A label value for `v`: `v` itself when it is a valid label value, else its valid
 * characters cut to fit with `-<10 hex>` of its hash (never equal to another input's value).
 */
export function labelValue(v: string): string {
  if (isLabelValue(v) && !/-h[0-9a-f]{10}$/.test(v)) return v;
  const hash = shortHash(10, v);
  const stem = v
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .slice(0, MAX_LABEL - hash.length - 2)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  return stem ? `${stem}-h${hash}` : `h${hash}`;
}

/**
 * The annotation key holding metadata key `key` (a valid gc metadata key): the key itself
 * under `meta.gc.dev/` when it is a valid annotation name, else `x--<hash>` (keys that
 * start with `x--` are always hashed, so the two forms never meet).
 */
export function metaAnnotation(key: string): string {
  const plain = key.length <= MAX_LABEL && LABEL_VALUE.test(key) && !key.startsWith("x--");
  return `${ANNOTATIONS.metaPrefix}${plain ? key : `x--${shortHash(40, key)}`}`;
}

/** A Secret data key for env var `name`: the name when valid (`[-._a-zA-Z0-9]+`), else `env-<hash>`. */
export function secretDataKey(name: string): string {
  return /^[-._a-zA-Z0-9]+$/.test(name) && name.length <= 253 ? name : `env-${shortHash(16, name)}`;
}

/** `k=v,k2=v2` for a label selector (values are valid label values). */
export function selector(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}
