/**
 * A city of the four agent CLIs gc runs through turns (Claude Code, Codex, Gemini CLI,
 * opencode; pinned in scripts/agent-clis.mjs) on tmux, each with a private HOME, talking to
 * the model-API double. During one agent's paced turn (a silence mid-stream), `gc status`
 * shows WORK `working` for it and `idle` for the three others — in the table, in `--json`
 * and on the dashboard's cards in Chromium — and the busy one is idle again once its stream
 * ended, never during the silence.
 *
 * Skips (with the reason) when Chromium is missing, or npm cannot be reached and nothing is
 * cached.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installAgentCli, npmUnreachable } from "../../scripts/agent-clis.mjs";
import { startDashboard } from "../dashboard/support.js";
import { makeCity, type TestCity } from "../support/city.js";
import { type CliAgent, TURN_CLIS, type TurnCli, turnCityYaml } from "./model-api/clis.js";
import { Script, startModelApi } from "./model-api/index.js";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
const bins: Partial<Record<TurnCli, string>> = {};
let skipReason: string | undefined = CHROMIUM ? undefined : "no chromium here";
let browser: Browser | undefined;

beforeAll(async () => {
  if (skipReason) return;
  try {
    for (const name of TURN_CLIS) bins[name] = (await installAgentCli(name)).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
    return;
  }
  browser = await chromium.launch({ executablePath: CHROMIUM!, args: ["--no-sandbox"] });
}, 900_000);
afterAll(async () => {
  await browser?.close();
});

interface Row {
  name: string;
  work?: { state: string };
}

async function works(city: TestCity): Promise<Record<string, string>> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) return {};
  const rows = (JSON.parse(r.stdout) as { sessions: Row[] }).sessions;
  return Object.fromEntries(rows.map((s) => [s.name, s.work?.state ?? "-"]));
}

describe("a city of four agent CLIs", () => {
  it("during a paced turn: WORK working for the busy one, idle for the others, in status and on the cards", {
    timeout: 900_000,
  }, async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const city = makeCity("workspace: { name: '@NAME@' }\n", ctx.onTestFinished);
    ctx.onTestFinished(async () => {
      await city.gc(["stop"], { timeoutMs: 60_000 }).catch(() => undefined);
    });
    const api = await startModelApi(
      new Script("Ready.").on("paced turn", {
        text: "one two three four five six seven eight nine ten eleven twelve",
        chunks: 12,
        overMs: 24_000,
        silenceMs: 5_000,
      }),
    );
    ctx.onTestFinished(() => api.close());
    const agents: CliAgent[] = TURN_CLIS.map((cli) => ({
      name: cli,
      cli,
      bin: bins[cli]!,
      home: join(city.dir, "homes", cli),
      work: join(city.dir, "work", cli),
      url: api.url,
    }));
    city.write(turnCityYaml("tmux", agents, "ask"));
    const started = await city.gc(["start"], { timeoutMs: 300_000 });
    expect(started.code, `${started.stdout}\n${started.stderr}`).toBe(0);
    const idleAll = Object.fromEntries(TURN_CLIS.map((c) => [c, "idle"]));
    await expect.poll(() => works(city), { timeout: 240_000, interval: 1_000 }).toEqual(idleAll);

    const url = (await startDashboard(city)).url;
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    ctx.onTestFinished(() => page.close());
    await page.goto(url);
    const card = (name: string) => page.locator(`.card[data-session="${name}"]`);
    await expect.poll(() => page.locator(".card").count(), { timeout: 30_000 }).toBe(4);

    // Claude Code takes a paced turn; the three others stay at their prompts.
    const nudged = await city.gc(["nudge", "claude", "Now a paced turn, please.", "--now"]);
    expect(nudged.code, nudged.stderr).toBe(0);
    const during = { ...idleAll, claude: "working" };
    // The double streams the paced reply (20+ s); Claude shows busy from its submit on.
    await expect.poll(() => api.streaming(), { timeout: 60_000, interval: 100 }).toBe(true);
    await expect.poll(() => works(city), { timeout: 60_000, interval: 250 }).toEqual(during);
    const table = await city.gc(["status"]);
    expect(table.stdout).toMatch(/^claude\s.*\bworking \d+[smh]\b/m);
    for (const other of ["codex", "gemini", "opencode"]) {
      expect(table.stdout).toMatch(new RegExp(`^${other}\\s.*\\bidle \\d+[smh]\\b`, "m"));
    }
    for (const [name, state] of Object.entries(during)) {
      await expect.poll(() => card(name).getAttribute("data-work"), { timeout: 30_000 }).toBe(state);
    }
    await expect(card("claude").locator("dd.work").textContent()).resolves.toMatch(/^working \d+[smh]$/);

    // Idle again only after the stream's last chunk (the silence mid-stream is not idle): at
    // the moment status first says idle, the double has written the turn's last chunk.
    await expect.poll(() => works(city), { timeout: 120_000, interval: 250 }).toEqual(idleAll);
    const seenIdle = Date.now();
    const paced = api.turns().filter((r) => r.userTexts.some((t) => t.includes("paced turn")));
    expect(paced.length).toBeGreaterThan(0);
    expect(paced.at(-1)!.lastChunkAt, "idle before the stream ended").toBeDefined();
    expect(paced.at(-1)!.lastChunkAt!).toBeLessThanOrEqual(seenIdle);
    await expect.poll(() => card("claude").getAttribute("data-work"), { timeout: 30_000 }).toBe("idle");
  });
});
