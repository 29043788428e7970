/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: city files use ${VAR} interpolation */
/**
 * The saved desired digest (internal/controller/digest-cache.ts): a city that applies the
 * file saves what it resolved; a reader of the same build takes it instead of resolving while
 * it is current for the reader's parse, the pool scale, the fingerprint key and every
 * fingerprinted file. Real city files and the real loader in a temp dir; no provider.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { openCity, wantedOf } from "../../internal/controller/city.js";
import {
  type DesiredDigest,
  DIGEST_CACHE_FILE,
  type WantedSession,
} from "../../internal/controller/digest-cache.js";
import { writePoolScale } from "../../internal/controller/pool-scale.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

const yaml = (command: string, env = "") => `workspace:
  name: digestcache
session:
  provider: tmux
agents:
  - name: a
    start_command: "${command}"
    session_setup_script: setup.sh${env}
  - name: pool
    start_command: "sleep 1"
    min_active_sessions: 1
    max_active_sessions: 3
`;

const noProvider = {
  createProvider: async () => {
    throw new Error("no provider is needed to resolve a city");
  },
  openStore: () => openMemoryStore({ singleTenant: true }),
};

async function cityDir(text = yaml("sleep 1")) {
  const dir = await mkdtemp(join(tmpdir(), "gc-digest-cache-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, "city.yaml"), text);
  await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho one\n");
  return dir;
}

async function open(dir: string, opts: { applies?: boolean; build?: string; env?: NodeJS.ProcessEnv } = {}) {
  const c = await openCity(
    { cwd: dir, env: opts.env ?? {}, cityDir: dir, applies: opts.applies, build: opts.build ?? "b1" },
    noProvider,
  );
  onTestFinished(() => c.close());
  return c;
}

const cacheFile = (dir: string) => join(dir, ".gc", DIGEST_CACHE_FILE);

/** Marks the saved digest's first session: a reader that returns the mark read the cache. */
function tamper(dir: string): void {
  const entry = JSON.parse(readFileSync(cacheFile(dir), "utf8")) as { value: DesiredDigest };
  const [first, ...rest] = entry.value.sessions;
  const marked = { ...entry.value, sessions: [{ ...first!, core: "v1:from-cache" }, ...rest] };
  writeFileSync(cacheFile(dir), JSON.stringify({ ...entry, value: marked }));
}
const firstCore = (w: readonly WantedSession[]) => w[0]?.core;

describe("saved desired digest", () => {
  it("an applying city saves what it resolved; a reader of the same build takes it", async () => {
    const dir = await cityDir();
    const reader = await open(dir);
    const resolved = (await reader.loadWanted()).map(wantedOf); // nothing saved yet: resolved
    expect(existsSync(cacheFile(dir))).toBe(false); // readers never write it
    const applier = await open(dir, { applies: true });
    await applier.loadDesired();
    const savedAt = statSync(cacheFile(dir), { bigint: true }).mtimeNs;
    await applier.loadDesired(); // a pass over an unchanged city saves nothing
    expect(statSync(cacheFile(dir), { bigint: true }).mtimeNs).toBe(savedAt);
    expect((await reader.loadWanted()).map(wantedOf)).toStrictEqual(resolved);
    tamper(dir);
    expect(firstCore(await reader.loadWanted())).toBe("v1:from-cache");
    // Another build's reader, and a reader without a build, resolve.
    expect(firstCore(await (await open(dir, { build: "b2" })).loadWanted())).toBe(resolved[0]!.core);
    const unbuilt = await openCity({ cwd: dir, env: {}, cityDir: dir }, noProvider);
    onTestFinished(() => unbuilt.close());
    expect(firstCore(await unbuilt.loadWanted())).toBe(resolved[0]!.core);
  });

  it("voided by a fingerprinted file's content, the pool scale and the city file", async () => {
    const dir = await cityDir();
    const applier = await open(dir, { applies: true });
    await applier.loadDesired();
    tamper(dir);
    const reader = await open(dir);
    expect(firstCore(await reader.loadWanted())).toBe("v1:from-cache");
    await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho two\n");
    expect(firstCore(await reader.loadWanted())).not.toBe("v1:from-cache");
    await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho one\n");
    expect(firstCore(await reader.loadWanted())).toBe("v1:from-cache");
    await writePoolScale(reader.stateDir, "pool", 2);
    const scaled = await reader.loadWanted();
    expect(scaled.map((s) => [s.name, s.core === "v1:from-cache"])).toEqual([
      ["a", false],
      ["pool-1", false],
      ["pool-2", false],
    ]);
    await writeFile(join(dir, "city.yaml"), yaml("sleep 2"));
    expect(firstCore(await reader.loadWanted())).not.toBe("v1:from-cache");
    // The applier's next resolution saves the new file's digest.
    await applier.loadDesired();
    expect((await reader.loadWanted()).map(wantedOf)).toStrictEqual(
      (await applier.loadDesired()).map(wantedOf),
    );
  });

  it("keyed by this shell's values of interpolated variables; never saved for a secret-looking one", async () => {
    const dir = await cityDir(yaml("sleep 1", "\n    env:\n      MODE: ${GC_TEST_MODE}"));
    await (await open(dir, { applies: true, env: { GC_TEST_MODE: "one" } })).loadDesired();
    tamper(dir);
    expect(firstCore(await (await open(dir, { env: { GC_TEST_MODE: "one" } })).loadWanted())).toBe(
      "v1:from-cache",
    );
    expect(firstCore(await (await open(dir, { env: { GC_TEST_MODE: "two" } })).loadWanted())).not.toBe(
      "v1:from-cache",
    );

    const secret = await cityDir(yaml("sleep 1", "\n    env:\n      API_TOKEN: ${GC_TEST_TOKEN}"));
    await (await open(secret, { applies: true, env: { GC_TEST_TOKEN: "s3cr3t-token" } })).loadDesired();
    expect(existsSync(cacheFile(secret))).toBe(false);
  });
});
