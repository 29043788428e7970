/**
 * The I/O half of fingerprinting: content hashes of the files a start config names
 * (setup script, overlay dir, copy sources). A file that cannot be read hashes to the fixed
 * word `missing`, never to a partial hash, so a transient read error is visible as such.
 * Both functions await the hasher's readiness (xxh.ts) before anything else, so once one of
 * them resolved, the synchronous `fingerprint()` (fingerprint.ts) can hash too.
 */
import { lstat, readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { compareUtf8, type FingerprintFiles } from "./fingerprint.js";
import type { StartConfig } from "./provider.js";
import { xxh, xxhReady } from "./xxh.js";

const MISSING = "missing";

/** xxh64 of a file's bytes or of a directory tree (sorted relative paths + contents). */
export async function hashPathContent(path: string): Promise<string> {
  await xxhReady;
  const hasher = xxh();
  try {
    const st = await lstat(path);
    if (!st.isDirectory())
      return hasher
        .h64Raw(await readFile(path))
        .toString(16)
        .padStart(16, "0");
    const files: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else files.push(p);
      }
    };
    await walk(path);
    const h = hasher.create64();
    for (const f of files.map((f) => relative(path, f)).sort(compareUtf8)) {
      h.update(`${f}\0`);
      h.update(await readFile(join(path, f)));
      h.update("\0");
    }
    return h.digest().toString(16).padStart(16, "0");
  } catch {
    return MISSING;
  }
}

/**
 * Reads and hashes every file `cfg` names. Never throws (but for a hasher that failed to
 * load). Awaits the hasher's readiness even when `cfg` names no file: `desiredFrom`
 * (controller/city.ts) relies on that before it calls `fingerprint()`.
 */
export async function readFingerprintFiles(cfg: StartConfig): Promise<FingerprintFiles> {
  await xxhReady;
  const copyFiles: Record<string, string> = {};
  await Promise.all(
    (cfg.copyFiles ?? []).map(async (c) => (copyFiles[c.src] = await hashPathContent(c.src))),
  );
  return {
    sessionSetupScript: cfg.sessionSetupScript ? await hashPathContent(cfg.sessionSetupScript) : undefined,
    overlayDir: cfg.overlayDir ? await hashPathContent(cfg.overlayDir) : undefined,
    copyFiles,
  };
}
