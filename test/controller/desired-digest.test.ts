/**
 * The controller's desired digest (what `gc status` takes DRIFT from while a controller
 * runs) is used only while it is current: the same file revision, pool scale and contents of
 * every fingerprinted file. A real city file on disk, resolved by the real loader; no
 * provider is opened (resolving needs none).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { resolveCity } from "../../internal/config/resolve.js";
import {
  currentDigestSessions,
  desiredFrom,
  desiredMemo,
  LAST_GOOD_FILE,
  openCity,
} from "../../internal/controller/city.js";
import { writePoolScale } from "../../internal/controller/pool-scale.js";
import { fingerprint } from "../../internal/runtime/fingerprint.js";
import { readFingerprintFiles } from "../../internal/runtime/fingerprint-files.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

const yaml = (command: string) => `workspace:
  name: digest
session:
  provider: tmux
agents:
  - name: a
    start_command: "${command}"
    session_setup_script: setup.sh
  - name: pool
    start_command: "sleep 1"
    min_active_sessions: 1
    max_active_sessions: 3
`;

async function city(opts: { applies?: boolean } = {}) {
  const dir = await mkdtemp(join(tmpdir(), "gc-digest-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, "city.yaml"), yaml("sleep 1"));
  await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho one\n");
  const c = await openCity(
    { cwd: dir, env: {}, cityDir: dir, ...opts },
    {
      createProvider: async () => {
        throw new Error("no provider is needed to resolve a city");
      },
      openStore: () => openMemoryStore({ singleTenant: true }),
    },
  );
  onTestFinished(() => c.close());
  return { dir, city: c };
}

/** A second process's view of the same city (like `gc status` beside the controller). */
async function reader(dir: string) {
  const c = await openCity(
    { cwd: dir, env: {}, cityDir: dir },
    {
      createProvider: async () => {
        throw new Error("unused");
      },
      openStore: () => openMemoryStore({ singleTenant: true }),
    },
  );
  onTestFinished(() => c.close());
  return c;
}

describe("desired digest", () => {
  it("stands in for resolving while current; any change of file, scale or fingerprinted file voids it", async () => {
    const { dir, city: controller } = await city();
    expect(controller.desiredDigest()).toBeUndefined();
    const desired = await controller.loadDesired();
    const digest = controller.desiredDigest()!;
    expect(digest.sessions.map((s) => [s.name, s.core, s.live])).toEqual(
      desired.map((d) => [d.name, d.core, d.live]),
    );
    // Fingerprints (with redacted field values, as records keep them), never the start config.
    expect(digest.sessions.every((s) => !("config" in s))).toBe(true);
    expect(Object.keys(digest.files)).toEqual([join(dir, "setup.sh")]);

    const status = await reader(dir);
    expect(await currentDigestSessions(status, digest)).toBe(digest.sessions);

    // A fingerprinted file's content changed: void (its session drifts).
    await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho two\n");
    expect(await currentDigestSessions(status, digest)).toBeUndefined();
    await writeFile(join(dir, "setup.sh"), "#!/bin/sh\necho one\n");
    expect(await currentDigestSessions(status, digest)).toBe(digest.sessions);

    // The pool scale changed: void.
    await writePoolScale(status.stateDir, "pool", 2);
    expect(await currentDigestSessions(status, digest)).toBeUndefined();
    await controller.loadDesired();
    const scaled = controller.desiredDigest()!;
    expect(scaled.sessions.map((s) => s.name)).toEqual(["a", "pool-1", "pool-2"]);
    expect(await currentDigestSessions(status, scaled)).toBe(scaled.sessions);

    // The city file changed (seen by the same reader, which re-reads it): void.
    await writeFile(join(dir, "city.yaml"), yaml("sleep 2"));
    expect(await currentDigestSessions(status, scaled)).toBeUndefined();
    await controller.loadDesired();
    expect(await currentDigestSessions(status, controller.desiredDigest()!)).toBe(
      controller.desiredDigest()!.sessions,
    );
  });

  it("last-good.yaml: kept by a process that applies the file; a reader never writes it", async () => {
    const { dir, city: reading } = await city();
    const lastGood = join(reading.stateDir, LAST_GOOD_FILE);
    const { existsSync, readFileSync } = await import("node:fs");
    await reading.loadDesired();
    expect(existsSync(lastGood)).toBe(false);
    const applying = await openCity(
      { cwd: dir, env: {}, cityDir: dir, applies: true },
      {
        createProvider: async () => {
          throw new Error("unused");
        },
        openStore: () => openMemoryStore({ singleTenant: true }),
      },
    );
    onTestFinished(() => applying.close());
    expect(readFileSync(lastGood, "utf8")).toBe(yaml("sleep 1"));
    await writeFile(join(dir, "city.yaml"), yaml("sleep 3"));
    await reading.loadDesired();
    expect(readFileSync(lastGood, "utf8")).toBe(yaml("sleep 1"));
    await applying.loadDesired();
    expect(readFileSync(lastGood, "utf8")).toBe(yaml("sleep 3"));
  });

  it("desiredFrom: a session naming no file is fingerprinted with what reading its files would give", async () => {
    const { dir, city: c } = await city();
    const loaded = c.current();
    const now = new Date(0);
    const memo = desiredMemo();
    const got = await desiredFrom(loaded, now, { pool: 2 }, memo);
    const model = { cityDir: loaded.cityDir, config: loaded.config, promptTemplates: loaded.promptTemplates };
    const resolved = resolveCity(model, { now });
    expect(resolved.map((d) => d.name)).toEqual(["a", "pool-1"]);
    const want = await Promise.all(
      resolved.map(async (d) =>
        fingerprint(
          d.config,
          await readFingerprintFiles(d.config),
          d.declaredEnvKeys,
          loaded.secrets,
          d.startText,
        ),
      ),
    );
    const fps = (xs: readonly { core: string; live: string; breakdown: unknown }[]) =>
      xs.map(({ core, live, breakdown }) => ({ core, live, breakdown }));
    expect(fps(got.slice(0, 2))).toEqual(fps(want));
    expect(got.map((s) => s.name)).toEqual(["a", "pool-1", "pool-2"]);
    // Only the file a session names is in the digest.
    expect(Object.keys(memo.digest?.files ?? {})).toEqual([join(dir, "setup.sh")]);
  });
});
