/**
 * Which providers `gc conformance` can test, and how to build each one's target: both come
 * from the provider registry (internal/runtime/registry.ts). Each `targets/<provider>.ts`
 * module exports `createTarget(arg?: string)`; it is imported lazily so testing one provider
 * never loads another's dependencies.
 */
import { conformanceProviders, createConformanceTarget } from "../internal/runtime/registry.js";
import type { ConformanceTarget } from "./harness.js";

/** Provider specs `gc conformance` accepts (exec takes a script path). */
export const KNOWN_PROVIDERS: readonly string[] = conformanceProviders();

/**
 * Builds the conformance target for `spec` (`fake`, `tmux`, `subprocess`, `exec:PATH`).
 * @throws UsageError listing the known providers when `spec` is not one of them.
 */
export function createTarget(spec: string): Promise<ConformanceTarget> {
  return createConformanceTarget(spec);
}
