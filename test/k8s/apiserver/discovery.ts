/**
 * Discovery and OpenAPI documents (client-go `discovery/aggregated_discovery.go` rules: the
 * response Content-Type selects the aggregated parser; a resource without `responseKind` is
 * dropped). Pure.
 */
import { GROUPS, RESOURCES, type ResourceDef } from "./resources.js";

const inGroup = (group: string) => RESOURCES.filter((r) => r.group === group);

/** Content-Type of an aggregated discovery answer. */
export const AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** `GET /version`. */
export const VERSION = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.4",
  gitCommit: "59526cd4867447956156ae3a602fcbac5b7c5f4b",
  gitTreeState: "clean",
  buildDate: "2025-04-22T16:02:27Z",
  goVersion: "go1.23.6",
  compiler: "gc",
  platform: "linux/amd64",
};

/** True when the client accepts aggregated discovery. */
export function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? "").includes("as=APIGroupDiscoveryList");
}

/** Aggregated `/api`. */
export function aggregatedApi(): object {
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: [
      {
        metadata: { creationTimestamp: null },
        versions: [
          {
            version: "v1",
            freshness: "Current",
            resources: inGroup("").map(discoveryResource),
          },
        ],
      },
    ],
  };
}

/** One resource of an aggregated discovery document. */
function discoveryResource(r: ResourceDef): object {
  return {
    resource: r.resource,
    responseKind: { group: r.group, version: "v1", kind: r.kind },
    scope: r.namespaced ? "Namespaced" : "Cluster",
    singularResource: r.singular,
    verbs: r.verbs,
    ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
    ...(r.resource === "pods" ? { categories: ["all"] } : {}),
    ...(r.subresources.length
      ? {
          subresources: r.subresources.map((s) => ({
            subresource: s.name,
            responseKind: { group: r.group, version: "v1", kind: s.kind },
            verbs: s.verbs,
          })),
        }
      : {}),
  };
}

/** Aggregated `/apis`: the served groups (coordination.k8s.io). */
export function aggregatedApis(): object {
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: GROUPS.map((g) => ({
      metadata: { name: g, creationTimestamp: null },
      versions: [{ version: "v1", freshness: "Current", resources: inGroup(g).map(discoveryResource) }],
    })),
  };
}

/** Legacy `/apis/<group>`. */
export function apiGroup(group: string): object {
  const v = { groupVersion: `${group}/v1`, version: "v1" };
  return { kind: "APIGroup", apiVersion: "v1", name: group, versions: [v], preferredVersion: v };
}

/** Legacy `/api`. */
export function legacyApi(hostPort: string): object {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: hostPort }],
  };
}

/** Legacy `/apis`. */
export function legacyApis(): object {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: GROUPS.map((g) => {
      const { kind: _k, apiVersion: _a, ...rest } = apiGroup(g) as Record<string, unknown>;
      return rest;
    }),
  };
}

/**
 * `/api/v1` (group "") or `/apis/<group>/v1`: resources first, then their subresources
 * (KubernetesObjectApi takes the first kind match).
 */
export function apiResourceList(group = ""): object {
  const resources: object[] = [];
  const served = inGroup(group);
  for (const r of served) {
    resources.push({
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
      ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
      ...(r.resource === "pods" ? { categories: ["all"] } : {}),
    });
  }
  for (const r of served) {
    for (const s of r.subresources) {
      resources.push({
        name: `${r.resource}/${s.name}`,
        singularName: "",
        namespaced: r.namespaced,
        kind: s.kind,
        verbs: s.verbs,
      });
    }
  }
  return { kind: "APIResourceList", groupVersion: group ? `${group}/v1` : "v1", resources };
}

const OPENAPI_HASH = "LOOPBACK0000000000000000000000000000000000000000000000000000000000";

/** `GET /openapi/v3`. */
export function openApiIndex(): object {
  const paths: Record<string, object> = {
    "api/v1": { serverRelativeURL: `/openapi/v3/api/v1?hash=${OPENAPI_HASH}` },
  };
  for (const g of GROUPS)
    paths[`apis/${g}/v1`] = { serverRelativeURL: `/openapi/v3/apis/${g}/v1?hash=${OPENAPI_HASH}` };
  return { paths };
}

/**
 * `GET /openapi/v3/api/v1`: one PATCH operation per kind carrying its GVK and the
 * `fieldValidation` parameter, which is what kubectl looks for before trusting server-side
 * field validation (cli-runtime `query_param_verifier_v3.go`).
 */
export function openApiV1(group = ""): object {
  const paths: Record<string, object> = {};
  const base = group ? `/apis/${group}/v1` : "/api/v1";
  for (const r of inGroup(group)) {
    const path = r.namespaced
      ? `${base}/namespaces/{namespace}/${r.resource}/{name}`
      : `${base}/${r.resource}/{name}`;
    paths[path] = {
      patch: {
        "x-kubernetes-group-version-kind": { group, version: "v1", kind: r.kind },
        parameters: [
          { name: "fieldValidation", in: "query", schema: { type: "string" } },
          { name: "fieldManager", in: "query", schema: { type: "string" } },
          { name: "dryRun", in: "query", schema: { type: "string" } },
        ],
        responses: { "200": { description: "OK" } },
      },
    };
  }
  return { openapi: "3.0.0", info: { title: "Kubernetes", version: "v1.32.4" }, paths };
}
