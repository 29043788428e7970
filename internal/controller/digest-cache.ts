/**
 * The last desired digest ({@link DesiredDigest}: every session's fingerprints) an
 * applying process resolved, saved under the state dir so `gc status` without a controller
 * need not resolve and fingerprint the whole city again while nothing it depends on changed.
 * Beside a running controller, status takes the controller's digest instead.
 *
 * An entry is used only when its key matches (the gc build; the city file's path, directory,
 * id, revision and parsed config, which carries every value interpolated in this shell; the
 * pool scale; the fingerprint key's digest) and every fingerprinted file still hashes as it
 * did (city.ts `loadWanted`). Nothing secret is saved: a city
 * whose parse interpolated a secret-looking variable, or whose fingerprints carry unkeyed
 * (legacy) hashes, is never saved; what is saved (names, hashes, redacted display values) is
 * what state.db keeps for every session anyway. Written 0600 by applying processes only; a
 * missing, foreign or corrupt entry is a miss.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { LoadedCity } from "../config/index.js";
import type { WantedAs } from "../reconcile/drift.js";
import { readCacheFile, writeCacheFile } from "../runtime/cache-file.js";
import type { FingerprintKey } from "../runtime/fingerprint.js";

/** A desired session as far as drift needs it (no start config: nothing secret). */
export interface WantedSession extends WantedAs {
  readonly name: string;
  readonly agent: string;
  readonly backend?: string | undefined;
}

/**
 * What one resolution of a city produced, with everything it depended on besides the
 * resolving process's environment: the city file's revision (its text and prompt
 * templates), the pool scale, and the content hash of every file a fingerprint covers. The
 * controller serves its latest one so `gc status` need not resolve and fingerprint the city
 * again while none of these changed (city.ts `currentDigestSessions`).
 */
export interface DesiredDigest {
  /** `LoadedCity.revision` of the file resolved. */
  readonly revision: string;
  /** The pool scale used (city.ts `scaleKeyOf`). */
  readonly scale: string;
  /** Content hash of each fingerprinted file (setup script, overlay dir, copy source), by path. */
  readonly files: Readonly<Record<string, string>>;
  readonly sessions: readonly WantedSession[];
}

/** The cache file, under the city's state dir. */
export const DIGEST_CACHE_FILE = "desired-digest.json";

const FORMAT = "gc-digest-cache-1";

/** What a saved digest was resolved from. */
export interface DigestInputs {
  readonly build: string;
  readonly loaded: LoadedCity;
  /** The pool scale ({@link scaleKeyOf} form). */
  readonly scale: string;
  readonly key: FingerprintKey | undefined;
}

/** The key of a digest resolved from `inputs`. Pure. */
export function digestCacheKey({ build, loaded, scale, key }: DigestInputs): string {
  const h = createHash("sha256");
  const keyId = key === undefined ? "none" : createHash("sha256").update(key).digest("hex");
  for (const part of [
    FORMAT,
    build,
    loaded.file,
    loaded.cityDir,
    loaded.cityId,
    loaded.revision,
    scale,
    keyId,
  ])
    h.update(`${part}\0`);
  return h.update(JSON.stringify(loaded.config)).digest("hex");
}

/** Whether `digest` of `loaded` may be saved: nothing in it or its key derives from a secret. Pure. */
export function savable(loaded: LoadedCity, digest: DesiredDigest): boolean {
  return loaded.secrets.length === 0 && digest.sessions.every((s) => s.legacy === undefined);
}

/** The saved digest when it was saved under `key`, else `undefined`. */
export function readDigestCache(stateDir: string, key: string): DesiredDigest | undefined {
  return readCacheFile<DesiredDigest>(join(stateDir, DIGEST_CACHE_FILE), key, "json");
}

/** Saves `digest` under `key` (best effort). */
export function writeDigestCache(stateDir: string, key: string, digest: DesiredDigest): void {
  // Plain data (no maps, no undefined): JSON, which reads faster than V8's format.
  writeCacheFile(join(stateDir, DIGEST_CACHE_FILE), key, digest, "json");
}
