/**
 * The I/O half of fingerprinting: content hashes of the files a start config names
 * (setup script, overlay dir, copy sources). A file that cannot be read hashes to the fixed
 * word `missing`, never to a partial hash, so a transient read error is visible as such.
 */
import { lstat, readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import xxhash from "xxhash-wasm";
import { compareUtf8, type FingerprintFiles } from "./fingerprint.js";
import type { StartConfig } from "./provider.js";

const hasher = await xxhash();
const MISSING = "missing";

/** xxh64 of a file's bytes or of a directory tree (sorted relative paths + contents). */
export async function hashPathContent(path: string): Promise<string> {
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

/** Reads and hashes every file `cfg` names. Never throws. */
export async function readFingerprintFiles(cfg: StartConfig): Promise<FingerprintFiles> {
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
