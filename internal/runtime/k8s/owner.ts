/**
 * One object per city that owns the city's fleet: a ConfigMap `gc-city-<hash>` in the
 * session namespace, carrying the city's labels and its exact identity. Every pod and Secret
 * gc creates names it in `metadata.ownerReferences`, so deleting it (`kubectl delete cm
 * gc-city-…`) has the cluster's garbage collector remove the whole fleet, and an abandoned
 * fleet can be found and removed as one object.
 */
import type * as K8s from "@kubernetes/client-node";
import { apiFailure, httpStatus, type KubeApi } from "./api.js";
import { ANNOTATIONS, shortHash } from "./names.js";
import { cityLabels } from "./spec.js";

/** Name of the city object of `owner` (the city's identity). Pure. */
export function cityObjectName(owner: string): string {
  return `gc-city-${shortHash(10, owner)}`;
}

/** The city object's manifest. Pure. */
export function buildCityObject(owner: string, namespace: string): K8s.V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: cityObjectName(owner),
      namespace,
      labels: cityLabels(owner),
      annotations: { [ANNOTATIONS.city]: owner },
    },
    data: { city: owner },
  };
}

/** An owner reference to the city object. */
export interface CityOwnerRef {
  readonly apiVersion: "v1";
  readonly kind: "ConfigMap";
  readonly name: string;
  readonly uid: string;
}

/**
 * The city object of `owner` in `namespace`, created when missing (a concurrent create by
 * another start of the city is read back). One GET per call, plus a POST the first time.
 * @throws ProviderError when the object exists but belongs to another city, or the API fails.
 */
export async function ensureCityObject(
  api: KubeApi,
  namespace: string,
  owner: string,
  signal?: AbortSignal,
): Promise<CityOwnerRef> {
  const name = cityObjectName(owner);
  const read = () =>
    api
      .call((c) => c.readNamespacedConfigMap({ name, namespace }), signal)
      .catch((e: unknown) => {
        if (httpStatus(e) === 404) return undefined;
        throw apiFailure(`reading the city object ${name}`, e);
      });
  let cm = await read();
  if (!cm) {
    try {
      cm = await api.call(
        (c) => c.createNamespacedConfigMap({ namespace, body: buildCityObject(owner, namespace) }),
        signal,
      );
    } catch (e) {
      if (httpStatus(e) !== 409) throw apiFailure(`creating the city object ${name}`, e);
      cm = await read();
    }
  }
  if (!cm?.metadata?.uid) throw apiFailure(`reading the city object ${name}`, new Error("it vanished"));
  if (cm.metadata.annotations?.[ANNOTATIONS.city] !== owner) {
    throw apiFailure(`the city object ${name}`, new Error("it belongs to another city"));
  }
  return { apiVersion: "v1", kind: "ConfigMap", name, uid: cm.metadata.uid };
}
