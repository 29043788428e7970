/**
 * The city's fingerprint key, `.gc/fingerprint.key` (0600): 32 random bytes, hex. Secret
 * values enter fingerprints only sealed under it (runtime/fingerprint.ts `FingerprintKey`),
 * so the hashes gc stores and publishes (state.db, tmux/container metadata, pod annotations)
 * are no check values for guessing a secret without this file. Processes that apply the city
 * create it when missing; read commands only read it (without it they compute the unkeyed
 * hashes, which is what a city without a key has recorded).
 */
import { randomBytes } from "node:crypto";
import { chmod, link, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { StoreError } from "../base/errors.js";
import type { FingerprintKey } from "../runtime/fingerprint.js";

/** The key file's name under the state dir. */
export const FINGERPRINT_KEY_FILE = "fingerprint.key";

const KEY_TEXT = /^([0-9a-f]{64})\n?$/;

/**
 * The key in `stateDir`, or `undefined` when there is none.
 * @throws StoreError when the file exists but holds no key (it is never replaced silently:
 * a new key re-fingerprints, and so restarts, every session whose config holds a secret).
 */
export async function readFingerprintKey(stateDir: string): Promise<FingerprintKey | undefined> {
  const path = join(stateDir, FINGERPRINT_KEY_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StoreError(`cannot read the city's fingerprint key ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const m = KEY_TEXT.exec(text);
  if (!m) {
    throw new StoreError(
      `${path} is not a fingerprint key (64 hex digits). Remove it to make a new one: every session whose config holds a secret then restarts once.`,
    );
  }
  return Buffer.from(m[1]!, "hex");
}

/**
 * The key in `stateDir`, created (0600) when missing. Two processes creating it at once
 * agree: the file appears whole (written aside, then hard-linked into place, which fails
 * when it exists) and the loser reads the winner's.
 */
export async function ensureFingerprintKey(stateDir: string): Promise<FingerprintKey> {
  const path = join(stateDir, FINGERPRINT_KEY_FILE);
  const existing = await readFingerprintKey(stateDir);
  if (existing) {
    // Looser modes (a copy made by hand) are tightened, as for state.db.
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
    return existing;
  }
  const aside = `${path}.${process.pid}.${randomBytes(6).toString("hex")}`;
  try {
    await writeFile(aside, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    await link(aside, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new StoreError(`cannot create the city's fingerprint key ${path}: ${(e as Error).message}`, {
        cause: e,
      });
    }
  } finally {
    await unlink(aside).catch(() => undefined);
  }
  return (await readFingerprintKey(stateDir))!;
}
