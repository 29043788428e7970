import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  ensureFingerprintKey,
  FINGERPRINT_KEY_FILE,
  readFingerprintKey,
} from "../../internal/controller/fingerprint-key.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), "gc-fpkey-"));
  dirs.push(d);
  return d;
}

describe("the city's fingerprint key", () => {
  it("read without a file is undefined and writes nothing", async () => {
    const d = stateDir();
    expect(await readFingerprintKey(d)).toBeUndefined();
    expect(readdirSync(d)).toEqual([]);
  });

  it("ensure creates 32 random bytes, hex, mode 0600, and reads the same key afterwards", async () => {
    const d = stateDir();
    const k = await ensureFingerprintKey(d);
    expect(k.length).toBe(32);
    const path = join(d, FINGERPRINT_KEY_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toBe(`${Buffer.from(k).toString("hex")}\n`);
    expect(await ensureFingerprintKey(d)).toEqual(k);
    expect(await readFingerprintKey(d)).toEqual(k);
    expect(readdirSync(d)).toEqual([FINGERPRINT_KEY_FILE]);
    expect(await ensureFingerprintKey(stateDir())).not.toEqual(k);
  });

  it("processes creating it at once all get the one key, and no file is left aside", async () => {
    const d = stateDir();
    const keys = await Promise.all(Array.from({ length: 8 }, () => ensureFingerprintKey(d)));
    for (const k of keys) expect(k).toEqual(keys[0]);
    expect(readdirSync(d)).toEqual([FINGERPRINT_KEY_FILE]);
  });

  it("a file that holds no key is an error naming the file and the cost of replacing it; it is never replaced", async () => {
    const d = stateDir();
    const path = join(d, FINGERPRINT_KEY_FILE);
    writeFileSync(path, "abc\n");
    for (const op of [readFingerprintKey, ensureFingerprintKey]) {
      await expect(op(d)).rejects.toMatchObject({
        code: "GC_STORE",
        message: expect.stringContaining(`${path} is not a fingerprint key`),
      });
    }
    expect(readFileSync(path, "utf8")).toBe("abc\n");
  });

  it("a looser mode is tightened; a state dir that cannot hold it is an error naming the key", async () => {
    const d = stateDir();
    const k = await ensureFingerprintKey(d);
    chmodSync(join(d, FINGERPRINT_KEY_FILE), 0o644);
    expect(await ensureFingerprintKey(d)).toEqual(k);
    expect(statSync(join(d, FINGERPRINT_KEY_FILE)).mode & 0o777).toBe(0o600);
    // A state dir that cannot hold it (here a regular file: modes do not stop root).
    const notDir = join(stateDir(), "file");
    writeFileSync(notDir, "");
    await expect(ensureFingerprintKey(notDir)).rejects.toMatchObject({
      code: "GC_STORE",
      message: expect.stringContaining(join(notDir, FINGERPRINT_KEY_FILE)),
    });
  });
});
