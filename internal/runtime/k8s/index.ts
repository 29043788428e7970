/**
 * The k8s provider's public surface: {@link createProvider} for the composition root and
 * `gc conformance`. `@kubernetes/client-node` loads on the first API call, never on import
 * of the composition root.
 */
import type { ProviderFactoryOptions } from "../factory.js";
import { K8sProvider } from "./provider.js";

export { connect, KubeApi, withRetry } from "./api.js";
export { LABELS, labelValue, metaAnnotation, podName } from "./names.js";
export { buildCityObject, cityObjectName, ensureCityObject } from "./owner.js";
export { K8sProvider, type K8sProviderOptions } from "./provider.js";
export { type K8sSettings, resolveSettings } from "./settings.js";
export { buildPod, buildSecret, cityLabels, podState, podWorkDir, sessionLabels } from "./spec.js";

/**
 * Builds the k8s provider for a city. Connects on the first operation.
 * @throws ProviderError for invalid settings.
 */
export function createProvider(opts: ProviderFactoryOptions): K8sProvider {
  return new K8sProvider(opts);
}
