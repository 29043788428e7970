/**
 * Which providers `gc conformance` can test, and how to build each one's target. The list
 * comes from the provider registry (internal/runtime/registry/index.ts, entries marked
 * `conformance`); the target of provider `<name>` is the module `targets/<name>.ts`, found by
 * name and imported lazily so testing one provider never loads another's dependencies.
 * Conformance depends on the runtime, never the other way round.
 */
import { UsageError } from "../internal/base/errors.js";
import { conformanceProviders, parseProviderSpec } from "../internal/runtime/registry/index.js";
import type { ConformanceTarget } from "./harness.js";

/** A conformance target module: `targets/<name>.ts`. */
export interface TargetModule {
  createTarget(arg?: string): Promise<ConformanceTarget>;
}

/** Provider specs `gc conformance` accepts (exec takes a script path). */
export const KNOWN_PROVIDERS: readonly string[] = conformanceProviders();

/** The target module of a registry entry marked `conformance` (its file is `targets/<name>.ts`). */
export function loadTargetModule(name: string): Promise<TargetModule> {
  return import(`./targets/${name}.js`) as Promise<TargetModule>;
}

/**
 * Builds the conformance target for `spec` (`fake`, `tmux`, `subprocess`, `exec:PATH`, …).
 * @throws UsageError listing the known providers when `spec` is not one of them.
 */
export async function createTarget(spec: string): Promise<ConformanceTarget> {
  const p = parseProviderSpec(spec);
  if (typeof p === "string" || !p.entry.conformance) {
    throw new UsageError(
      `unknown provider ${JSON.stringify(spec)}; known providers: ${KNOWN_PROVIDERS.join(", ")}`,
    );
  }
  return (await loadTargetModule(p.entry.name)).createTarget(p.arg);
}
