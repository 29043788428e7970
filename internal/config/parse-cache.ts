/**
 * A one-entry cache of {@link parseCity}'s result under the city's state dir, so commands
 * that only read the city (`gc status`, `gc peek`…) skip parsing and decoding a file that
 * has not changed since a command that applies it (`gc start`, the controller) parsed it.
 *
 * The entry is keyed by everything the parse depends on: the gc build (the schema, its
 * defaults and checks are code), the file's path and text, the city dir and id, the
 * detected default provider and the `GC_SESSION` override, and the value (or absence) of
 * every environment variable the parse read (`${VAR}` interpolation), recorded as it ran.
 * A parse that interpolated any set variable is never cached, whatever the variable's name:
 * its value would reach the disk. The entry otherwise holds what the file says (the variables
 * it read were all unset), is written 0600 by applying commands only, and a
 * missing, unreadable, foreign or corrupt entry is a miss, never an error.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { readCacheFile, writeCacheFile } from "../runtime/cache-file.js";
import { type ParseCityInput, type ParsedCity, parseCity } from "./parse.js";

/** The cache file, under the city's state dir. */
export const PARSE_CACHE_FILE = "parsed-city.v8";

/** Where parses are cached, for which build, and whether this process may write. */
export interface ParseCacheOptions {
  /** The state dir (`<city>/.gc`). */
  readonly dir: string;
  /** The running gc's build id (internal/build/build-id.ts); a cache of another build is a miss. */
  readonly build: string;
  /** Only commands that apply the file write the cache (read commands never write). */
  readonly write: boolean;
}

/** Bumped when the entry's layout changes. */
const FORMAT = "gc-parse-cache-1";

/** The cache key of a parse: a digest of everything {@link parseCity} reads. Pure. */
export function parseCacheKey(input: ParseCityInput, build: string): string {
  const h = createHash("sha256");
  for (const part of [
    FORMAT,
    build,
    input.file,
    input.cityDir,
    input.cityId ?? "",
    input.identityName ?? "",
    input.defaultProvider,
    input.providerOverride ?? "\0none",
  ])
    h.update(`${part}\0`);
  return h.update(input.text).digest("hex");
}

/** A variable the parse read, with its value then (`null`: unset). */
type ReadVariable = readonly [name: string, value: string | null];

interface Entry {
  readonly vars: readonly ReadVariable[];
  readonly parsed: ParsedCity;
}

/**
 * {@link parseCity}, answered from the cache when its entry has this input's key and every
 * variable it read has the same value in `input.env`; else parsed, and (when `cache.write`,
 * and no secret-looking variable was read) stored for the next command.
 * @throws ConfigError as parseCity does (a failed parse is never cached).
 */
export function cachedParse(input: ParseCityInput, cache: ParseCacheOptions | undefined): ParsedCity {
  if (cache === undefined) return parseCity(input);
  const key = parseCacheKey(input, cache.build);
  const file = join(cache.dir, PARSE_CACHE_FILE);
  const hit = readCacheFile<Entry>(file, key);
  if (hit?.vars.every(([n, v]) => (input.env[n] ?? null) === v)) return hit.parsed;
  if (!cache.write) return parseCity(input);
  const read = new Set<string>();
  let listed = false;
  const env = new Proxy(input.env, {
    ownKeys: (t) => {
      listed = true; // depends on every variable: never cached
      return Reflect.ownKeys(t);
    },
    get: (t, k) => {
      if (typeof k === "string") read.add(k);
      return Reflect.get(t, k);
    },
    has: (t, k) => {
      if (typeof k === "string") read.add(k);
      return Reflect.has(t, k);
    },
  });
  const parsed = parseCity({ ...input, env });
  const names = [...read].sort();
  // Any value from the environment may be a secret, whatever its variable's name: a parse
  // that interpolated one is never written to disk.
  if (!listed && names.every((n) => input.env[n] === undefined)) {
    const vars = names.map((n): ReadVariable => [n, input.env[n] ?? null]);
    writeCacheFile(file, key, { vars, parsed } satisfies Entry);
  }
  return parsed;
}
