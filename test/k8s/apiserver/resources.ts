/**
 * The core/v1 resources this server serves: names, discovery data, supported field selectors,
 * defaulting and validation (the subset of `pkg/apis/core/validation` that clients trip over:
 * names, labels, required container fields, immutable pod spec).
 */
import { randomUUID } from "node:crypto";
import type { FieldGetters, KObject } from "./selectors.js";
import { invalid, type StatusCause } from "./status.js";

/** One served resource. */
export interface ResourceDef {
  /** API group ("" for core). */
  readonly group: string;
  readonly resource: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly verbs: readonly string[];
  readonly subresources: readonly { name: string; kind: string; verbs: readonly string[] }[];
  readonly fields: FieldGetters;
}

const CRUD = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const meta: FieldGetters = {
  "metadata.name": (o) => o.metadata.name ?? "",
  "metadata.namespace": (o) => o.metadata.namespace ?? "",
};
const str = (v: unknown) => (v === undefined || v === null ? "" : String(v));
const spec = (o: KObject) => (o.spec ?? {}) as Record<string, unknown>;
const status = (o: KObject) => (o.status ?? {}) as Record<string, unknown>;

/** `apiVersion` of `def`'s objects (`v1`, `coordination.k8s.io/v1`). */
export function apiVersionOf(def: Pick<ResourceDef, "group">): string {
  return def.group ? `${def.group}/v1` : "v1";
}

/** Served resources, pods first (client-node's KubernetesObjectApi takes the first `kind` match). */
export const RESOURCES: readonly ResourceDef[] = [
  {
    group: "",
    resource: "pods",
    singular: "pod",
    kind: "Pod",
    namespaced: true,
    shortNames: ["po"],
    verbs: CRUD,
    subresources: [
      { name: "attach", kind: "PodAttachOptions", verbs: ["create", "get"] },
      { name: "exec", kind: "PodExecOptions", verbs: ["create", "get"] },
      { name: "log", kind: "Pod", verbs: ["get"] },
      { name: "status", kind: "Pod", verbs: ["get", "patch", "update"] },
    ],
    fields: {
      ...meta,
      "spec.nodeName": (o) => str(spec(o).nodeName),
      "spec.restartPolicy": (o) => str(spec(o).restartPolicy),
      "spec.schedulerName": (o) => str(spec(o).schedulerName),
      "spec.serviceAccountName": (o) => str(spec(o).serviceAccountName),
      "spec.hostNetwork": (o) => String(spec(o).hostNetwork === true),
      "status.phase": (o) => str(status(o).phase),
      "status.podIP": (o) => str(status(o).podIP),
      "status.podIPs": (o) => str(status(o).podIP),
      "status.nominatedNodeName": (o) => str(status(o).nominatedNodeName),
    },
  },
  {
    group: "",
    resource: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    namespaced: false,
    shortNames: ["ns"],
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    subresources: [{ name: "status", kind: "Namespace", verbs: ["get", "patch", "update"] }],
    fields: { ...meta, "status.phase": (o) => str(status(o).phase) },
  },
  {
    group: "",
    resource: "secrets",
    singular: "secret",
    kind: "Secret",
    namespaced: true,
    shortNames: [],
    verbs: CRUD,
    subresources: [],
    fields: { ...meta, type: (o) => str(o.type) },
  },
  {
    group: "",
    resource: "configmaps",
    singular: "configmap",
    kind: "ConfigMap",
    namespaced: true,
    shortNames: ["cm"],
    verbs: CRUD,
    subresources: [],
    fields: meta,
  },
  {
    group: "",
    resource: "serviceaccounts",
    singular: "serviceaccount",
    kind: "ServiceAccount",
    namespaced: true,
    shortNames: ["sa"],
    verbs: CRUD,
    subresources: [],
    fields: meta,
  },
  {
    group: "coordination.k8s.io",
    resource: "leases",
    singular: "lease",
    kind: "Lease",
    namespaced: true,
    shortNames: [],
    verbs: CRUD,
    subresources: [],
    fields: meta,
  },
];

/** The API groups served besides core. */
export const GROUPS: readonly string[] = [...new Set(RESOURCES.map((r) => r.group).filter(Boolean))];

/** The definition of `resource` in `group` (default core), if served. */
export function resourceDef(resource: string, group = ""): ResourceDef | undefined {
  return RESOURCES.find((r) => r.resource === resource && r.group === group);
}

/** RFC 3339 UTC, whole seconds, as Kubernetes writes timestamps. */
export function now(offsetMs = 0): string {
  return new Date(Math.floor((Date.now() + offsetMs) / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

function checkName(name: string | undefined, dnsLabel: boolean, causes: StatusCause[]): void {
  if (!name) {
    causes.push({
      reason: "FieldValueRequired",
      message: "Required value: name or generateName is required",
      field: "metadata.name",
    });
    return;
  }
  const max = dnsLabel ? 63 : 253;
  const re = dnsLabel ? DNS_LABEL : DNS_SUBDOMAIN;
  if (name.length > max || !re.test(name)) {
    causes.push({
      reason: "FieldValueInvalid",
      message: `Invalid value: "${name}": a lowercase RFC 1123 ${dnsLabel ? "label" : "subdomain"} must consist of lower case alphanumeric characters, '-'${dnsLabel ? "" : " or '.'"}, and must start and end with an alphanumeric character${name.length > max ? ` (must be no more than ${max} characters)` : ""}`,
      field: "metadata.name",
    });
  }
}

function checkQualifiedKey(key: string, field: string, causes: StatusCause[]): void {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const okPrefix = prefix === undefined || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix));
  if (!okPrefix || name.length === 0 || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    causes.push({
      reason: "FieldValueInvalid",
      message: `Invalid value: "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (max 63 characters), with an optional DNS subdomain prefix and '/'`,
      field,
    });
  }
}

/** Validates metadata shared by every kind (name, labels, annotations). */
function validateMeta(def: ResourceDef, obj: KObject, causes: StatusCause[]): void {
  checkName(obj.metadata.name, def.resource === "namespaces", causes);
  for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) {
    checkQualifiedKey(k, "metadata.labels", causes);
    if (typeof v !== "string" || v.length > 63 || !LABEL_VALUE.test(v)) {
      causes.push({
        reason: "FieldValueInvalid",
        message: `Invalid value: "${String(v)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (max 63 characters)`,
        field: "metadata.labels",
      });
    }
  }
  let size = 0;
  for (const [k, v] of Object.entries(obj.metadata.annotations ?? {})) {
    checkQualifiedKey(k, "metadata.annotations", causes);
    size += k.length + String(v).length;
  }
  if (size > 256 * 1024) {
    causes.push({
      reason: "FieldValueTooLong",
      message: "Too long: must have at most 262144 bytes",
      field: "metadata.annotations",
    });
  }
}

type Container = Record<string, unknown> & { name?: string; image?: string };

function validatePodSpec(obj: KObject, causes: StatusCause[]): void {
  const s = spec(obj);
  const containers = (s.containers ?? []) as Container[];
  if (!Array.isArray(containers) || containers.length === 0) {
    causes.push({ reason: "FieldValueRequired", message: "Required value", field: "spec.containers" });
  }
  const seen = new Set<string>();
  const check = (list: Container[], path: string) =>
    list.forEach((c, i) => {
      if (!c.name)
        causes.push({ reason: "FieldValueRequired", message: "Required value", field: `${path}[${i}].name` });
      else if (c.name.length > 63 || !DNS_LABEL.test(c.name)) {
        causes.push({
          reason: "FieldValueInvalid",
          message: `Invalid value: "${c.name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`,
          field: `${path}[${i}].name`,
        });
      } else if (seen.has(c.name)) {
        causes.push({
          reason: "FieldValueDuplicate",
          message: `Duplicate value: "${c.name}"`,
          field: `${path}[${i}].name`,
        });
      } else seen.add(c.name);
      if (!c.image)
        causes.push({
          reason: "FieldValueRequired",
          message: "Required value",
          field: `${path}[${i}].image`,
        });
      const env = (c.env ?? []) as { name?: string }[];
      env.forEach((e, j) => {
        if (!e.name)
          causes.push({
            reason: "FieldValueRequired",
            message: "Required value",
            field: `${path}[${i}].env[${j}].name`,
          });
      });
    });
  if (Array.isArray(containers)) check(containers, "spec.containers");
  check((s.initContainers ?? []) as Container[], "spec.initContainers");
  const rp = s.restartPolicy;
  if (rp !== undefined && !["Always", "OnFailure", "Never"].includes(String(rp))) {
    causes.push({
      reason: "FieldValueNotSupported",
      message: `Unsupported value: "${String(rp)}": supported values: "Always", "OnFailure", "Never"`,
      field: "spec.restartPolicy",
    });
  }
}

/** JSON with object keys sorted at every depth, so equal values compare equal. Pure. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/** Fields of a pod spec that may change after creation (`ValidatePodUpdate`). */
function podSpecChangeAllowed(oldSpec: Record<string, unknown>, newSpec: Record<string, unknown>): boolean {
  const strip = (s: Record<string, unknown>) => {
    const c = structuredClone(s) as Record<string, unknown>;
    for (const list of ["containers", "initContainers"]) {
      for (const ctr of (c[list] ?? []) as Container[]) delete ctr.image;
    }
    delete c.activeDeadlineSeconds;
    delete c.tolerations;
    delete c.nodeName; // set by binding
    return canonicalJson(c);
  };
  return strip(oldSpec) === strip(newSpec);
}

/** Throws 422 when `obj` (new, or replacing `old`) is invalid for `def`. */
export function validate(def: ResourceDef, obj: KObject, old?: KObject): void {
  const causes: StatusCause[] = [];
  validateMeta(def, obj, causes);
  if (old?.metadata.uid !== undefined && obj.metadata.uid !== old.metadata.uid) {
    causes.push({
      reason: "FieldValueInvalid",
      message: `Invalid value: "${String(obj.metadata.uid)}": field is immutable`,
      field: "metadata.uid",
    });
  }
  if (def.resource === "pods") {
    validatePodSpec(obj, causes);
    if (old && !podSpecChangeAllowed(spec(old), spec(obj))) {
      causes.push({
        reason: "FieldValueForbidden",
        message:
          "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        field: "spec",
      });
    }
  }
  if (def.resource === "secrets" || def.resource === "configmaps") {
    const data = (obj.data ?? {}) as Record<string, unknown>;
    let size = 0;
    for (const [k, v] of Object.entries(data)) {
      if (!CONFIG_KEY.test(k) || k.length > 253) {
        causes.push({
          reason: "FieldValueInvalid",
          message: `Invalid value: "${k}": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
          field: `data[${k}]`,
        });
      }
      size += String(v).length;
    }
    if (size > (1024 * 1024 * 4) / 3 + 16) {
      causes.push({
        reason: "FieldValueTooLong",
        message: "Too long: must have at most 1048576 bytes",
        field: "data",
      });
    }
  }
  if (causes.length > 0) throw invalid(def.kind, obj.metadata.name ?? "", causes);
}

const RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** `generateName` suffix: 5 characters from the apiserver's alphabet. */
export function randomSuffix(): string {
  let s = "";
  for (let i = 0; i < 5; i++) s += RANDOM_ALPHABET[Math.floor(Math.random() * RANDOM_ALPHABET.length)];
  return s;
}

function defaultImagePullPolicy(image: string): string {
  const last = image.split("/").pop() ?? image;
  if (image.includes("@")) return "IfNotPresent";
  const tag = last.includes(":") ? last.slice(last.lastIndexOf(":") + 1) : "latest";
  return tag === "latest" ? "Always" : "IfNotPresent";
}

function defaultContainer(c: Container): Container {
  return {
    ...c,
    imagePullPolicy: c.imagePullPolicy ?? defaultImagePullPolicy(String(c.image ?? "")),
    resources: c.resources ?? {},
    terminationMessagePath: c.terminationMessagePath ?? "/dev/termination-log",
    terminationMessagePolicy: c.terminationMessagePolicy ?? "File",
  };
}

/** Server-set fields on create: uid, timestamps, namespace, kind defaults (pods, secrets). */
export function defaultOnCreate(def: ResourceDef, obj: KObject, ns: string | undefined): KObject {
  const out = structuredClone(obj);
  out.apiVersion = apiVersionOf(def);
  out.kind = def.kind;
  out.metadata = { ...out.metadata, uid: randomUUID(), creationTimestamp: now() };
  if (def.namespaced) out.metadata.namespace = ns;
  else delete out.metadata.namespace;
  delete out.metadata.resourceVersion;
  delete out.metadata.deletionTimestamp;
  delete out.metadata.generation;
  if (def.resource === "pods") {
    const s = { ...spec(out) };
    s.containers = ((s.containers ?? []) as Container[]).map(defaultContainer);
    if (s.initContainers) s.initContainers = (s.initContainers as Container[]).map(defaultContainer);
    s.restartPolicy ??= "Always";
    s.terminationGracePeriodSeconds ??= 30;
    s.dnsPolicy ??= "ClusterFirst";
    s.schedulerName ??= "default-scheduler";
    s.serviceAccountName ??= (s.serviceAccount as string | undefined) ?? "default";
    s.serviceAccount = s.serviceAccountName;
    s.securityContext ??= {};
    s.enableServiceLinks ??= true;
    s.preemptionPolicy ??= "PreemptLowerPriority";
    s.priority ??= 0;
    s.tolerations ??= [
      {
        key: "node.kubernetes.io/not-ready",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 300,
      },
      {
        key: "node.kubernetes.io/unreachable",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 300,
      },
    ];
    out.spec = s;
    out.status = { phase: "Pending", qosClass: qosClass(s.containers as Container[]) };
  }
  if (def.resource === "secrets") {
    out.type ??= "Opaque";
  }
  if (def.resource === "namespaces") {
    out.metadata.labels = { ...out.metadata.labels, "kubernetes.io/metadata.name": out.metadata.name! };
    out.spec = { finalizers: ["kubernetes"] };
    out.status = { phase: "Active" };
  }
  return normalizeData(def, out);
}

function qosClass(containers: Container[]): string {
  const res = containers.map((c) => (c.resources ?? {}) as { requests?: object; limits?: object });
  if (res.every((r) => !r.requests && !r.limits)) return "BestEffort";
  return "Burstable";
}

/** Secrets: `stringData` is folded into base64 `data` on every write, as the real server does. */
export function normalizeData(def: ResourceDef, obj: KObject): KObject {
  if (def.resource !== "secrets" || obj.stringData === undefined) return obj;
  const data = { ...((obj.data ?? {}) as Record<string, string>) };
  for (const [k, v] of Object.entries((obj.stringData ?? {}) as Record<string, string>)) {
    data[k] = Buffer.from(String(v), "utf8").toString("base64");
  }
  const { stringData: _, ...rest } = obj;
  return { ...rest, data } as KObject;
}
