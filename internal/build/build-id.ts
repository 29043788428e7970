/**
 * The build identity of gc: a short content hash of the built program (every file under
 * dist/ but source maps and the code caches), computed once by `npm run build` (scripts/post-build.mjs) and kept in
 * `dist/build-id`. `gc --version` prints it, the controller records the one it started from,
 * and `gc status` compares the two. Reading it costs one small file read, once per process;
 * no git at run time (a tarball install has no .git).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The file directly under dist/ that holds the build id (not part of the hash). */
export const BUILD_ID_FILE = "build-id";

/** Hex digits of a build id (48 bits: collisions between builds an operator meets are moot). */
export const BUILD_ID_LENGTH = 12;

/**
 * The V8 code cache of the CLI bundle (scripts/bundle-cli.mjs, made by scripts/post-build.mjs
 * after the build's own warm-up run): derived from the bundle, and not byte-reproducible.
 */
export const CODE_CACHE_FILE = "cmd/gc/gc.cjs.cache";
/** The bundle's other code cache, preferred by `gc start` (scripts/bundle-cli.mjs `START_CODE_CACHE`); alike. */
export const START_CODE_CACHE_FILE = "cmd/gc/gc.cjs.start.cache";

/**
 * The V8 code cache of the subprocess holder's bundle (scripts/bundle-holder.mjs, made by
 * scripts/post-build.mjs after the build's own warm-up holder run); alike.
 */
export const HOLDER_CODE_CACHE_FILE = "internal/runtime/subprocess/bundle/holder.cjs.cache";

/** Files that are no shipped code: source maps, the code caches, and the build id itself. */
function counted(rel: string): boolean {
  return (
    rel !== BUILD_ID_FILE &&
    rel !== CODE_CACHE_FILE &&
    rel !== START_CODE_CACHE_FILE &&
    rel !== HOLDER_CODE_CACHE_FILE &&
    !rel.endsWith(".map")
  );
}

/** Every regular file under `dir` (recursively), as `/`-separated paths relative to it, sorted. */
function filesUnder(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) out.push(...filesUnder(dir, rel));
    else if (e.isFile() && counted(rel)) out.push(rel);
  }
  return out.sort();
}

/**
 * The build id of the program under `distDir`: the first {@link BUILD_ID_LENGTH} hex digits
 * of a SHA-256 over each file's relative path and bytes, in path order. The same files give
 * the same id wherever they lie; a changed, added, removed or renamed file gives another one.
 * Source maps, the code caches ({@link CODE_CACHE_FILE}, {@link START_CODE_CACHE_FILE},
 * {@link HOLDER_CODE_CACHE_FILE}) and
 * the {@link BUILD_ID_FILE} are left out.
 */
export function computeBuildId(distDir: string): string {
  const hash = createHash("sha256");
  for (const rel of filesUnder(distDir)) {
    const bytes = readFileSync(join(distDir, rel));
    hash.update(`${rel}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest("hex").slice(0, BUILD_ID_LENGTH);
}

/** Computes the build id of `distDir` and writes it to its {@link BUILD_ID_FILE}. Resolves the id. */
export function writeBuildId(distDir: string): string {
  const id = computeBuildId(distDir);
  writeFileSync(join(distDir, BUILD_ID_FILE), `${id}\n`);
  return id;
}

/** The build id read from `distDir`, or `undefined` when it has none (not built by `npm run build`). */
export function readBuildId(distDir: string): string | undefined {
  try {
    const id = readFileSync(join(distDir, BUILD_ID_FILE), "utf8").trim();
    return /^[0-9a-f]+$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

let own: { id: string | undefined } | undefined;

/**
 * The build id of the gc running in this process (its dist/ holds this module at
 * internal/build/; the CLI bundle keeps that module URL), read once. `undefined` when run
 * from sources or from a build without the id.
 */
export function gcBuildId(): string | undefined {
  own ??= { id: readBuildId(fileURLToPath(new URL("../../", import.meta.url))) };
  return own.id;
}

/**
 * Whether a running controller that answered with `controllerBuild` (undefined or null: it
 * records none, i.e. a build from before build ids) runs another build than `gcBuild`. False
 * when this gc's own build is unknown: there is nothing to compare with. Pure.
 */
export function buildDiffers(
  controllerBuild: string | null | undefined,
  gcBuild: string | undefined,
): boolean {
  return gcBuild !== undefined && (controllerBuild ?? undefined) !== gcBuild;
}

/**
 * The controller's build fields of a status document (internal/controller/status-snapshot.ts) made by the gc of build `gcBuild`:
 * `build`, the running controller's (null when it did not answer, or records none: an older
 * build), and `buildMismatch`, true when a controller answered with another build. Pure.
 */
export function controllerBuild(
  answered: boolean,
  build: string | null | undefined,
  gcBuild: string | undefined,
) {
  const theirs = answered ? (build ?? null) : null;
  return { build: theirs, buildMismatch: answered && buildDiffers(theirs, gcBuild) };
}

/**
 * What `gc status` (and `gc start` beside a running controller) says when the controller with
 * pid `pid` runs build `controllerBuild` (null/undefined: it records none, a build from before
 * build ids) and this gc is `gcBuild`; undefined when they are the same (or this gc's build is
 * unknown). Pure.
 */
export function buildMismatchText(
  controllerBuild: string | null | undefined,
  gcBuild: string | undefined,
  pid: number | null | undefined,
): string | undefined {
  if (gcBuild === undefined || !buildDiffers(controllerBuild, gcBuild)) return undefined;
  const theirs = controllerBuild ? `build ${controllerBuild}` : "an older build (unknown)";
  return (
    `the controller runs ${theirs}, this gc is build ${gcBuild}: restart the controller to run this build ` +
    `(kill -TERM ${pid ?? "<pid>"}, then gc start; sessions keep running — docs/operating.md "Upgrading gc under a running city")`
  );
}
