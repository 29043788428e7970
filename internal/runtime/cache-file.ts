/**
 * Private cache files under a city's state dir: one value saved under a key (V8
 * serialization, so maps and `undefined` survive). Reading gives the value only when it was
 * saved under the same key; a missing, foreign or corrupt file is a miss, never an error.
 * Writing is atomic (a private temp file renamed over the old one), 0600 in a 0700 dir, and
 * best effort: a cache that cannot be written only costs the next reader the work.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { deserialize, serialize } from "node:v8";

/** The value `file` holds when it was saved under `key`, else `undefined`. */
export function readCacheFile<T>(file: string, key: string): T | undefined {
  try {
    const entry = deserialize(readFileSync(file)) as { key?: unknown; value?: T };
    return entry.key === key ? entry.value : undefined;
  } catch {
    return undefined;
  }
}

/** Saves `value` under `key` in `file`, replacing what it held. Best effort (never throws). */
export function writeCacheFile(file: string, key: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(tmp, serialize({ key, value }), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
}
