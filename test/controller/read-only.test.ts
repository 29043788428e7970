/**
 * A city opened read-only (`gc status`) builds its providers read-only (runtime/factory.ts
 * `readOnly`: the tmux provider's connect then leaves orphaned control clients to the
 * controller and writers); any other city builds them as before.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { openCity, type ProviderFactory } from "../../internal/controller/city.js";
import { FakeBackend, FakeProvider } from "../../internal/runtime/fake.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

async function openWith(where: { readOnly?: boolean; applies?: boolean }) {
  const dir = await mkdtemp(join(tmpdir(), "gc-read-only-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, "city.yaml"),
    'workspace:\n  name: ro\nsession:\n  provider: fake\nagents:\n  - name: a\n    start_command: "sleep 1"\n',
  );
  const bases: Parameters<ProviderFactory>[1][] = [];
  const city = await openCity(
    { cwd: dir, env: {}, cityDir: dir, ...where },
    {
      createProvider: async (_spec, base) => {
        bases.push(base);
        return new FakeProvider({ city: "ro", backend: new FakeBackend() });
      },
      openStore: () => openMemoryStore({ singleTenant: true }),
    },
  );
  onTestFinished(() => city.close());
  await city.providerFor(city.defaultProvider);
  return bases;
}

describe("a city opened read-only", () => {
  it("builds its providers read-only", async () => {
    const bases = await openWith({ readOnly: true });
    expect(bases.map((b) => b.readOnly)).toEqual([true]);
  });

  it("a city that is not (the controller, writers) builds them as before", async () => {
    for (const where of [{}, { applies: true }]) {
      const bases = await openWith(where);
      expect(bases.map((b) => b.readOnly)).toEqual([undefined]);
    }
  });
});
