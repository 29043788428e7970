/**
 * The real agent CLIs (pinned in scripts/agent-clis.mjs, installed with npm into a cache
 * directory outside the repository) started by a city on tmux and on subprocess, each with a
 * private HOME (empty for Codex and Gemini CLI; onboarding marked done for Claude Code) and a
 * dummy key, offline: Claude Code gets past its trust and API-key screens
 * to its input prompt and a hostile, Unicode nudge arrives verbatim; Gemini CLI gets past its
 * trust dialog (and its auth screens) to its input; Codex stops at its sign-in choice, is
 * reported waiting for input with that question and its options, and `gc session respond`
 * chooses one. Skips (with the reason) only when npm cannot be reached and nothing is cached.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  agentCliCacheDir,
  installAgentCli,
  npmUnreachable,
  seedAgentHome,
} from "../../scripts/agent-clis.mjs";
import { makeCity, type TestCity, until } from "../support/city.js";

const CLIS = ["claude", "codex", "gemini"] as const;
const bins: Record<string, string> = {};
let skipReason: string | undefined;

beforeAll(async () => {
  const t0 = Date.now();
  try {
    for (const name of CLIS) bins[name] = (await installAgentCli(name)).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
  }
  console.log(`agent CLIs ready in ${Date.now() - t0} ms (cache ${agentCliCacheDir()})`);
}, 900_000);

interface StatusJson {
  sessions: {
    name: string;
    state: string;
    running: boolean;
    reason: string;
    interaction?: { question: string; options: string[]; dialog?: string };
  }[];
}

async function status(city: TestCity): Promise<StatusJson> {
  const r = await city.gc(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as StatusJson;
}

/** Kills what an agent left behind outside its session (Codex's app-server daemon) under `dir`. */
function killStrays(dir: string): void {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone already
    }
  }
}

/** The user messages Claude Code recorded in its own transcript (under the private HOME). */
function claudeUserMessages(home: string): string[] {
  const root = join(home, ".claude", "projects");
  if (!existsSync(root)) return [];
  const out: string[] = [];
  for (const d of readdirSync(root)) {
    const dir = join(root, d);
    if (!statSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".jsonl"))) {
      for (const line of readFileSync(join(dir, f), "utf8").split("\n")) {
        if (!line.trim()) continue;
        const rec = JSON.parse(line) as { type?: string; message?: { role?: string; content?: unknown } };
        const c = rec.message?.content;
        if (rec.type === "user" && typeof c === "string") out.push(c);
      }
    }
  }
  return out;
}

// The two providers' cities are independent (own names, sockets, HOMEs): they run side by
// side. makeCity registers its cleanup through vitest's global onTestFinished, which is only
// bound to the right test before the test's first await: keep it first.
describe.concurrent.each(["tmux", "subprocess"])("real agent CLIs on %s", (provider) => {
  it("start past their first screens, take a nudge, report and answer a sign-in choice", async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const t0 = Date.now();
    const city = makeCity("workspace: { name: '@NAME@' }\n", ctx.onTestFinished);
    // gc stop first: killing strays first would SIGKILL the subprocess holder (its argv names the
    // city dir), and an agent that ignores SIGHUP (Gemini CLI) would then outlive its session.
    ctx.onTestFinished(async () => {
      await city.gc(["stop"], { timeoutMs: 60_000 }).catch(() => undefined);
      killStrays(city.dir);
    });
    const home = (n: string) => join(city.dir, "home", n);
    const work = (n: string) => join(city.dir, "work", n);
    // Only Claude Code's HOME is seeded (onboarding done: offline it exits otherwise);
    // Codex and Gemini CLI start in a fresh, empty private HOME.
    for (const n of CLIS) {
      if (n === "claude") seedAgentHome(home(n));
      else mkdirSync(home(n), { recursive: true });
      mkdirSync(work(n), { recursive: true });
    }
    expect(readdirSync(home("gemini"))).toEqual([]);
    expect(readdirSync(home("codex"))).toEqual([]);
    const q = JSON.stringify;
    city.write(`workspace: { name: '@NAME@' }
session: { provider: ${provider}, startup_timeout: 240s }
providers:
  claude: { command: ${q(bins.claude)} }
  codex: { command: ${q(bins.codex)} }
  gemini: { command: ${q(bins.gemini)} }
agents:
  - name: claude
    provider: claude
    work_dir: ${q(work("claude"))}
    env: { HOME: ${q(home("claude"))}, ANTHROPIC_API_KEY: sk-ant-dummy-key, DISABLE_AUTOUPDATER: "1" }
  - name: codex
    provider: codex
    work_dir: ${q(work("codex"))}
    env: { HOME: ${q(home("codex"))}, OPENAI_API_KEY: sk-dummy-key }
  - name: gemini
    provider: gemini
    work_dir: ${q(work("gemini"))}
    env: { HOME: ${q(home("gemini"))}, GEMINI_API_KEY: dummy-gemini-key }
`);
    const started = await city.gc(["start"], { timeoutMs: 400_000 });
    expect(started.code, `${started.stdout}\n${started.stderr}`).toBe(0);
    const phase = (what: string) => console.log(`${provider}: ${what} after ${Date.now() - t0} ms`);
    phase("gc start");

    // The first pass may still be finishing a slow start (Gemini CLI restarts itself): poll.
    const settled = (st: StatusJson) => {
      const by = new Map(st.sessions.map((s) => [s.name, s]));
      return (
        by.get("codex")?.state === "waiting-for-input" &&
        by.get("gemini")?.state === "running" &&
        by.get("claude")?.state === "running"
      );
    };
    const st = await until(
      "claude and gemini running, codex waiting for input",
      async () => {
        const s = await status(city);
        return settled(s) ? s : undefined;
      },
      240_000,
    );
    phase("settled statuses");
    const byName = new Map(st.sessions.map((s) => [s.name, s]));
    // Codex: waiting for input, summarised by its question (not its logo), with options.
    const codex = byName.get("codex")!;
    expect(codex.reason).toBe("Choose how you want to use Codex.");
    expect(codex.interaction?.question).toBe("Choose how you want to use Codex.");
    expect(codex.interaction?.options).toEqual([
      "Sign in with ChatGPT",
      "Sign in with Device Code",
      "Sign in another way",
    ]);
    const text = await city.gc(["status"]);
    expect(text.stdout).toContain("codex: waiting-for-input — Choose how you want to use Codex.");
    expect(text.stdout).toContain("options: 1. Sign in with ChatGPT · 2. Sign in with Device Code");

    // Gemini CLI: past its trust dialog (and auth screens), at its input prompt.
    // (The scrollback may still hold its answered dialogs; `running` says none is pending.)
    // On failure, say what the screen showed instead (a CI log is all there is to go on).
    let geminiScreen = "";
    await until(
      "Gemini CLI's input prompt",
      async () => {
        const r = await city.gc(["peek", "gemini", "-n", "8"]);
        geminiScreen = r.code === 0 ? r.stdout : `(gc peek exited ${r.code}: ${r.stderr})`;
        return r.stdout.includes("Type your message");
      },
      120_000,
    ).catch(async (e: Error) => {
      const row = (await status(city)).sessions.find((s) => s.name === "gemini");
      const events = await city.gc(["session", "logs", "gemini", "--events", "-n", "12"]);
      throw new Error(
        `${e.message}; its last 8 lines:\n${geminiScreen}\nits status: ${JSON.stringify(row)}\nits last events:\n${events.stdout}`,
      );
    });

    // Acceptance: `gc start` of a gemini agent (fresh private HOME, dummy key) leaves it
    // running at its input prompt — not waiting for input, not quarantined, no dialog pending.
    const gemini = (await status(city)).sessions.find((s) => s.name === "gemini");
    expect(gemini?.state).toBe("running");
    expect(gemini?.running).toBe(true);
    expect(gemini?.interaction).toBeUndefined();
    phase("Gemini CLI input");
    // Claude Code: at its input prompt; a hostile, Unicode nudge arrives verbatim.
    const claudeScreen = await city.gc(["peek", "claude"]);
    expect(claudeScreen.stdout).toMatch(/^❯/m);
    const canary = join(city.dir, "pwned");
    const hostile = `it's "quoted" $(touch ${canary}) \`touch ${canary}\` #{pane_id} ; ünïcödé — 日本 ✓`;
    const nudged = await city.gc(["nudge", "--now", "claude", hostile]);
    expect(nudged.code, nudged.stderr).toBe(0);
    await until(
      "the nudge in Claude Code's transcript",
      () => claudeUserMessages(home("claude")).includes(hostile),
      60_000,
    );
    // On screen too (Claude renders `…` as code, so compare up to the backticks).
    const shown = hostile.slice(0, hostile.indexOf("`"));
    await until(
      "the nudge on Claude Code's screen",
      async () => (await city.gc(["peek", "claude"])).stdout.includes(`❯ ${shown}`),
      30_000,
    );
    expect(existsSync(canary)).toBe(false);

    phase("Claude Code nudge");
    // Codex: gc session respond chooses an option; the next screen is reported.
    const answered = await city.gc(["session", "respond", "codex", "3"]);
    expect(answered.code, answered.stderr).toBe(0);
    await until(
      "Codex's next screen",
      async () => {
        const c = (await status(city)).sessions.find((s) => s.name === "codex");
        return c?.interaction?.options.includes("Use an OpenAI API key");
      },
      30_000,
    );
    // …then its API-key field: waiting for input (only a person types a key), not `running`.
    const keyField = await city.gc(["session", "respond", "codex", "1"]);
    expect(keyField.code, keyField.stderr).toBe(0);
    await until(
      "Codex's API-key field as a pending interaction",
      async () => {
        const c = (await status(city)).sessions.find((s) => s.name === "codex");
        return c?.state === "waiting-for-input" && c.interaction?.dialog === "codex-api-key-field";
      },
      30_000,
    );
    expect((await city.gc(["status"])).stdout).toContain("enter it: gc attach codex");
    // The default policy (allow-all) never tried to "approve" any of Codex's sign-in screens.
    const codexEvents = await city.gc(["session", "logs", "codex", "--events", "--json"]);
    expect(codexEvents.stdout).not.toContain("interaction.respond-failed");
    console.log(`${provider}: three agent CLIs checked in ${Date.now() - t0} ms`);
  }, 600_000);
});
