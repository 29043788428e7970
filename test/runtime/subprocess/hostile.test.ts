import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGcError, type NudgeNotDeliveredError } from "../../../internal/base/errors.js";
import { makeCity, type TestCity, until } from "./helpers.js";

/** A full-screen program: raw mode, alternate screen, bracketed paste, application cursor keys. */
const TUI = `
const fs = require("node:fs");
process.stdin.setRawMode(true);
process.stdout.write("\\x1b[?1049h\\x1b[?2004h\\x1b[?1hTUI READY> ");
let seen = "";
process.stdin.on("data", (d) => { seen += d.toString("latin1"); fs.writeFileSync("raw.out", seen, "latin1"); });
`;

async function rejectsCode(p: Promise<unknown>, code: string): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(isGcError(e) ? e.code : e).toBe(code);
}

describe("subprocess hostile input", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  it("names: traversal and shell syntax are refused by every operation before anything is touched", async () => {
    const p = city.provider;
    const cfg = await city.config("exec sleep 300");
    for (const bad of ["../escape", "a/b", "..", ".hidden", "x y", "$(id)", "a\nb"]) {
      await rejectsCode(p.start(bad, cfg), "GC_INVALID_NAME");
      await rejectsCode(p.stop(bad), "GC_INVALID_NAME");
      await rejectsCode(p.peek(bad, 1), "GC_INVALID_NAME");
      await rejectsCode(p.setMeta(bad, "k", "v"), "GC_INVALID_NAME");
      await rejectsCode(p.nudge(bad, "x"), "GC_INVALID_NAME");
    }
    expect(await p.listRunning("")).toEqual([]);
  });

  it("meta: hostile keys are refused; hostile and large values round-trip and survive a new provider", async () => {
    const p = city.provider;
    await p.start("meta-h", await city.config("exec sleep 300"));
    for (const k of ["../k", "a/b", "k\n", "", "$k", "k k"])
      await rejectsCode(p.setMeta("meta-h", k, "v"), "GC_INVALID_NAME");
    const values = [
      '{"id":1,"op":"shutdown"}\n',
      "\u0000nul and \u001b[31m escapes \u0007",
      "\ud83e\udd80 crab, lone surrogate-free",
      "y".repeat(1024 * 1024),
    ];
    for (const [i, v] of values.entries()) await p.setMeta("meta-h", `k${i}`, v);
    const fresh = city.fresh();
    for (const [i, v] of values.entries()) expect(await fresh.getMeta("meta-h", `k${i}`)).toBe(v);
    expect(await p.isRunning("meta-h")).toBe(true);
    await p.stop("meta-h");
  });

  it("nudge: a full-screen program gets one bracketed paste (newlines as CR), then a separate Enter", async () => {
    const cfg = await city.config("");
    await writeFile(join(cfg.workDir, "tui.cjs"), TUI);
    const p = city.provider;
    await p.start("tui", {
      ...cfg,
      command: `exec ${JSON.stringify(process.execPath)} tui.cjs`,
      readyPromptPrefix: "TUI READY> ",
    });
    expect(await p.peek("tui", 1)).toBe("TUI READY>");
    const raw = join(cfg.workDir, "raw.out");
    // The program shows nothing of what it reads: the bytes arrive, and the nudge says it was
    // sent but not confirmed (never a silent success).
    const e = await p.nudge("tui", "line one\nline two $(x) `y`").catch((x: unknown) => x);
    expect(isGcError(e, "GC_NUDGE_NOT_DELIVERED") && (e as NudgeNotDeliveredError).sent, String(e)).toBe(
      true,
    );
    const pasted = "\x1b[200~line one\rline two $(x) `y`\x1b[201~\r";
    await until("the paste", async () => (await readFile(raw, "latin1").catch(() => "")) === pasted);
    // Application cursor mode is honoured for arrow keys.
    await p.sendKeys("tui", ["Up", "C-c", "Escape"]);
    await until(
      "the keys",
      async () => (await readFile(raw, "latin1").catch(() => "")) === `${pasted}\x1bOA\x03\x1b`,
    );
    expect(await p.isRunning("tui")).toBe(true);
    await p.stop("tui");
  });
});
