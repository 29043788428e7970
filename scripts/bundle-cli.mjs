// Bundles the built CLI (dist/cmd/gc/main.js, from tsc) with esbuild so `gc` loads a few
// files instead of ~190 modules: a small entry and code-split chunks beside it, each command
// and provider in its own chunk (loaded only when used). Pure-JS dependencies on every
// command's path (yaml, commander, …) are bundled; native and heavy ones stay ordinary
// imports. Everything else under dist/ stays as tsc wrote it (the subprocess holder runs
// from there, and tests import those modules).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const outdir = fileURLToPath(new URL("../dist/cmd/gc/", import.meta.url));
const dist = fileURLToPath(new URL("../dist/", import.meta.url));

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

/**
 * Each bundled module sees the `import.meta.url` it has in the unbundled build (its own file
 * under dist/), so paths next to it (the holder script, the dashboard's assets) still resolve.
 * Every output file lies directly in `outdir`.
 */
const keepModuleUrls = {
  name: "keep-module-urls",
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(dist)) return undefined;
      const text = readFileSync(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const rel = relative(outdir, args.path).split("\\").join("/");
      return {
        contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`),
        loader: "js",
        resolveDir: dirname(args.path),
      };
    });
  },
};

// tsc writes main.js afresh on every build; a main.js that is already a bundle is left alone
// (bundling it again would nest the bundles).
const BANNER =
  'import { createRequire as __gcCreateRequire } from "node:module"; const require = __gcCreateRequire(import.meta.url);';
if (readFileSync(`${outdir}main.js`, "utf8").includes(BANNER)) {
  console.log("bundle-cli: dist/cmd/gc/main.js is already bundled (run `npm run build` to rebuild)");
} else {
  await bundle();
}

async function bundle() {
  const result = await build({
    entryPoints: [`${outdir}main.js`],
    outdir,
    allowOverwrite: true,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    chunkNames: "chunk-[hash]",
    external: EXTERNAL,
    sourcemap: "linked",
    // Bundled CommonJS packages (yaml, commander) call require() for Node's builtins.
    banner: { js: BANNER },
    plugins: [keepModuleUrls],
    logLevel: "warning",
    write: false,
  });

  // Replace the previous build's chunks only once this one succeeded.
  for (const f of readdirSync(outdir)) if (/^chunk-.*\.js(\.map)?$/.test(f)) rmSync(`${outdir}${f}`);
  for (const out of result.outputFiles) {
    mkdirSync(dirname(out.path), { recursive: true });
    writeFileSync(out.path, out.contents);
  }
}
