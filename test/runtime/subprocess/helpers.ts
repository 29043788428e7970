/**
 * Shared fixtures for the subprocess provider tests: a temp city (state dir + work dirs)
 * whose cleanup stops every session and kills every holder still serving it, even when the
 * test failed half way.
 */
import { fileURLToPath } from "node:url";
import { makeHolderDir } from "../../../conformance/holder-dir.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import {
  SubprocessProvider,
  type SubprocessProviderOptions,
} from "../../../internal/runtime/subprocess/index.js";

export { holdersUnder } from "../../../conformance/holder-dir.js";

/** The built provider module, for child processes that must run it outside vitest. */
export const DIST_INDEX = fileURLToPath(
  new URL("../../../dist/internal/runtime/subprocess/index.js", import.meta.url),
);

/** A temp city for one test file. */
export interface TestCity {
  readonly root: string;
  readonly stateDir: string;
  readonly city: string;
  readonly provider: SubprocessProvider;
  /** Another provider instance over the same state dir (a "restarted controller"). */
  fresh(extra?: Partial<SubprocessProviderOptions>): SubprocessProvider;
  /** A config running `command` in a new work dir. */
  config(command: string, extra?: Partial<StartConfig>): Promise<StartConfig>;
  /** Stops everything and removes the temp dir. */
  cleanup(): Promise<void>;
}

/**
 * Creates a temp city. `stateDir` may be overridden (e.g. a very long path); `options` are
 * every provider's (the city's and {@link TestCity.fresh}'s).
 */
export async function makeCity(
  opts: { stateDir?: (root: string) => string; options?: Partial<SubprocessProviderOptions> } = {},
): Promise<TestCity> {
  const dir = await makeHolderDir("gc-spt-", opts.stateDir);
  const city = "test-city";
  const make = (extra: Partial<SubprocessProviderOptions> = {}) =>
    new SubprocessProvider({ city, stateDir: dir.stateDir, ...opts.options, ...extra });
  const provider = make();
  return {
    root: dir.root,
    stateDir: dir.stateDir,
    city,
    provider,
    fresh: make,
    async config(command, extra) {
      return { command, workDir: await dir.workDir(), env: {}, ...extra };
    },
    cleanup: () => dir.teardown([provider]),
  };
}

export { until } from "../../support/until.js";
