/**
 * The k8s provider's settings: the `session.k8s` section of the city file (snake_case, as
 * validated by the config schema) turned into one resolved object with defaults. Pure.
 */
import { ProviderError } from "../../base/errors.js";

/** Requests and limits of the session container (Kubernetes quantities, e.g. `500m`, `1Gi`). */
export interface K8sResources {
  readonly requests?: Readonly<Record<string, string>> | undefined;
  readonly limits?: Readonly<Record<string, string>> | undefined;
}

/** The identity and filesystem settings of the pods' security context. */
export interface K8sSecurity {
  readonly runAsNonRoot: boolean;
  readonly runAsUser: number | undefined;
  readonly runAsGroup: number | undefined;
  readonly fsGroup: number | undefined;
  readonly readOnlyRootFilesystem: boolean;
}

/** Resolved settings. */
export interface K8sSettings {
  /** Namespace; `undefined`: the kubeconfig context's, else `default` (resolved on connecting). */
  readonly namespace: string | undefined;
  /** Container image; required to start a session. */
  readonly image: string | undefined;
  readonly imagePullPolicy: "Always" | "IfNotPresent" | "Never" | undefined;
  readonly serviceAccount: string | undefined;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly resources: K8sResources;
  /** kubeconfig file; default: `$KUBECONFIG`, `~/.kube/config`, or in-cluster. */
  readonly kubeconfig: string | undefined;
  readonly context: string | undefined;
  /**
   * Directory in the pod under which work dirs live: a work dir `<city>/x` becomes
   * `<work_root>/x`; one outside the city becomes `<work_root>/<its base name>`.
   */
  readonly workRoot: string;
  /** How long a pod may take to reach Running before the start fails with the pod's reason. */
  readonly startTimeoutMs: number;
  /** Deadline of each hook (`pre_start`, `session_setup`, …) run in the pod. */
  readonly hookTimeoutMs: number;
  /** Terminal size of the tmux session in the pod. */
  readonly cols: number;
  readonly rows: number;
  /** `terminationGracePeriodSeconds` of the pods, and the grace of gc's deletes. */
  readonly gracePeriodSeconds: number;
  /** Pod security context (PodSecurity `restricted` when `runAsNonRoot`). */
  readonly security: K8sSecurity;
  /** Readiness deadline when `ready_prompt_prefix` is set. */
  readonly readyTimeoutMs: number;
  /** A screen unchanged this long (and not busy) counts as idle. */
  readonly idleQuietMs: number;
}

const DEFAULTS = {
  workRoot: "/workspace",
  startTimeoutMs: 120_000,
  hookTimeoutMs: 30_000,
  cols: 200,
  rows: 50,
  readyTimeoutMs: 60_000,
  idleQuietMs: 600,
  gracePeriodMs: 10_000,
} as const;

const PULL_POLICIES = ["Always", "IfNotPresent", "Never"] as const;
const RESOURCE_KEYS = ["cpu", "memory", "ephemeral-storage"];

function bad(key: string, why: string): ProviderError {
  return new ProviderError("k8s", `session.k8s.${key}: ${why}`);
}

function str(raw: Record<string, unknown>, key: string): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || v === "") throw bad(key, "must be a non-empty string");
  return v;
}

function num(raw: Record<string, unknown>, key: string, fallback: number, min: number): number {
  const v = raw[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min) throw bad(key, `must be a number ≥ ${min}`);
  return v;
}

function bool(raw: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const v = raw[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "boolean") throw bad(key, "must be true or false");
  return v;
}

function id(raw: Record<string, unknown>, key: string): number | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw bad(key, "must be an integer ≥ 0");
  return v;
}

function stringMap(
  raw: Record<string, unknown>,
  key: string,
  allowed?: readonly string[],
  path = key,
): Record<string, string> {
  const v = raw[key];
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) throw bad(path, "must be a map of strings");
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (typeof x !== "string" || x === "") throw bad(`${path}.${k}`, "must be a non-empty string");
    if (allowed && !allowed.includes(k))
      throw bad(`${path}.${k}`, `unknown resource; use ${allowed.join(", ")}`);
    out[k] = x;
  }
  return out;
}

/**
 * Resolves `session.k8s` (already schema-checked by config loading; checked again here so a
 * programmatic caller gets a clear error too).
 * @throws ProviderError naming the bad key.
 */
export function resolveSettings(raw: Readonly<Record<string, unknown>> = {}): K8sSettings {
  const r = raw as Record<string, unknown>;
  const pull = str(r, "image_pull_policy");
  if (pull !== undefined && !(PULL_POLICIES as readonly string[]).includes(pull)) {
    throw bad("image_pull_policy", `must be one of ${PULL_POLICIES.join(", ")}`);
  }
  const res = r.resources;
  if (res !== undefined && (typeof res !== "object" || res === null || Array.isArray(res))) {
    throw bad("resources", "must be a map with requests and/or limits");
  }
  const resRaw = (res ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(resRaw)) {
    if (k !== "requests" && k !== "limits") throw bad(`resources.${k}`, "unknown key; use requests, limits");
  }
  const requests = stringMap(resRaw, "requests", RESOURCE_KEYS, "resources.requests");
  const limits = stringMap(resRaw, "limits", RESOURCE_KEYS, "resources.limits");
  const workRoot = str(r, "work_root") ?? DEFAULTS.workRoot;
  if (!workRoot.startsWith("/")) throw bad("work_root", "must be an absolute path");
  return {
    namespace: str(r, "namespace"),
    image: str(r, "image"),
    imagePullPolicy: pull as K8sSettings["imagePullPolicy"],
    serviceAccount: str(r, "service_account"),
    nodeSelector: stringMap(r, "node_selector"),
    resources: {
      ...(Object.keys(requests).length ? { requests } : {}),
      ...(Object.keys(limits).length ? { limits } : {}),
    },
    kubeconfig: str(r, "kubeconfig"),
    context: str(r, "context"),
    workRoot: workRoot.length > 1 ? workRoot.replace(/\/+$/, "") : workRoot,
    startTimeoutMs: num(r, "start_timeout", DEFAULTS.startTimeoutMs, 1),
    hookTimeoutMs: num(r, "hook_timeout", DEFAULTS.hookTimeoutMs, 1),
    cols: DEFAULTS.cols,
    rows: DEFAULTS.rows,
    readyTimeoutMs: num(r, "ready_timeout", DEFAULTS.readyTimeoutMs, 0),
    gracePeriodSeconds: Math.ceil(num(r, "grace_period", DEFAULTS.gracePeriodMs, 0) / 1000),
    security: {
      runAsNonRoot: bool(r, "run_as_non_root", true),
      runAsUser: id(r, "run_as_user"),
      runAsGroup: id(r, "run_as_group"),
      fsGroup: id(r, "fs_group"),
      readOnlyRootFilesystem: bool(r, "read_only_root_filesystem", false),
    },
    idleQuietMs: DEFAULTS.idleQuietMs,
  };
}
