import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { makeCity, type TestCity, until } from "./helpers.js";

/** A menu like an agent CLI's (test/fixtures/menu-agent.cjs). */
const MENU = fileURLToPath(new URL("../../fixtures/menu-agent.cjs", import.meta.url));

describe("subprocess interactions", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  async function menuConfig(
    env: Record<string, string>,
    extra: Partial<StartConfig> = {},
  ): Promise<StartConfig> {
    const cfg = await city.config("");
    return {
      ...cfg,
      command: `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(MENU)}`,
      env,
      ...extra,
    };
  }
  /** The trust question as a startup dialog with these options, then a `ready> ` prompt. */
  const trustConfig = (env: { MENU_OPTS: string } & Record<string, string>) =>
    menuConfig(
      { MENU_Q: "Do you trust the files in this folder?", AFTER: "ready> ", ...env },
      { readyPromptPrefix: "ready> " },
    );
  const read = (cfg: StartConfig, f: string) => readFile(join(cfg.workDir, f), "utf8").catch(() => undefined);

  it("pending/respond: a menu is reported, never typed into or called idle, and answered by label", async () => {
    const p = city.provider;
    const cfg = await menuConfig({ MENU_Q: "Which colour?", MENU_OPTS: "Red|Blue", AFTER: "done> " });
    await p.start("menu", cfg);
    const pending = await until("the menu", () => p.pending("menu"));
    expect(pending).toMatchObject({ kind: "menu", options: ["Red", "Blue"] });

    const e = await p.nudge("menu", "1").catch((x: unknown) => x);
    expect(isGcError(e, "GC_NUDGE_NOT_DELIVERED")).toBe(true);
    expect(await p.waitForIdle("menu", 1_500)).toBe("timeout");
    expect(await read(cfg, "typed.out")).toBeUndefined();

    await p.respond("menu", { requestId: pending.requestId, action: "Blue" });
    expect(await read(cfg, "chose.out")).toBe("Blue");
    await until("the menu to go", async () => (await p.pending("menu")) === undefined);
    // After the menu the program shows nothing of what it reads: the bytes arrive, the nudge
    // says it was sent but not confirmed.
    const sent = await p.nudge("menu", "hello").catch((x: unknown) => x);
    expect(isGcError(sent, "GC_NUDGE_NOT_DELIVERED"), String(sent)).toBe(true);
    await until("the nudge after the menu", async () => (await read(cfg, "after.out")) === "hello\r");
    expect(await p.waitForIdle("menu", 10_000)).toBe("idle");
    await p.stop("menu");
  });

  it("start: a startup dialog with the unsafe option preselected is answered safely before readiness", async () => {
    const p = city.provider;
    const cfg = await trustConfig({ MENU_OPTS: "Yes, proceed|No, exit", MENU_SEL: "1" });
    // The start says what it answered on the operator's behalf.
    expect(await p.start("trust", cfg)).toEqual({
      answered: [{ dialog: "trust-folder", chose: "Yes, proceed" }],
    });
    expect(await read(cfg, "chose.out")).toBe("Yes, proceed");
    expect(await p.peek("trust", 1)).toBe("ready>");
    await p.stop("trust");
  });

  it("start: an unfamiliar layout of a known dialog is refused and nothing is left", async () => {
    const p = city.provider;
    const cfg = await trustConfig({ MENU_OPTS: "Maybe|Ask me later" });
    const e = await p.start("odd", cfg).catch((x: unknown) => x);
    expect(isGcError(e, "GC_DIALOG_REFUSED")).toBe(true);
    expect(String(e)).toMatch(/not answered/);
    expect(await read(cfg, "chose.out")).toBeUndefined();
    expect(await p.listRunning("odd")).toEqual([]);
  });

  it("start: a program that died showing a dialog is reported dead, not its dialog refused", async () => {
    const p = city.provider;
    const cfg = await trustConfig({ MENU_OPTS: "Maybe|Ask me later", EXIT_AFTER_DRAW: "1" });
    const e = await p.start("gone", cfg).catch((x: unknown) => x);
    expect(isGcError(e, "GC_DIED_DURING_STARTUP"), String(e)).toBe(true);
    expect(await p.listRunning("gone")).toEqual([]);
  });
});
