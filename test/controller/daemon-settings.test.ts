/**
 * `daemon.drain_timeout` reaches the drain: a city opened from its file with the fake
 * provider (which records every call) and a memory store, driven by the controller's own
 * reconciler (newReconciler). The key's effect on a real backend is the provider's
 * waitForIdle honouring its deadline, which the conformance suite proves per provider.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { newReconciler, openCity } from "../../internal/controller/city.js";
import { FakeBackend, FakeProvider } from "../../internal/runtime/fake.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

async function fakeCity(daemon: string) {
  const dir = await mkdtemp(join(tmpdir(), "gc-daemon-settings-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  /** Agent `a` runs `command`; `more` adds agents (YAML list items). */
  const file = (command: string, more = "") =>
    writeFile(
      join(dir, "city.yaml"),
      `workspace:\n  name: ds\nsession:\n  provider: fake\ndaemon:\n${daemon}agents:\n  - name: a\n    start_command: "${command}"\n${more}`,
    );
  await file("sleep 1");
  const provider = new FakeProvider({ city: "ds", backend: new FakeBackend() });
  const store = openMemoryStore({ singleTenant: true });
  const city = await openCity(
    { cwd: dir, env: {}, cityDir: dir },
    { createProvider: async () => provider, openStore: () => store },
  );
  onTestFinished(() => city.close());
  return { city, provider, reconciler: newReconciler(city, store), file };
}

/** The deadline each waitForIdle of a drain was given. */
const drainWaits = (p: FakeProvider) =>
  p.calls.filter((c) => c.method === "waitForIdle").map((c) => c.args[0]);

describe("daemon settings reach the controller's reconciler", () => {
  it.each([
    ["  interval: 1h\n  drain_timeout: 7s\n", 7_000],
    ["  interval: 1h\n", 120_000], // the default, 2m
  ])("daemon.drain_timeout: a drift restart drains with the configured deadline (%j)", async (daemon, ms) => {
    const t = await fakeCity(daemon);
    await t.reconciler.tick();
    expect(await t.provider.isRunning("a")).toBe(true);
    expect(drainWaits(t.provider)).toEqual([]);
    await t.file("sleep 2"); // core drift: the session is drained, then restarted
    const r = await t.reconciler.tick();
    expect(r.plan.actions.map((a) => `${a.kind}:${a.name}`)).toEqual(["restart:a"]);
    expect(drainWaits(t.provider)).toEqual([ms]);
    expect(await t.provider.isRunning("a")).toBe(true);
  });

  it("daemon.drain_timeout: a session removed from the file is drained too — Ctrl-C, bounded wait, then stop", async () => {
    const t = await fakeCity("  interval: 1h\n  drain_timeout: 9s\n");
    await t.file("sleep 1", '  - name: b\n    start_command: "sleep 1"\n');
    await t.reconciler.tick();
    expect(await t.provider.isRunning("b")).toBe(true);
    await t.file("sleep 1"); // b is no longer desired
    const r = await t.reconciler.tick();
    expect(r.plan.actions.map((a) => `${a.kind}:${a.name}`)).toEqual(["stop:b"]);
    const onB = t.provider.calls
      .filter((c) => ["interrupt", "waitForIdle", "stop"].includes(c.method) && c.name === "b")
      .map((c) => (c.method === "waitForIdle" ? `waitForIdle ${String(c.args[0])}` : c.method));
    expect(onB).toEqual(["interrupt", "waitForIdle 9000", "stop"]);
    expect(await t.provider.isRunning("b")).toBe(false);
    expect(await t.provider.isRunning("a")).toBe(true);
  });
});
