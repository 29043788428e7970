/**
 * `gc dashboard` in a real browser: Debian's headless Chromium driven by playwright-core
 * (system executable, no browser download) against the built `gc` and real tmux sessions.
 * Screenshots go to $GC_DASHBOARD_SCREENSHOTS (kept) or to a temp dir removed afterwards.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { testAgentPath } from "../../conformance/targets/acp.js";
import { readBuildId } from "../../internal/build/build-id.js";
import { makeCity, type TestCity } from "../support/city.js";
import { startDashboard } from "./support.js";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
const hasTmux = existsSync("/usr/bin/tmux");
const APPROVAL_AGENT = fileURLToPath(new URL("../cli/fixtures/approval-agent.py", import.meta.url));
const ACP_AGENT = JSON.stringify(`exec ${process.execPath} ${testAgentPath()}`);
const keepShots = process.env.GC_DASHBOARD_SCREENSHOTS;
const shots = keepShots ?? mkdtempSync(join(tmpdir(), "gc-dashboard-shots-"));

/** Starts `gc dashboard` for the city; resolves its URL (token included). Stopped after the test. */
async function dashboard(city: TestCity): Promise<string> {
  return (await startDashboard(city)).url;
}

/** What the tests read of xterm.js's Terminal (window.gcTerm). */
interface XtermLike {
  cols: number;
  rows: number;
  buffer: { active: { getLine(y: number): { translateToString(trim: boolean): string } | undefined } };
}

/** The text xterm.js rendered (its DOM rows, one line each), not a text dump. */
// biome-ignore lint/performance/useDomNodeTextContent: playwright's innerText keeps the row breaks
const screenText = (page: Page) => page.locator("#term .xterm-rows").innerText();

describe.skipIf(!CHROMIUM || !hasTmux)("gc dashboard in Chromium", { timeout: 180_000 }, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ["--no-sandbox"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    try {
      for (const f of [
        "dashboard-grid.png",
        "dashboard-session.png",
        "dashboard-acp.png",
        "dashboard-200.png",
      ])
        expect(existsSync(join(shots, f)), f).toBe(true);
    } finally {
      // Removed even when a filtered run (-t) took no screenshot.
      if (!keepShots) rmSync(shots, { recursive: true, force: true });
    }
  });

  it("5 agents: grid, nudge a python agent, answer an interaction, see a kill without reload", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
  approval: ask
daemon:
  interval: 1h
agents:
  - name: py-one
    start_command: python3 -i -q
    ready_prompt_prefix: ">>> "
  - name: py-two
    start_command: python3 -i -q
    ready_prompt_prefix: ">>> "
  - name: approver
    start_command: ${JSON.stringify(`python3 -u ${APPROVAL_AGENT}`)}
    ready_prompt_prefix: "agent> "
  - name: shell
    start_command: sh
  - name: victim
    start_command: sleep 100000
`);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(url);
    await expect.poll(() => page.locator(".card").count(), { timeout: 20_000 }).toBe(5);
    await expect.poll(() => page.locator('.card[data-running="true"]').count(), { timeout: 30_000 }).toBe(5);
    // The controller's build in the header: this build's (no mismatch in the banner).
    const build = readBuildId(fileURLToPath(new URL("../../dist/", import.meta.url)));
    await expect(page.locator("#ctl").textContent()).resolves.toMatch(
      new RegExp(`^controller running \\(pid \\d+, build ${build}\\)$`),
    );
    await expect(page.locator("#banner").textContent()).resolves.not.toContain("restart the controller");
    await page.screenshot({ path: join(shots, "dashboard-grid.png") });
    // The token left the address bar.
    expect(page.url()).not.toContain("token=");
    await page.evaluate(() => {
      (globalThis as unknown as { noReload: boolean }).noReload = true;
    });

    // Nudge a python agent from its page; the answer appears, in colour, in the xterm screen.
    await page.locator('.card[data-session="py-one"]').click();
    await expect.poll(() => screenText(page), { timeout: 20_000 }).toContain(">>>");
    await page.locator('#nudge input[name="text"]').fill("print('\\x1b[32m' + str(6*7) + '\\x1b[0m')");
    await page.locator('#nudge select[name="mode"]').selectOption("now");
    await page.locator('#nudge button[type="submit"]').click();
    await expect.poll(() => screenText(page), { timeout: 20_000 }).toMatch(/^42$/m);
    await expect
      .poll(() => page.locator("#term .xterm-rows span.xterm-fg-2").allInnerTexts(), { timeout: 10_000 })
      .toContain("42");
    await expect.poll(() => page.locator("#events").textContent()).toContain("nudge.sent");
    await page.screenshot({ path: join(shots, "dashboard-session.png"), fullPage: true });

    // Answer a pending interaction from the page.
    await page.goto(`${new URL(url).origin}/#/s/approver`);
    await expect.poll(() => screenText(page), { timeout: 20_000 }).toContain("agent>");
    await page.locator('#nudge input[name="text"]').fill("edit");
    await page.locator('#nudge select[name="mode"]').selectOption("now");
    await page.locator('#nudge button[type="submit"]').click();
    await expect
      .poll(() => page.locator("#interaction").textContent(), { timeout: 20_000 })
      .toContain("Do you want to make this edit to notes.txt?");
    await page.locator('#interaction button[data-option="3"]').click();
    await expect.poll(() => screenText(page), { timeout: 20_000 }).toContain("answer: No");
    await expect.poll(() => page.locator("#events").textContent()).toContain("interaction.responded");

    // Kill a session behind gc's back: its card changes without a reload.
    await page.locator("#home").click();
    await expect.poll(() => page.locator(".card").count()).toBe(5);
    await page.evaluate(() => {
      (globalThis as unknown as { noReload: boolean }).noReload = true;
    });
    expect(city.tmux("kill-session", "-t", "=victim").code).toBe(0);
    await expect
      .poll(() => page.locator('.card[data-session="victim"]').getAttribute("data-running"), {
        timeout: 20_000,
      })
      .toBe("false");
    // Worded as gc status's STATE and RUNNING columns: the recorded state, then running no —
    // not "running — process gone" in the state.
    const victim = page.locator('.card[data-session="victim"]');
    await expect.poll(() => victim.locator("dd.running").textContent()).toMatch(/^no( — process gone)?$/);
    const recorded = await victim.getAttribute("data-state");
    await expect(victim.locator("dd.state").textContent()).resolves.toBe(recorded);
    if (["starting", "running", "draining", "waiting-for-input"].includes(recorded ?? ""))
      await expect(victim.locator("dd.running").textContent()).resolves.toBe("no — process gone");
    expect(await page.evaluate(() => (globalThis as unknown as { noReload?: boolean }).noReload)).toBe(true);
  });

  it("a sign-in dialog under the default allow-all: its own options on the page, no approve/deny, pending once", async () => {
    // Codex 0.171's recorded sign-in screen, drawn by a program that then just waits.
    const SIGN_IN = fileURLToPath(new URL("../fixtures/screens/codex-sign-in-80x24.ansi", import.meta.url));
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: tmux
daemon:
  interval: 1s
agents:
  - name: codex
    start_command: ${JSON.stringify(`cat ${SIGN_IN}; exec sleep 100000`)}
`);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(`${url}#/s/codex`);
    await expect
      .poll(() => page.locator("#interaction button[data-answer]").allInnerTexts(), { timeout: 20_000 })
      .toEqual(["1. Sign in with ChatGPT", "2. Sign in with Device Code", "3. Sign in another way"]);
    // Several controller passes (1 s apart) later: one pending record, no failed answer.
    await expect
      .poll(
        async () => {
          const r = await city.gc(["session", "logs", "codex", "--events", "--json"]);
          return (r.stdout.match(/"interaction\.pending"/g) ?? []).length;
        },
        { timeout: 20_000 },
      )
      .toBe(1);
    // Three more controller passes, each of which could have answered or recorded it again.
    const passAt = async (): Promise<number> =>
      JSON.parse((await city.gc(["status", "--json"])).stdout).controller.lastPass?.at ?? 0;
    for (let i = 0; i < 3; i++) {
      const before = await passAt();
      await expect.poll(passAt, { timeout: 20_000 }).toBeGreaterThan(before);
    }
    const events = await city.gc(["session", "logs", "codex", "--events", "--json"]);
    expect(events.stdout).not.toContain("interaction.respond-failed");
    expect((events.stdout.match(/"interaction\.pending"/g) ?? []).length).toBe(1);
    expect(events.stdout).toContain("not-an-approval");
  });

  it("an ACP agent: its transcript on the page, a permission request on its card, answered from the page", async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: acp
  approval: ask
daemon:
  interval: 1h
agents:
  - name: helper
    start_command: ${ACP_AGENT}
`);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(`${url}#/s/helper`);
    await expect
      .poll(() => page.locator("#term").getAttribute("data-source"), { timeout: 20_000 })
      .toBe("transcript");
    // A prompt from the page: a turn that asks permission for a tool call.
    await page.locator('#nudge input[name="text"]').fill("permission to clean up");
    await page.locator('#nudge select[name="mode"]').selectOption("now");
    await page.locator('#nudge button[type="submit"]').click();
    await expect
      .poll(() => screenText(page), { timeout: 20_000 })
      .toContain("[tool] Delete build/ (pending)");
    expect(await screenText(page)).toContain("> permission to clean up");
    // The grid card shows the pending question without a reload.
    await page.locator("#home").click();
    const card = page.locator('.card[data-session="helper"]');
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 20_000 }).toBe("waiting-for-input");
    await expect(card.locator(".question").textContent()).resolves.toContain("Delete build/");
    // Answered on the session page with one of the agent's options; the turn completes.
    await card.click();
    await expect
      .poll(() => page.locator("#interaction button[data-answer]").allInnerTexts(), { timeout: 20_000 })
      .toEqual(["1. allow-once", "2. allow-always", "3. reject-once", "approve", "deny"]);
    await page.locator('#interaction button[data-answer="allow-once"]').click();
    await expect.poll(() => screenText(page), { timeout: 20_000 }).toContain("permission: allow-once");
    expect(await screenText(page)).toContain("[tool] Delete build/ (completed)");
    await expect.poll(() => page.locator("#interaction").isHidden(), { timeout: 20_000 }).toBe(true);
    await expect.poll(() => page.locator("#events").textContent()).toContain("interaction.responded");
    await page.screenshot({ path: join(shots, "dashboard-acp.png"), fullPage: true });
  });

  it("a city file refused by the mass-stop guard shows as a banner with gc status's sentence", async () => {
    const file = (names: string[]) => `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
${names.map((n) => `  - name: ${n}\n    start_command: sleep 100000\n`).join("")}`;
    const city = makeCity(file(["alpha", "beta", "gamma"]));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(url);
    await expect.poll(() => page.locator('.card[data-running="true"]').count(), { timeout: 30_000 }).toBe(3);
    await expect(page.locator("#banner").isHidden()).resolves.toBe(true);
    // Two of three removed: the controller refuses the file; the page says so without a reload.
    city.write(file(["alpha"]));
    await expect
      .poll(() => page.locator("#banner").textContent(), { timeout: 30_000 })
      .toContain("city file NOT applied: it would stop 2 of 3 running sessions (beta, gamma)");
    const refusal = (await city.gc(["status"])).stdout.split("\n").find((l) => l.includes("NOT applied"));
    expect(refusal).toBeTruthy();
    await expect(page.locator("#banner").textContent()).resolves.toContain(refusal!);
    await expect(page.locator("#banner").isVisible()).resolves.toBe(true);
  });

  it("a subprocess session's screen is drawn at the session's terminal size, not a fixed 120×30", async () => {
    const city = makeCity("workspace:\n  name: @NAME@\n");
    // A full-screen-style program: clears the screen and puts marks by absolute cursor moves.
    const draw = join(city.dir, "draw.py");
    writeFileSync(
      draw,
      [
        "import os, sys, time",
        "c, r = os.get_terminal_size()",
        "sys.stdout.write(f'\\x1b[2J\\x1b[1;1Hsize {c}x{r}\\x1b[{r};{c - 2}HEND')",
        "sys.stdout.flush()",
        "time.sleep(100000)",
      ].join("\n"),
    );
    city.write(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: full
    start_command: ${JSON.stringify(`python3 -u ${draw}`)}
`);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(`${url}#/s/full`);
    await expect
      .poll(() => page.locator("#term").getAttribute("data-source"), { timeout: 20_000 })
      .toBe("stream");
    await expect.poll(() => screenText(page), { timeout: 20_000 }).toContain("size 160x50");
    // The mark sits where the program put it: last row, columns 158-160 of a 160×50 terminal.
    await expect
      .poll(() =>
        page.evaluate(() => {
          const t = (globalThis as unknown as { gcTerm: XtermLike }).gcTerm;
          return {
            cols: t.cols,
            rows: t.rows,
            last: t.buffer.active.getLine(t.rows - 1)?.translateToString(false),
          };
        }),
      )
      .toEqual({ cols: 160, rows: 50, last: `${" ".repeat(157)}END` });
    // And rendered so: 50 DOM rows, the last holding the mark.
    const rows = page.locator("#term .xterm-rows > div");
    await expect.poll(() => rows.count()).toBe(50);
    await expect.poll(async () => (await rows.nth(49).textContent())?.trim()).toBe("END");
  });

  it("a session removed from the city file while its page is open: the page says it is gone and disables its actions", async () => {
    const file = (names: string[]) => `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
${names.map((n) => `  - name: ${n}\n    start_command: sleep 100000\n`).join("")}`;
    const city = makeCity(file(["keep", "extra"]));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(`${url}#/s/extra`);
    await expect
      .poll(() => page.locator("#meta").textContent(), { timeout: 30_000 })
      .toContain(" · running yes · ");
    const actions = page.locator(
      ".detail form#nudge button, .detail form#nudge input, .detail form#nudge select",
    );
    await expect.poll(() => actions.count()).toBe(6);
    await expect
      .poll(async () =>
        (
          await actions.evaluateAll((els) => els.map((e) => (e as unknown as { disabled: boolean }).disabled))
        ).every((d) => !d),
      )
      .toBe(true);
    city.write(file(["keep"]));
    await expect
      .poll(() => page.locator("#state").textContent(), { timeout: 30_000 })
      .toBe("(not in the city)");
    await expect(page.locator("#meta").textContent()).resolves.toBe(
      "gone: not declared in the city file, no record, not running",
    );
    expect(
      await actions.evaluateAll((els) => els.map((e) => (e as unknown as { disabled: boolean }).disabled)),
    ).toEqual(Array(6).fill(true));
    await expect(page.locator("#interaction").isHidden()).resolves.toBe(true);
  });

  it("200 sessions render as 200 cards; with the controller down the view is read-only", async () => {
    const agents = Array.from(
      { length: 200 },
      (_, i) => `  - name: a${String(i).padStart(3, "0")}\n    start_command: sleep 100000\n`,
    ).join("");
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
agents:
${agents}`);
    const url = await dashboard(city);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => page.close());
    await page.goto(url);
    await expect.poll(() => page.locator(".card").count(), { timeout: 30_000 }).toBe(200);
    const t = await page.evaluate(() => {
      const w = globalThis as unknown as { gcGridRenderedAt: number; gcFirstStatusAt: number };
      return { status: w.gcFirstStatusAt, grid: w.gcGridRenderedAt };
    });
    console.log(
      `200-session grid: all 200 cards in the DOM ${Math.round(t.grid)} ms after navigation start ` +
        `(first status at ${Math.round(t.status)} ms, cards drawn ${Math.round(t.grid - t.status)} ms later)`,
    );
    await expect
      .poll(() => page.locator("#banner").textContent(), { timeout: 30_000 })
      .toContain("read-only");
    await page.screenshot({ path: join(shots, "dashboard-200.png") });
    // Actions are disabled on the page and refused by the API.
    await page.goto(`${new URL(url).origin}/#/s/a007`);
    await expect
      .poll(() => page.locator('#nudge button[type="submit"]').isDisabled(), { timeout: 30_000 })
      .toBe(true);
    const refused = await page.evaluate(async () => {
      const r = await fetch("/api/sessions/a007/restart", {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-GC-Token":
            (
              globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } }
            ).sessionStorage.getItem("gc-token") ?? "",
        },
        body: "{}",
      });
      return { status: r.status, body: (await r.json()) as { error: { code: string } } };
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe("GC_READ_ONLY");
  });
});

mkdirSync(shots, { recursive: true });
