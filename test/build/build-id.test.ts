/**
 * The build id (internal/build/build-id.ts): a content hash of the built program that is the
 * same for the same files wherever they lie and changes with any file; and the sentence
 * `gc status` prints when the controller runs another build.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  BUILD_ID_FILE,
  buildDiffers,
  buildMismatchText,
  CODE_CACHE_FILE,
  computeBuildId,
  HOLDER_CODE_CACHE_FILE,
  readBuildId,
  writeBuildId,
} from "../../internal/build/build-id.js";

/** A temporary dist/ with a few files (removed after the test). */
function fakeDist(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-build-id-")));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const dist = join(dir, "dist");
  mkdirSync(join(dist, "cmd", "gc"), { recursive: true });
  mkdirSync(join(dist, "internal"), { recursive: true });
  writeFileSync(join(dist, "cmd", "gc", "main.js"), "console.log('main');\n");
  writeFileSync(join(dist, "cmd", "gc", "main.js.map"), '{"version":3}\n');
  writeFileSync(join(dist, "internal", "a.js"), "export const a = 1;\n");
  return dist;
}

describe("computeBuildId", () => {
  it("computeBuildId: 12 hex digits; the same files give the same id, in another directory too", () => {
    const dist = fakeDist();
    const id = computeBuildId(dist);
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(computeBuildId(dist)).toBe(id);
    const copy = join(dist, "..", "copy");
    cpSync(dist, copy, { recursive: true });
    expect(computeBuildId(copy)).toBe(id);
  });

  it("computeBuildId: a changed, added, removed or renamed file gives another id", () => {
    const dist = fakeDist();
    const ids = new Set([computeBuildId(dist)]);
    writeFileSync(join(dist, "internal", "a.js"), "export const a = 2;\n");
    ids.add(computeBuildId(dist));
    writeFileSync(join(dist, "internal", "b.js"), "export const b = 1;\n");
    ids.add(computeBuildId(dist));
    rmSync(join(dist, "internal", "b.js"));
    writeFileSync(join(dist, "internal", "c.js"), "export const b = 1;\n");
    ids.add(computeBuildId(dist));
    rmSync(join(dist, "internal", "c.js"));
    rmSync(join(dist, "internal", "a.js"));
    ids.add(computeBuildId(dist));
    expect(ids.size).toBe(5);
  });

  it("computeBuildId: source maps and the build-id file itself do not count", () => {
    const dist = fakeDist();
    const id = computeBuildId(dist);
    writeFileSync(join(dist, "cmd", "gc", "main.js.map"), '{"version":3,"sources":["elsewhere"]}\n');
    writeFileSync(join(dist, BUILD_ID_FILE), "0123456789ab\n");
    expect(computeBuildId(dist)).toBe(id);
  });

  it("computeBuildId: the CLI bundle's code cache does not count; a file of that name elsewhere does", () => {
    const dist = fakeDist();
    const id = computeBuildId(dist);
    writeFileSync(join(dist, CODE_CACHE_FILE), "cache of one warm-up run");
    expect(computeBuildId(dist)).toBe(id);
    writeFileSync(join(dist, CODE_CACHE_FILE), "cache of another warm-up run, not the same bytes");
    expect(computeBuildId(dist)).toBe(id);
    writeFileSync(join(dist, "internal", "gc.cjs.cache"), "shipped as it is");
    expect(computeBuildId(dist)).not.toBe(id);
  });

  it("computeBuildId: the holder bundle's code cache does not count; the bundle does", () => {
    const dist = fakeDist();
    const dir = join(dist, HOLDER_CODE_CACHE_FILE, "..");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "holder.cjs"), "'use strict';\n");
    const id = computeBuildId(dist);
    writeFileSync(join(dist, HOLDER_CODE_CACHE_FILE), "cache of one warm-up run");
    expect(computeBuildId(dist)).toBe(id);
    writeFileSync(join(dist, HOLDER_CODE_CACHE_FILE), "cache of another warm-up run, not the same bytes");
    expect(computeBuildId(dist)).toBe(id);
    writeFileSync(join(dir, "holder.cjs"), "'use strict'; // changed\n");
    expect(computeBuildId(dist)).not.toBe(id);
  });

  it("writeBuildId / readBuildId: written next to the build, read back; none → undefined", () => {
    const dist = fakeDist();
    expect(readBuildId(dist)).toBeUndefined();
    const id = writeBuildId(dist);
    expect(readBuildId(dist)).toBe(id);
    expect(computeBuildId(dist)).toBe(id);
  });

  const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
  it.skipIf(!existsSync(join(dist, BUILD_ID_FILE)))(
    "npm run build: dist/build-id is the hash of dist/",
    () => {
      expect(readBuildId(dist)).toBe(computeBuildId(dist));
    },
  );
});

describe("buildMismatchText", () => {
  it("buildDiffers: same build no, another or none (an older controller) yes, own unknown no", () => {
    expect(buildDiffers("aaaaaaaaaaaa", "aaaaaaaaaaaa")).toBe(false);
    expect(buildDiffers("bbbbbbbbbbbb", "aaaaaaaaaaaa")).toBe(true);
    expect(buildDiffers(null, "aaaaaaaaaaaa")).toBe(true);
    expect(buildDiffers(undefined, "aaaaaaaaaaaa")).toBe(true);
    expect(buildDiffers("bbbbbbbbbbbb", undefined)).toBe(false);
  });

  it("buildMismatchText: both ids and what to do; an older controller is 'an older build (unknown)'", () => {
    expect(buildMismatchText("aaaaaaaaaaaa", "aaaaaaaaaaaa", 42)).toBeUndefined();
    expect(buildMismatchText("bbbbbbbbbbbb", "aaaaaaaaaaaa", 42)).toBe(
      "the controller runs build bbbbbbbbbbbb, this gc is build aaaaaaaaaaaa: restart the controller to run this build " +
        '(kill -TERM 42, then gc start; sessions keep running — docs/operating.md "Upgrading gc under a running city")',
    );
    expect(buildMismatchText(undefined, "aaaaaaaaaaaa", 42)).toMatch(
      /^the controller runs an older build \(unknown\), this gc is build aaaaaaaaaaaa: restart/,
    );
  });
});
