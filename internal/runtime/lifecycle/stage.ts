/**
 * Staging of `overlay_dir` and `copy_files` into a work dir on this host: the one
 * implementation every local backend uses. A missing or unreadable source fails the start
 * with a {@link ProviderError} naming it, on every provider alike.
 */
import { cp, mkdir, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve } from "node:path";
import { describeError, InvalidNameError, ProviderError } from "../errors.js";
import type { StartPlan } from "./backend.js";

/**
 * Copies the overlay directory's contents, then each `copy_files` entry, into
 * `plan.workDir` (overwriting). Relative sources resolve against `baseDir`.
 * @throws ProviderError (GC_PROVIDER) naming the source that is missing or unreadable.
 * @throws InvalidNameError when a destination would leave the work dir.
 */
export async function stageLocal(provider: string, plan: StartPlan, baseDir: string): Promise<void> {
  const { config, workDir } = plan;
  await mkdir(workDir, { recursive: true });
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
    const dst = resolve(workDir, entry.relDst || (isDir ? "." : basename(src)));
    const rel = relative(workDir, dst);
    if (rel.startsWith("..") || isAbsolute(rel)) {
      throw new InvalidNameError("copy destination", entry.relDst, "must stay inside the work dir");
    }
    try {
      await mkdir(dirname(dst), { recursive: true });
      await cp(src, dst, { recursive: true, force: true });
    } catch (e) {
      throw new ProviderError(provider, `copy_files ${src}: ${describeError(e)}`, { cause: e });
    }
  }
}
