/**
 * The bundled CLI (scripts/bundle-cli.mjs, scripts/post-build.mjs): dist/cmd/gc/main.cjs (the
 * bin; main.js imports it) is a loader of one CommonJS bundle, gc.cjs, compiled with the V8 code cache the build made; without
 * a cache, or with one V8 rejects, gc behaves the same, and it writes no file when it runs.
 */

import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { CODE_CACHE_FILE, START_CODE_CACHE_FILE } from "../../internal/build/build-id.js";
import { cacheRejected } from "../support/code-cache.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI_DIR = join(ROOT, "dist", "cmd", "gc");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

/** Runs `node <main> ...args` (no GC_* from the test's environment but `env`). */
function run(main: string, args: string[], env: Record<string, string> = {}) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GC_")));
  return spawnSync(process.execPath, [main, ...args], { encoding: "utf8", env: { ...base, ...env } });
}

/**
 * The loader and bundle alone, copied inside the repository (package.json is found upward, as
 * from dist/) into a directory removed after the test; `cache`: the code cache file's bytes.
 */
function copyOfCli(cache?: Buffer | string): { dir: string; main: string } {
  const copy = mkdtempSync(join(ROOT, ".build-copy-"));
  onTestFinished(() => rmSync(copy, { recursive: true, force: true }));
  const dir = join(copy, "dist", "cmd", "gc");
  mkdirSync(dir, { recursive: true });
  for (const f of ["main.js", "main.cjs", "gc.cjs"]) copyFileSync(join(CLI_DIR, f), join(dir, f));
  if (cache !== undefined) writeFileSync(join(dir, "gc.cjs.cache"), cache);
  return { dir, main: join(dir, "main.cjs") };
}

describe("the bundled CLI", () => {
  it("dist/cmd/gc: the bin (a CommonJS loader) and main.js executable with a shebang, one bundle, no chunks", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: { gc: string } };
    expect(pkg.bin.gc).toBe("dist/cmd/gc/main.cjs");
    for (const entry of ["main.cjs", "main.js"]) {
      const main = join(CLI_DIR, entry);
      expect(readFileSync(main, "utf8")).toMatch(/^#!\/usr\/bin\/env node\n/);
      expect(statSync(main).mode & 0o111).not.toBe(0);
    }
    expect(run(join(CLI_DIR, "main.js"), ["--version"]).stdout).toBe(
      run(join(CLI_DIR, "main.cjs"), ["--version"]).stdout,
    );
    // ASCII only (scripts/bundle-cli.mjs asciiOnly): V8 reads it as a one-byte string.
    expect(/[^\x00-\x7f]/.test(readFileSync(join(CLI_DIR, "gc.cjs"), "utf8"))).toBe(false);
    expect(readdirSync(CLI_DIR).filter((f) => f.startsWith("chunk-"))).toEqual([]);
  });

  it.skipIf(spawnSync("tmux", ["-V"]).status !== 0).each([CODE_CACHE_FILE, START_CODE_CACHE_FILE])(
    "npm run build: V8 accepts the code cache it made (%s)",
    (cacheFile) => {
      const r = cacheRejected(join(CLI_DIR, "gc.cjs"), join(ROOT, "dist", cacheFile));
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe("false");
    },
  );

  it("without a code cache, or with one V8 rejects: the same output and exit codes, no file written", () => {
    const real = run(join(CLI_DIR, "main.js"), ["no-such-command"]);
    expect(real.status).toBe(2);
    for (const cache of [undefined, "not a code cache"]) {
      const { dir, main } = copyOfCli(cache);
      const before = readdirSync(dir).sort();
      const version = run(main, ["--version"]);
      expect(version.stderr).toBe("");
      expect(version.status).toBe(0);
      expect(version.stdout).toBe(`${VERSION} (build unknown)\n`);
      const wrong = run(main, ["no-such-command"]);
      expect({ status: wrong.status, stdout: wrong.stdout, stderr: wrong.stderr }).toEqual({
        status: real.status,
        stdout: real.stdout,
        stderr: real.stderr,
      });
      expect(readdirSync(dir).sort()).toEqual(before);
    }
  });

  it("GC_BUILD_WRITE_CODE_CACHE (the build's warm-up only): the cache is written there at exit", () => {
    const { dir, main } = copyOfCli();
    const out = join(dir, "written.cache");
    const r = run(main, ["--version"], { GC_BUILD_WRITE_CODE_CACHE: out });
    expect(r.status, r.stderr).toBe(0);
    expect(statSync(out).size).toBeGreaterThan(0);
  });
});
