/**
 * The controller's operator pass applies the approval policy to what a session's screen
 * shows: a city opened from its file with the fake provider whose pending/respond read and
 * answer a recorded Codex screen through the shared dialog code (as tmux and subprocess do),
 * and a memory store, driven pass after pass the way the controller loop drives it.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { newReconciler, openCity } from "../../internal/controller/city.js";
import { createOperatorPass } from "../../internal/controller/operator-pass.js";
import { findInteraction, respondToInteraction } from "../../internal/runtime/dialogs.js";
import { FakeBackend, FakeProvider } from "../../internal/runtime/fake.js";
import type { InteractionResponse } from "../../internal/runtime/provider.js";
import { MemoryStore } from "../../internal/session/memory-store.js";

/** A memory store that counts its session listings. */
class CountingStore extends MemoryStore {
  lists = 0;
  override async list(...a: Parameters<MemoryStore["list"]>) {
    this.lists++;
    return super.list(...a);
  }
}

/** The text of a `capture-pane -e` screen: SGR and other escape sequences removed. */
async function recorded(name: string): Promise<string> {
  const ansi = await readFile(new URL(`../fixtures/screens/${name}`, import.meta.url), "utf8");
  return ansi.replace(/\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]/g, "");
}

/** A city running session `a` on a fake provider whose screen is `screen.text`. */
async function screenCity(approval: string) {
  const dir = await mkdtemp(join(tmpdir(), "gc-operator-pass-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, "city.yaml"),
    `workspace:\n  name: op\nsession:\n  provider: fake\n  approval: ${approval}\ndaemon:\n  interval: 1h\nagents:\n  - name: a\n    start_command: "codex"\n`,
  );
  const provider = new FakeProvider({ city: "op", backend: new FakeBackend() });
  const screen = { text: "" };
  const keys: string[] = [];
  const io = {
    screen: async () => screen.text,
    sendKeys: async (k: readonly string[]) => void keys.push(...k),
  };
  Object.assign(provider, {
    pending: async () => findInteraction(screen.text),
    respond: async (_name: string, r: InteractionResponse) =>
      respondToInteraction(io, r, { settleMs: 200, steadyMs: 20, pollMs: 5, confirmMs: 200 }),
  });
  const store = new CountingStore({ singleTenant: true });
  const city = await openCity(
    { cwd: dir, env: {}, cityDir: dir },
    { createProvider: async () => provider, openStore: () => store },
  );
  onTestFinished(() => city.close());
  const log: string[] = [];
  const reconciler = newReconciler(city, store);
  const operatorPass = createOperatorPass(city, (l) => log.push(l));
  const pass = async () => operatorPass(await reconciler.tick(), new AbortController().signal);
  const events = async (type: string) =>
    (await store.queryEvents({ session: "a", types: [type] })).map((e) => e.payload);
  return { screen, keys, log, pass, events, store };
}

describe("operator pass: the approval policy and sign-in screens", () => {
  it.each([
    ["codex-sign-in-80x24.ansi", "codex-sign-in"],
    ["codex-sign-in-other-80x24.ansi", "codex-sign-in-other"],
    ["codex-api-key-field-80x24.ansi", "codex-api-key-field"],
  ])(
    "allow-all over five passes on %s: one pending record, never an answer, never a failure",
    async (file, dialog) => {
      const t = await screenCity("allow-all");
      await t.pass(); // starts the session
      t.screen.text = await recorded(file);
      for (let i = 0; i < 5; i++) await t.pass();
      expect(await t.events("interaction.respond-failed")).toEqual([]);
      expect(await t.events("interaction.responded")).toEqual([]);
      expect(await t.events("interaction.pending")).toEqual([
        expect.objectContaining({ kind: "dialog", by: "policy", rule: "not-an-approval" }),
      ]);
      expect(t.keys).toEqual([]);
      expect(t.log.filter((l) => /waiting for input|approval/.test(l))).toEqual([
        expect.stringMatching(/^a is waiting for input: /),
      ]);
      expect(findInteraction(t.screen.text)?.metadata?.dialog).toBe(dialog);
    },
  );

  it("allow-all: an approval prompt it cannot answer fails once, not every pass; a new prompt is tried", async () => {
    const t = await screenCity("allow-all");
    await t.pass();
    // An approval prompt whose options gc cannot map to approve/deny (unfamiliar layout).
    t.screen.text = "Do you want to proceed?\n❯ 1. Perhaps\n  2. Later\n";
    for (let i = 0; i < 4; i++) await t.pass();
    expect(await t.events("interaction.respond-failed")).toEqual([
      expect.objectContaining({ kind: "approval", rule: "allow-all", action: "approve" }),
    ]);
    expect(t.log.filter((l) => l.startsWith("approval: could not approve a"))).toHaveLength(1);
    t.screen.text = "Do you want to proceed?\n❯ 1. Perhaps\n  2. Tomorrow\n";
    for (let i = 0; i < 3; i++) await t.pass();
    expect(await t.events("interaction.respond-failed")).toHaveLength(2);
    expect(t.keys).toEqual([]);
  });
});

describe("operator pass: the store", () => {
  it("an in-sync pass reads the session records once (the reconcile step's read is shared); a pass that started something reads them again", async () => {
    const t = await screenCity("allow-all");
    t.store.lists = 0;
    await t.pass(); // starts the session: the tick's read, its backoff check, the operator step's own read
    expect(t.store.lists).toBe(3);
    t.screen.text = "Do you want to proceed?\n❯ 1. Perhaps\n  2. Later\n";
    t.store.lists = 0;
    await t.pass(); // in sync: one read, and the operator step still sees the running session
    expect(t.store.lists).toBe(1);
    expect(await t.events("interaction.respond-failed")).toHaveLength(1);
  });
});
