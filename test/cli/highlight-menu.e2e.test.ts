/**
 * A menu whose cursor is only a highlighted row (issue 33 item 3), end to end: the built gc,
 * a temp city, real tmux and subprocess sessions running a Python curses program
 * (fixtures/highlight-menu.py) that draws an unnumbered list with the selected row in reverse
 * video — no `❯`, no numbers — and reads arrow keys and Enter. `gc status --json` shows the
 * pending interaction (question, options) and `work: needs-input`, never idle; a nudge is
 * refused rather than typed into the menu; `gc session respond` by label moves the highlight
 * with the arrow keys and chooses that option, which the program then reports.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { makeCity, type TestCity } from "../support/city.js";

const MENU = fileURLToPath(new URL("./fixtures/highlight-menu.py", import.meta.url));

const cityYaml = (provider: string) => `workspace:
  name: "@NAME@"
daemon:
  interval: 300ms
session:
  provider: ${provider}
  approval: ask
agents:
  - name: m
    start_command: "python3 -u ${MENU}"
`;

interface Row {
  name: string;
  running: boolean | null;
  work: { state: string; message?: string };
  interaction?: { requestId: string; kind: string; question: string; options: string[] } | null;
  screen?: string[];
}

async function row(city: TestCity): Promise<Row> {
  const r = await city.gc(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { sessions: Row[] }).sessions.find((s) => s.name === "m")!;
}

const read = (city: TestCity, f: string) => readFile(join(city.dir, f), "utf8").catch(() => undefined);

describe.each(["tmux", "subprocess"])("a menu with a highlighted cursor on %s", (provider) => {
  it("is a pending interaction, needs input, refuses nudges, and is answered by label", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(cityYaml(provider));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);

    await expect
      .poll(async () => (await row(city)).interaction ?? null, { timeout: 60_000 })
      .toMatchObject({
        kind: "menu",
        question: "Select an authentication method:",
        options: ["Qwen OAuth", "OpenAI", "Anthropic"],
      });
    await expect
      .poll(async () => (await row(city)).work)
      .toMatchObject({ state: "needs-input", message: "Select an authentication method:" });

    // A nudge would pick an option: it is refused, nothing is typed into the menu.
    const nudged = await city.gc(["nudge", "m", "--now", "hello"]);
    expect(nudged.code).not.toBe(0);
    expect(nudged.stderr).toMatch(/menu or dialog is waiting for a choice/);
    expect(await read(city, "typed.out")).toBeUndefined();
    expect(await read(city, "chose.out")).toBeUndefined();

    const answered = await city.gc(["session", "respond", "m", "Anthropic"]);
    expect(answered.code, answered.stderr).toBe(0);
    await expect.poll(() => read(city, "chose.out"), { timeout: 30_000 }).toBe("Anthropic");
    await expect.poll(async () => (await row(city)).screen?.join("\n") ?? "").toMatch(/chose Anthropic/);
    await expect.poll(async () => (await row(city)).interaction ?? null).toBeNull();
    expect(await read(city, "typed.out")).toBeUndefined();
  });
});
