/**
 * Discovery and OpenAPI documents (client-go `discovery/aggregated_discovery.go` rules: the
 * response Content-Type selects the aggregated parser; a resource without `responseKind` is
 * dropped). Pure.
 */
import { RESOURCES } from "./resources.js";

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
            resources: RESOURCES.map((r) => ({
              resource: r.resource,
              responseKind: { group: "", version: "v1", kind: r.kind },
              scope: r.namespaced ? "Namespaced" : "Cluster",
              singularResource: r.singular,
              verbs: r.verbs,
              ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
              ...(r.resource === "pods" ? { categories: ["all"] } : {}),
              ...(r.subresources.length
                ? {
                    subresources: r.subresources.map((s) => ({
                      subresource: s.name,
                      responseKind: { group: "", version: "v1", kind: s.kind },
                      verbs: s.verbs,
                    })),
                  }
                : {}),
            })),
          },
        ],
      },
    ],
  };
}

/** Aggregated `/apis` (no groups). */
export function aggregatedApis(): object {
  return { kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2", metadata: {}, items: [] };
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
  return { kind: "APIGroupList", apiVersion: "v1", groups: [] };
}

/** `/api/v1`: resources first, then their subresources (KubernetesObjectApi takes the first kind match). */
export function apiResourceList(): object {
  const resources: object[] = [];
  for (const r of RESOURCES) {
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
  for (const r of RESOURCES) {
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
  return { kind: "APIResourceList", groupVersion: "v1", resources };
}

const OPENAPI_HASH = "LOOPBACK0000000000000000000000000000000000000000000000000000000000";

/** `GET /openapi/v3`. */
export function openApiIndex(): object {
  return { paths: { "api/v1": { serverRelativeURL: `/openapi/v3/api/v1?hash=${OPENAPI_HASH}` } } };
}

/**
 * `GET /openapi/v3/api/v1`: one PATCH operation per kind carrying its GVK and the
 * `fieldValidation` parameter, which is what kubectl looks for before trusting server-side
 * field validation (cli-runtime `query_param_verifier_v3.go`).
 */
export function openApiV1(): object {
  const paths: Record<string, object> = {};
  for (const r of RESOURCES) {
    const path = r.namespaced
      ? `/api/v1/namespaces/{namespace}/${r.resource}/{name}`
      : `/api/v1/${r.resource}/{name}`;
    paths[path] = {
      patch: {
        "x-kubernetes-group-version-kind": { group: "", version: "v1", kind: r.kind },
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
