/**
 * Which providers `gc conformance` can test, and how to build each one's target. Each
 * `targets/<provider>.js` module exports `createTarget(arg?: string)`; it is imported lazily
 * so testing one provider never loads another's dependencies.
 */
import { UsageError } from "../internal/runtime/errors.js";
import type { ConformanceTarget } from "./harness.js";

/** Provider specs `gc conformance` accepts (exec takes a script path). */
export const KNOWN_PROVIDERS: readonly string[] = ["fake", "tmux", "subprocess", "docker", "exec:<script>"];

interface TargetModule {
  createTarget(arg?: string): Promise<ConformanceTarget>;
}

/**
 * Builds the conformance target for `spec` (`fake`, `tmux`, `subprocess`, `exec:PATH`).
 * @throws UsageError listing the known providers when `spec` is not one of them.
 */
export async function createTarget(spec: string): Promise<ConformanceTarget> {
  const colon = spec.indexOf(":");
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const arg = colon < 0 ? undefined : spec.slice(colon + 1);
  const known = KNOWN_PROVIDERS.map((k) => k.split(":")[0]);
  if (!known.includes(kind) || (kind === "exec") !== (arg !== undefined) || arg === "") {
    throw new UsageError(
      `unknown provider ${JSON.stringify(spec)}; known providers: ${KNOWN_PROVIDERS.join(", ")}`,
    );
  }
  const mod = (await import(`./targets/${kind}.js`)) as TargetModule;
  return mod.createTarget(arg);
}
