/**
 * Shared fixtures for the subprocess provider tests: a temp city (state dir + work dirs)
 * whose cleanup stops every session and kills every holder still serving it, even when the
 * test failed half way.
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { killPids } from "../../../internal/proc/kill.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import {
  SubprocessProvider,
  type SubprocessProviderOptions,
} from "../../../internal/runtime/subprocess/index.js";
import { fallbackSocketDir, providerRoot } from "../../../internal/runtime/subprocess/layout.js";

/** The built provider module, for child processes that must run it outside vitest. */
export const DIST_INDEX = fileURLToPath(
  new URL("../../../dist/internal/runtime/subprocess/index.js", import.meta.url),
);

/** Pids of holder processes whose command line mentions `root`. */
export async function holdersUnder(root: string): Promise<number[]> {
  const out: number[] = [];
  for (const e of await readdir("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const args = (await readFile(`/proc/${e}/cmdline`, "utf8")).split("\0");
      if (args.some((a) => a.endsWith("holder.js")) && args.some((a) => a.startsWith(root)))
        out.push(Number(e));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

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

let n = 0;

/** Creates a temp city. `stateDir` may be overridden (e.g. a very long path). */
export async function makeCity(opts: { stateDir?: (root: string) => string } = {}): Promise<TestCity> {
  const root = await mkdtemp(join(tmpdir(), "gc-spt-"));
  const stateDir = opts.stateDir ? opts.stateDir(root) : join(root, "state");
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const city = "test-city";
  const make = (extra: Partial<SubprocessProviderOptions> = {}) =>
    new SubprocessProvider({ city, stateDir, ...extra });
  const provider = make();
  return {
    root,
    stateDir,
    city,
    provider,
    fresh: make,
    async config(command, extra) {
      const workDir = join(root, `work-${++n}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {}, ...extra };
    },
    async cleanup() {
      for (const s of await provider.snapshot("").catch(() => []))
        await provider.stop(s.name).catch(() => undefined);
      await killPids(await holdersUnder(root));
      await rm(root, { recursive: true, force: true });
      await rm(fallbackSocketDir(providerRoot(stateDir)), { recursive: true, force: true });
    },
  };
}

/** Polls `fn` until it returns something other than `undefined`/`false` (10 s default). */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}
