/**
 * The bundled subprocess holder (scripts/bundle-holder.mjs, scripts/post-build.mjs): the
 * provider spawns dist/internal/runtime/subprocess/bundle/holder.js, a CommonJS loader of one
 * bundle, holder.cjs, compiled with the V8 code cache the build made; without a cache, or
 * with one V8 rejects, the holder runs its sessions the same, and writes no file beside it.
 */

import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { HOLDER_CODE_CACHE_FILE } from "../../internal/build/build-id.js";
import { readArgv } from "../../internal/proc/process-table.js";
import { defaultHolderPath } from "../../internal/runtime/subprocess/index.js";
import { makeCity, type TestCity } from "../runtime/subprocess/helpers.js";
import { cacheRejected } from "../support/code-cache.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BUNDLE_DIR = join(ROOT, "dist", "internal", "runtime", "subprocess", "bundle");

let city: TestCity | undefined;
afterEach(async () => {
  await city?.cleanup();
  city = undefined;
});

/** Starts one session through `holderPath` (default: the provider's own), checks it, stops it. */
async function runsASession(holderPath?: string): Promise<void> {
  city = await makeCity({ options: holderPath === undefined ? {} : { holderPath } });
  const p = city.provider;
  await p.start("s", await city.config("printf 'ready> '; exec cat", { readyPromptPrefix: "ready> " }));
  expect(await p.isRunning("s")).toBe(true);
  const st = await p.statusOf("s");
  if (!st.ok) throw new Error(`no status: ${st.why}`);
  // The holder process runs the loader given (or the default): recognized by its name.
  expect((await readArgv(st.value.holderPid))?.[1]).toBe(holderPath ?? defaultHolderPath());
  await p.sendKeys("s", ["e", "c", "h", "o", "Enter"]);
  // The typed line after the prompt, then `cat`'s copy of it (the holder draws them as they come).
  await expect.poll(() => p.peek("s", 5)).toMatch(/ready> echo\s*\n\s*echo/);
  await p.stop("s");
  expect(await p.isRunning("s")).toBe(false);
}

describe("the bundled subprocess holder", () => {
  it("the provider's holder is the build's loader, bundle/holder.js (CommonJS), of one ASCII bundle", () => {
    expect(defaultHolderPath()).toBe(join(BUNDLE_DIR, "holder.js"));
    expect(JSON.parse(readFileSync(join(BUNDLE_DIR, "package.json"), "utf8"))).toEqual({ type: "commonjs" });
    const bundle = readFileSync(join(BUNDLE_DIR, "holder.cjs"), "utf8");
    expect(/[^\x00-\x7f]/.test(bundle)).toBe(false);
    expect(bundle).not.toContain("import.meta");
  });

  it("npm run build: V8 accepts the holder's code cache it made", () => {
    const r = cacheRejected(join(BUNDLE_DIR, "holder.cjs"), join(ROOT, "dist", HOLDER_CODE_CACHE_FILE));
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("false");
  });

  it("a session runs in the built holder, with its code cache", async () => {
    await runsASession();
  });

  it.each([
    ["without a code cache", undefined],
    ["with one V8 rejects", "not a code cache"],
  ])("%s: a session runs the same, and no file is written beside the holder", async (_, cache) => {
    // Inside the repository, so node-pty is found upward as from dist/.
    const copy = mkdtempSync(join(ROOT, ".build-copy-"));
    onTestFinished(() => rmSync(copy, { recursive: true, force: true }));
    const dir = join(copy, "dist", "internal", "runtime", "subprocess", "bundle");
    mkdirSync(dir, { recursive: true });
    for (const f of ["package.json", "holder.js", "holder.cjs"])
      copyFileSync(join(BUNDLE_DIR, f), join(dir, f));
    if (cache !== undefined) writeFileSync(join(dir, "holder.cjs.cache"), cache);
    const before = readdirSync(dir).sort();
    await runsASession(join(dir, "holder.js"));
    expect(readdirSync(dir).sort()).toEqual(before);
  });
});
