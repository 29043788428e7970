/**
 * Staging of `overlay_dir` and `copy_files` into a work dir on this host: the one
 * implementation every local backend uses. A missing or unreadable source fails the start
 * with a {@link ProviderError} naming it, on every provider alike.
 */
import { statSync } from "node:fs";
import { cp, mkdir, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve } from "node:path";
import { describeError, InvalidNameError, ProviderError } from "../../base/errors.js";
import type { StartPlan } from "./backend.js";

/**
 * Copies the overlay directory's contents, then each `copy_files` entry, into
 * `plan.workDir` (overwriting). Relative sources resolve against `plan.sourceDir`.
 * @throws ProviderError (GC_PROVIDER) naming the source that is missing or unreadable.
 * @throws InvalidNameError when a destination would leave the work dir.
 */
export async function stageLocal(provider: string, plan: StartPlan): Promise<void> {
  const { config, workDir, sourceDir: baseDir } = plan;
  // Usually there already: one stat on this thread is cheaper than a thread-pool mkdir.
  if (!isDirectory(workDir)) await mkdir(workDir, { recursive: true });
  if (config.overlayDir) {
    const src = resolve(baseDir, config.overlayDir);
    try {
      if (!(await stat(src)).isDirectory()) throw new Error("not a directory");
      await cp(src, workDir, { recursive: true, force: true });
    } catch (e) {
      throw new ProviderError(provider, `overlay_dir ${src}: ${describeError(e)}`, { cause: e });
    }
  }
  for (const entry of config.copyFiles ?? []) {
    const src = resolve(baseDir, entry.src);
    let isDir: boolean;
    try {
      isDir = (await stat(src)).isDirectory();
    } catch (e) {
      throw new ProviderError(provider, `copy_files ${src}: ${describeError(e)}`, { cause: e });
    }
    const dst = destinationIn(workDir, entry.relDst, isDir ? "." : basename(src));
    try {
      await mkdir(dirname(dst), { recursive: true });
      await cp(src, dst, { recursive: true, force: true });
    } catch (e) {
      throw new ProviderError(provider, `copy_files ${src}: ${describeError(e)}`, { cause: e });
    }
  }
}

/** True when `path` is a directory now. */
function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

/**
 * Checks that `overlay_dir` and every `copy_files` source exist (relative ones against
 * `plan.sourceDir`), before anything of the start runs — whoever does the copying.
 * @throws ProviderError (GC_PROVIDER) naming the first missing source.
 */
export async function checkStageSources(provider: string, plan: StartPlan): Promise<void> {
  const baseDir = plan.sourceDir;
  const { config } = plan;
  const sources = [
    ...(config.overlayDir ? [["overlay_dir", config.overlayDir] as const] : []),
    ...(config.copyFiles ?? []).map((c) => ["copy_files", c.src] as const),
  ];
  for (const [what, rel] of sources) {
    const src = resolve(baseDir, rel);
    try {
      const st = await stat(src);
      if (what === "overlay_dir" && !st.isDirectory()) throw new Error("not a directory");
    } catch (e) {
      throw new ProviderError(provider, `${what} ${src}: ${describeError(e)}`, { cause: e });
    }
  }
}

/**
 * `relDst` (or `fallback` when empty) under `root`, absolute.
 * @throws InvalidNameError when it would leave `root`.
 */
export function destinationIn(root: string, relDst: string, fallback: string): string {
  const dst = resolve(root, relDst || fallback);
  const rel = relative(root, dst);
  if (rel.startsWith("..") || isAbsolute(rel)) {
    throw new InvalidNameError("copy destination", relDst, "must stay inside the work dir");
  }
  return dst;
}

/** Copies `src` (file or directory) to `relDst` under `root` (empty: its own name). */
export async function copyInto(src: string, root: string, relDst: string): Promise<void> {
  const dst = destinationIn(root, relDst, (await stat(src)).isDirectory() ? "." : basename(src));
  await mkdir(dirname(dst), { recursive: true });
  await cp(src, dst, { recursive: true, force: true });
}
