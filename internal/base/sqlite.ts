/**
 * Opening a SQLite file through better-sqlite3 with its addon's path resolved once: the
 * package's own lookup (`bindings`) reads the call stack and tries a dozen candidate paths
 * on every process start (≈ 4 ms of every gc command). A build that keeps the addon
 * elsewhere (a debug build) falls back to that lookup.
 */
import { createRequire } from "node:module";
import Database from "better-sqlite3";

/** better-sqlite3's addon file, resolved once; `undefined`: let the package find it. */
let addon: { path?: string } | undefined;

/** The `nativeBinding` option for better-sqlite3 (see the module comment). */
function nativeBinding(): { nativeBinding?: string } {
  if (addon === undefined) {
    try {
      addon = {
        path: createRequire(import.meta.url).resolve("better-sqlite3/build/Release/better_sqlite3.node"),
      };
    } catch {
      addon = {};
    }
  }
  return addon.path === undefined ? {} : { nativeBinding: addon.path };
}

/** `new Database(path, opts)` with the addon resolved once. */
export function openSqlite(path: string, opts: Database.Options = {}): Database.Database {
  return new Database(path, { ...nativeBinding(), ...opts });
}
