// Bundles the built CLI (dist/cmd/gc/main.js, from tsc) with esbuild into one CommonJS file,
// dist/cmd/gc/gc.cjs, and replaces main.js (the `bin`) by a small loader that compiles it
// through `vm.Script` with a V8 code cache (gc.cjs.cache, made by scripts/post-build.mjs).
// Pure-JS dependencies (yaml, commander, xxhash-wasm, …) are bundled; native and heavy ones
// stay `require()`s at run time, loaded only by the commands that use them.
// Everything else under dist/ stays as tsc wrote it (tests import those modules); the subprocess
// holder has a bundle of its own (scripts/bundle-holder.mjs).
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const outdir = fileURLToPath(new URL("../dist/cmd/gc/", import.meta.url));
const dist = fileURLToPath(new URL("../dist/", import.meta.url));
/** tsc's output of cmd/gc/main.ts (the bundle's entry), then the loader. */
const MAIN = `${outdir}main.js`;

/** The bundle, beside main.js. */
export const BUNDLE = "gc.cjs";
/**
 * What the loader runs before it compiles {@link BUNDLE}: cmd/gc/early.ts (`gc status` asks the
 * running controller while the bundle loads), bundled on its own, beside it.
 */
export const EARLY = "early.cjs";
/** The V8 code cache of {@link BUNDLE}, beside it (scripts/post-build.mjs writes it). */
export const CODE_CACHE = `${BUNDLE}.cache`;
/**
 * The code cache the loader prefers when `start` is among the arguments: made by a warm-up
 * `gc start --once`, it holds the functions that load a city, plan and start sessions
 * (the controller's boot is on the way to every first session), which `gc status` never runs.
 */
export const START_CODE_CACHE = `${BUNDLE}.start.cache`;
/**
 * Set to a file path, the loader writes the code cache of {@link BUNDLE} there when the
 * process exits. Build time only (scripts/post-build.mjs); gc never writes it otherwise.
 */
export const CODE_CACHE_ENV = "GC_BUILD_WRITE_CODE_CACHE";

/** npm packages left as imports: native addons, and large ones only some commands load. */
const EXTERNAL = [
  "better-sqlite3",
  "@lydell/node-pty",
  "dockerode",
  "@kubernetes/client-node",
  "@agentclientprotocol/sdk",
  "@xterm/headless",
  "@xterm/xterm",
  "ws",
  "tar-stream",
];

/** esbuild's options for every CommonJS bundle the build makes (CLI, early work, holder). */
export const CJS_BUNDLE = {
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  logLevel: "warning",
  minifyWhitespace: true,
  minifySyntax: true,
};

/**
 * esbuild's options, beyond {@link CJS_BUNDLE}, of a bundle compiled by a
 * {@link cachedBundleLoader} (the CLI, the holder) from `entry`, lying in `bundleDir`, with
 * `external` left as `require()`s and `rewrite` applied to each module (keepModuleUrls).
 */
export function cachedBundleOptions({ bundleDir, entry, external, rewrite }) {
  return {
    ...CJS_BUNDLE,
    // The bundle holds no import(): one in a script compiled from a V8 code cache fails (Node
    // 20: "A dynamic import callback was not specified"). External ES modules (the Kubernetes
    // client) are loaded by require() (Node ≥ 20.19 loads an ES module without top-level await).
    supported: { "dynamic-import": false },
    external,
    sourcemap: "linked",
    // Strict, as the ES modules it was made of (the banner precedes esbuild's own directive).
    banner: { js: `"use strict";\nconst ${SELF_URL} = require("node:url").pathToFileURL(__filename).href;` },
    plugins: [keepModuleUrls(bundleDir, entry, rewrite)],
  };
}

/** The bundle's own file URL, which every bundled module's `import.meta.url` is relative to. */
export const SELF_URL = "__gcSelfUrl";

/**
 * An esbuild plugin: each bundled module sees the `import.meta.url` it has in the unbundled
 * build (its own file under dist/), so paths next to it (the holder script, the dashboard's
 * assets, package.json) still resolve. The bundle lies in `bundleDir`. The `entry`'s `#!` line
 * is dropped: the bundle is compiled as a function body (the loader's), where it is a syntax
 * error. `rewrite`, when given, transforms each module's text first (scripts/bundle-holder.mjs).
 */
export function keepModuleUrls(bundleDir, entry, rewrite = (text) => text) {
  return {
    name: "keep-module-urls",
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, (args) => {
        if (!args.path.startsWith(dist)) return undefined;
        const read = readFileSync(args.path, "utf8");
        const text = rewrite(read);
        const isEntry = args.path === entry;
        if (!isEntry && text === read && !text.includes("import.meta.url")) return undefined;
        const rel = relative(bundleDir, args.path).split("\\").join("/");
        return {
          contents: (isEntry ? text.replace(/^#!.*/, "") : text).replaceAll(
            "import.meta.url",
            `new URL(${JSON.stringify(rel)}, ${SELF_URL}).href`,
          ),
          loader: "js",
          resolveDir: dirname(args.path),
        };
      });
    },
  };
}

/**
 * dist/cmd/gc/main.cjs, the `bin`: CommonJS, so starting gc needs no ES module loader (≈ 10 ms
 * on every command). It compiles gc.cjs with a code cache ({@link START_CODE_CACHE} when `start`
 * is among the arguments and it exists, else {@link CODE_CACHE}) when V8 accepts it (else
 * without: slower, same behaviour) and runs it as the CommonJS module of its file. It
 * never writes a file, but for the code cache when {@link CODE_CACHE_ENV} asks (the build's
 * warm-up run).
 */
export const LOADER = "main.cjs";
const LOADER_MARK = `// gc's loader (written by scripts/bundle-cli.mjs)`;
const LOADER_TEXT = `#!/usr/bin/env node
${LOADER_MARK}: runs the CLI bundle ${BUNDLE} with its V8 code cache.
${cachedBundleLoader({
  bundle: BUNDLE,
  // Loaded only when it may ask (\`status\` among the arguments) or launch (\`start\`, but not
  // the controller's own \`start --foreground\`), and never needed: without it, status asks the
  // controller itself and start launches it once the bundle runs.
  before: `if (
  process.argv.includes("status") ||
  (process.argv.includes("start") && !process.argv.includes("--foreground"))
) {
  try {
    require("./${EARLY}").startEarly(process.argv.slice(2), process.env, process.cwd(), __dirname);
  } catch {
    // nothing early
  }
}`,
  caches: `process.argv.includes("start") ? ["${START_CODE_CACHE}", "${CODE_CACHE}"] : ["${CODE_CACHE}"]`,
  cacheEnv: CODE_CACHE_ENV,
  children: "the processes gc starts",
})}`;

/**
 * The body of a CommonJS loader (after its header comment) that compiles `bundle`, beside it,
 * with the first of `caches` (a JS expression: file names beside it) that exists, and runs it
 * as the CommonJS module of its own file. A code cache V8 rejects, or none, compiles from
 * source (slower, same behaviour). With `cacheEnv` set to a path (the build's warm-up run
 * only), it writes the bundle's code cache there at exit and removes the variable, so
 * `children` do not inherit it. `before`, when given, is a statement run first. Used for the CLI
 * and the session holder.
 */
export function cachedBundleLoader({ bundle, caches, cacheEnv, children, before }) {
  return `"use strict";
${before ? `${before}\n` : ""}const { readFileSync, writeFileSync } = require("node:fs");
const { createRequire, Module } = require("node:module");
const { join } = require("node:path");
const { Script } = require("node:vm");

const filename = join(__dirname, "${bundle}");
let cachedData;
for (const cache of ${caches}) {
  try {
    cachedData = readFileSync(join(__dirname, cache));
    break;
  } catch {
    // not there: the next, else compiled from source
  }
}
// ASCII only (asciiOnly in scripts/bundle-cli.mjs): read as latin1, which skips UTF-8 decoding.
const script = new Script(Module.wrap(readFileSync(filename).latin1Slice()), { filename, cachedData });
const cacheOut = process.env.${cacheEnv};
if (cacheOut) {
  delete process.env.${cacheEnv}; // not for ${children}
  process.once("exit", () => writeFileSync(cacheOut, script.createCachedData()));
}
const bundle = new Module(filename, module);
bundle.filename = filename;
bundle.paths = Module._nodeModulePaths(__dirname);
script
  .runInThisContext()
  .call(bundle.exports, bundle.exports, createRequire(filename), bundle, filename, __dirname);
bundle.loaded = true;
`;
}
/**
 * dist/cmd/gc/main.js, for whoever runs the built file by that path (tests, scripts, the
 * controller's own spawn): an ES module (package.json \`"type": "module"\`) that runs the loader.
 */
const MAIN_TEXT = `#!/usr/bin/env node
${LOADER_MARK}: the ES module entry; gc itself starts in ${LOADER}.
import "./${LOADER}";
`;

// tsc writes main.js afresh on every build; a main.js that is already the loader is left alone
// (its bundle is gc.cjs, from the same tsc output).
if (readFileSync(MAIN, "utf8").includes(LOADER_MARK)) {
  console.log("bundle-cli: dist/cmd/gc/main.js is already bundled (run `npm run build` to rebuild)");
} else {
  await bundle();
}

async function bundle() {
  await build({
    ...cachedBundleOptions({ bundleDir: outdir, entry: MAIN, external: EXTERNAL }),
    entryPoints: [MAIN],
    outfile: `${outdir}${BUNDLE}`,
  });
  asciiOnly(`${outdir}${BUNDLE}`);
  await build({ ...CJS_BUNDLE, entryPoints: [`${outdir}early.js`], outfile: `${outdir}${EARLY}` });
  writeFileSync(`${outdir}${LOADER}`, LOADER_TEXT);
  writeFileSync(MAIN, MAIN_TEXT);
  // tsc's map is of the TypeScript main, not of the loader; the code cache is of the old bundle.
  rmSync(`${MAIN}.map`, { force: true });
  rmSync(`${outdir}${CODE_CACHE}`, { force: true });
  rmSync(`${outdir}${START_CODE_CACHE}`, { force: true });
  // Chunks of the code-split ES module bundle that preceded this one.
  for (const f of readdirSync(outdir)) if (/^chunk-.*\.js(\.map)?$/.test(f)) rmSync(`${outdir}${f}`);
}

/**
 * Rewrites every non-ASCII UTF-16 code unit in `file` (in comments, strings and the screen
 * classifiers' regular expressions; esbuild escapes the rest) as a `\uXXXX` escape, which
 * means the same code unit in each of those places. V8 then reads the bundle as a one-byte
 * string: ~1.4 MB decoded as UTF-8 costs ≈ 20 ms more on every command when a single
 * character is outside ASCII.
 */
export function asciiOnly(file) {
  const text = readFileSync(file, "utf8");
  // After a backslash the escape would mean something else: refuse rather than guess.
  const after = /\\[^\x00-\x7f]/.exec(text);
  if (after) throw new Error(`bundle-cli: a backslash before a non-ASCII character at ${after.index}`);
  const escaped = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (escaped !== text) writeFileSync(file, escaped);
}
