/**
 * Which providers `gc conformance` can test, and how to build each one's target. Targets
 * are imported lazily so testing one provider never loads another's dependencies.
 */
import { UsageError } from "../internal/runtime/errors.js";
import type { ConformanceTarget } from "./harness.js";

/** Provider specs `gc conformance` accepts (exec takes a script path). */
export const KNOWN_PROVIDERS: readonly string[] = ["fake"];

/**
 * Builds the conformance target for `spec`.
 * @throws UsageError listing the known providers when `spec` is not one of them.
 */
export async function createTarget(spec: string): Promise<ConformanceTarget> {
  switch (spec) {
    case "fake":
      return (await import("./targets/fake.js")).createFakeTarget();
    default:
      throw new UsageError(
        `unknown provider ${JSON.stringify(spec)}; known providers: ${KNOWN_PROVIDERS.join(", ")}`,
      );
  }
}
