// Bundles the subprocess provider's session holder (tsc's dist/internal/runtime/subprocess/
// holder.js and what it imports) with esbuild into one CommonJS file, holder.cjs, in
// dist/internal/runtime/subprocess/bundle/, beside the script the provider spawns (holder.js
// there, a CommonJS loader, by the package.json of that directory) which compiles the bundle
// through `vm.Script` with a V8 code cache (holder.cjs.cache, made by scripts/post-build.mjs).
// Each holder process then starts without an ES module loader and without loading and
// compiling its modules one file at a time (every start of a city whose holder is not running
// waits for one). The pure-JS screen model (@xterm/headless) is bundled too; node-pty (native)
// stays a `require()` at run time. The entry keeps the name `holder.js`: holder processes are
// recognized by it (holder-control.ts).
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { asciiOnly, cachedBundleLoader, cachedBundleOptions } from "./bundle-cli.mjs";

const pkgdir = fileURLToPath(new URL("../dist/internal/runtime/subprocess/", import.meta.url));
/** tsc's holder entry (an ES module with a top-level await), the bundle's entry. */
const ENTRY = `${pkgdir}holder.js`;
/** Where the loader, the bundle and its code cache lie (internal/runtime/subprocess/holder-control.ts). */
export const HOLDER_DIR = `${pkgdir}bundle/`;
/** The script the provider spawns: the loader. */
export const HOLDER_LOADER = "holder.js";
/** The bundle, beside the loader. */
export const HOLDER_BUNDLE = "holder.cjs";
/** The V8 code cache of {@link HOLDER_BUNDLE}, beside it (scripts/post-build.mjs writes it). */
export const HOLDER_CODE_CACHE = `${HOLDER_BUNDLE}.cache`;
/**
 * Set to a file path, the holder's loader writes the code cache of {@link HOLDER_BUNDLE} there
 * when the holder exits. Build time only (scripts/post-build.mjs); never set otherwise.
 */
export const HOLDER_CODE_CACHE_ENV = "GC_BUILD_WRITE_HOLDER_CODE_CACHE";

/** npm packages left as `require()`s: native addons. */
const EXTERNAL = ["@lydell/node-pty"];

const LOADER_TEXT = `// gc's session holder (written by scripts/bundle-holder.mjs): runs the holder bundle
// ${HOLDER_BUNDLE} with its V8 code cache (without it when V8 rejects it or it is missing:
// slower, same behaviour). \`node holder.js <provider root> [slot]\`.
${cachedBundleLoader({
  bundle: HOLDER_BUNDLE,
  caches: `["${HOLDER_CODE_CACHE}"]`,
  cacheEnv: HOLDER_CODE_CACHE_ENV,
  children: "the programs it runs",
})}`;

/**
 * The holder's modules load their npm dependencies by `createRequire(import.meta.url)(…)`
 * (they are ES modules): made plain `require()`s, which esbuild bundles (or, for
 * {@link EXTERNAL}, leaves as they are).
 */
const plainRequires = (text) =>
  text.replace(/createRequire\(import\.meta\.url\)\(("[^"]+")\)/g, "require($1)");

await build({
  // tsc's entry ends in a top-level await, which CommonJS has not: the same call, unawaited
  // (a rejection is unhandled, and ends the process, as that await's would).
  stdin: {
    contents: `import { runHolder } from "./holder-process.js";\nrunHolder();\n`,
    resolveDir: pkgdir,
    sourcefile: ENTRY,
    loader: "js",
  },
  outfile: `${HOLDER_DIR}${HOLDER_BUNDLE}`,
  ...cachedBundleOptions({ bundleDir: HOLDER_DIR, entry: ENTRY, external: EXTERNAL, rewrite: plainRequires }),
});
asciiOnly(`${HOLDER_DIR}${HOLDER_BUNDLE}`);
// package.json's "type": "module" makes every .js an ES module; the loader is CommonJS.
writeFileSync(`${HOLDER_DIR}package.json`, `${JSON.stringify({ type: "commonjs" })}\n`);
writeFileSync(`${HOLDER_DIR}${HOLDER_LOADER}`, LOADER_TEXT);
// The code cache of the bundle this one replaces.
rmSync(`${HOLDER_DIR}${HOLDER_CODE_CACHE}`, { force: true });
if (readFileSync(`${HOLDER_DIR}${HOLDER_BUNDLE}`, "latin1").includes("import.meta")) {
  throw new Error("bundle-holder: import.meta left in the bundle");
}
