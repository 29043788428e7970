/**
 * A temporary city directory for the holder-based providers (subprocess, acp), shared by
 * their conformance targets and their own tests: a root with a private state dir, fresh work
 * dirs under it, and a teardown that stops every session of the given providers, kills any
 * holder still serving the root (even when a test failed half way), and removes the root and
 * the providers' fallback socket directories.
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killPids } from "../internal/proc/kill.js";
import { fallbackSocketDir } from "../internal/runtime/subprocess/layout.js";
import type { SubprocessProvider } from "../internal/runtime/subprocess/provider.js";

/** Pids of holder processes whose command line mentions a path under `root`. */
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

/** What the teardown uses of a holder-based provider (SubprocessProvider, AcpProvider). */
export type HeldProvider = Pick<SubprocessProvider, "snapshot" | "stop" | "root">;

/** A temp city directory; see {@link makeHolderDir}. */
export interface HolderDir {
  readonly root: string;
  /** The providers' state dir (mode 0700). */
  readonly stateDir: string;
  /** A new, empty directory under the root: `<prefix>-<n>`. */
  workDir(prefix?: string): Promise<string>;
  /**
   * Stops every session of `providers` (errors ignored), kills holders still serving the
   * root, removes the root and each provider's fallback socket directory. Never rejects for
   * a session that is already gone.
   */
  teardown(providers: readonly HeldProvider[]): Promise<void>;
}

/**
 * Creates `<tmpdir>/<tmpPrefix>XXXXXX` with the state dir `<root>/state`, or the path
 * `stateDir(root)` returns (e.g. a very long one).
 */
export async function makeHolderDir(
  tmpPrefix: string,
  stateDir?: (root: string) => string,
): Promise<HolderDir> {
  const root = await mkdtemp(join(tmpdir(), tmpPrefix));
  const state = stateDir ? stateDir(root) : join(root, "state");
  await mkdir(state, { recursive: true, mode: 0o700 });
  let dirs = 0;
  return {
    root,
    stateDir: state,
    async workDir(prefix = "work") {
      const dir = join(root, `${prefix}-${++dirs}`);
      await mkdir(dir, { recursive: true });
      return dir;
    },
    async teardown(providers) {
      for (const p of providers) {
        for (const s of await p.snapshot("").catch(() => [])) await p.stop(s.name).catch(() => undefined);
      }
      await killPids(await holdersUnder(root));
      await rm(root, { recursive: true, force: true });
      for (const p of providers) await rm(fallbackSocketDir(p.root), { recursive: true, force: true });
    },
  };
}
