import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGcError } from "../../../internal/runtime/errors.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { makeCity, type TestCity, until } from "./helpers.js";

/**
 * A menu like an agent CLI's: raw mode, a question, numbered options with a `❯` cursor
 * moved by the arrow keys, Enter chooses (written to chose.out), then `AFTER` is shown and
 * every later byte goes to after.out. Anything else typed at the menu goes to typed.out.
 * With `EXIT_AFTER_DRAW` it exits (status 3) 1 s after drawing its first menu (while gc still
 * looks at a layout it does not know).
 */
const MENU = `
const fs = require("node:fs");
const opts = process.env.MENU_OPTS.split("|");
let sel = Number(process.env.MENU_SEL || 0);
process.stdin.setRawMode(true);
const draw = () => process.stdout.write("\\x1b[2J\\x1b[H" + process.env.MENU_Q + "\\r\\n\\r\\n" +
  opts.map((o, i) => (i === sel ? "\\u276f " : "  ") + (i + 1) + ". " + o).join("\\r\\n") + "\\r\\n");
draw();
if (process.env.EXIT_AFTER_DRAW) setTimeout(() => process.exit(3), 1000);
const onMenu = (d) => {
  const k = d.toString();
  if (k === "\\x1b[B") sel = Math.min(opts.length - 1, sel + 1);
  else if (k === "\\x1b[A") sel = Math.max(0, sel - 1);
  else if (k === "\\r") {
    fs.writeFileSync("chose.out", opts[sel]);
    process.stdout.write("\\x1b[2J\\x1b[H" + process.env.AFTER);
    process.stdin.off("data", onMenu);
    process.stdin.on("data", (x) => fs.appendFileSync("after.out", x));
    return;
  } else fs.appendFileSync("typed.out", k);
  draw();
};
process.stdin.on("data", onMenu);
`;

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
    await writeFile(join(cfg.workDir, "menu.cjs"), MENU);
    return { ...cfg, command: `exec ${JSON.stringify(process.execPath)} menu.cjs`, env, ...extra };
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
    await p.nudge("menu", "hello");
    await until("the nudge after the menu", async () => (await read(cfg, "after.out")) === "hello\r");
    expect(await p.waitForIdle("menu", 10_000)).toBe("idle");
    await p.stop("menu");
  });

  it("start: a startup dialog with the unsafe option preselected is answered safely before readiness", async () => {
    const p = city.provider;
    const cfg = await trustConfig({ MENU_OPTS: "Yes, proceed|No, exit", MENU_SEL: "1" });
    await p.start("trust", cfg);
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
