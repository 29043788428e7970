/**
 * Live ACP against the real agents behind the ACP presets (versions pinned in
 * scripts/agent-clis.mjs, installed by npm into the agent-CLI cache outside the repository),
 * each started through its preset's command, offline and signed out (private HOME, no key):
 *
 * - `gemini-acp` (Gemini CLI) and `codex-acp` (@zed-industries/codex-acp): `initialize`
 *   answers with the agent's info and auth methods, `session/new` answers auth_required, the
 *   session starts with the auth methods as its pending interaction, and a prompt is refused
 *   at once with a clear gc error that names them.
 * - `claude-acp` (@zed-industries/claude-code-acp): `initialize` answers, `session/new`
 *   opens a session without signing in, the first prompt's turn fails at once with a clear
 *   error naming the auth method, after which the auth choice is pending and prompts are
 *   refused; answering it fails clearly (the adapter does not implement `authenticate`).
 *
 * Never a hang. Skips (with the reason) only when npm cannot be reached and nothing is cached.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { isGcError } from "../../internal/base/errors.js";
import { shellQuote } from "../../internal/base/shell-quote.js";
import { BUILTIN_PRESETS } from "../../internal/config/builtins.js";
import { AcpProvider } from "../../internal/runtime/acp/index.js";
import { AGENT_CLIS, type AgentCliName, installAgentCli, npmUnreachable } from "../../scripts/agent-clis.mjs";

/** Preset → the pinned package that provides its command. */
const AGENTS = { "gemini-acp": "gemini", "claude-acp": "claude-code-acp", "codex-acp": "codex-acp" } as const;
type Preset = keyof typeof AGENTS;

const bins: Partial<Record<Preset, string>> = {};
let skipReason: string | undefined;

beforeAll(async () => {
  const t0 = Date.now();
  try {
    for (const [preset, cli] of Object.entries(AGENTS) as [Preset, AgentCliName][])
      bins[preset] = (await installAgentCli(cli)).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
  }
  console.log(`ACP agents ready in ${Date.now() - t0} ms`);
}, 900_000);

/**
 * Starts `preset`'s command (the cache's bin directory first on PATH) as session `name` on a
 * fresh acp provider with a private HOME; everything is removed when the test ends.
 */
async function startPreset(preset: Preset, name: string): Promise<AcpProvider> {
  const bin = bins[preset];
  if (!bin) throw new Error(`${preset}: not installed`);
  const root = await mkdtemp(join(tmpdir(), `gc-acp-${preset}-`));
  const home = join(root, "home");
  const work = join(root, "work");
  await mkdir(home);
  await mkdir(work);
  const PATH = `${dirname(bin)}:${process.env.PATH ?? ""}`;
  const p = new AcpProvider({
    city: `${preset}-live`,
    stateDir: join(root, "state"),
    baseEnv: { PATH, HOME: home },
  });
  onTestFinished(async () => {
    await p.stop(name);
    await rm(root, { recursive: true, force: true });
  });
  const { command, args = [] } = BUILTIN_PRESETS[preset] ?? {};
  expect(command).toBe(AGENT_CLIS[AGENTS[preset]].bin);
  await p.start(name, {
    command: `exec ${[command ?? "", ...args].map(shellQuote).join(" ")}`,
    workDir: work,
    env: { HOME: home },
  });
  return p;
}

/** A prompt refused at once with GC_NUDGE_NOT_DELIVERED naming the auth choice. */
async function expectPromptRefused(p: AcpProvider, name: string): Promise<void> {
  const err = await p.prompt(name, "hello").then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isGcError(err, "GC_NUDGE_NOT_DELIVERED"), String(err)).toBe(true);
  expect(String(err)).toContain("needs authentication");
  expect(String(err)).toContain(`gc session respond ${name}`);
  expect(await p.isRunning(name)).toBe(true);
}

describe("acp: live agents of the ACP presets, signed out and offline", { timeout: 120_000 }, () => {
  it.for([
    ["gemini-acp", `gemini-cli ${AGENT_CLIS.gemini.version}`, "gemini-api-key"],
    ["codex-acp", `codex-acp ${AGENT_CLIS["codex-acp"].version}`, "openai-api-key"],
  ] as const)(
    "%s: initialize answers, session/new needs auth, a prompt is a clear gc error",
    async ([preset, agent, method], t) => {
      if (skipReason) t.skip(skipReason);
      const p = await startPreset(preset, "live");
      const st = await p.acpStatus("live");
      expect(st?.agent).toBe(agent); // initialize's agentInfo
      expect(st?.state).toBe("needs_auth"); // session/new answered auth_required
      expect(st?.authMethods).toContain(method);
      const pending = await p.pending("live");
      expect(pending).toMatchObject({ kind: "authentication" });
      expect(pending?.options).toEqual(st?.authMethods);
      await expectPromptRefused(p, "live");
    },
  );

  it("claude-acp: initialize answers, session/new opens, the first turn fails clearly, then auth is pending", async (t) => {
    if (skipReason) t.skip(skipReason);
    const p = await startPreset("claude-acp", "live");
    const st = await p.acpStatus("live");
    expect(st?.agent).toBe(`@zed-industries/claude-code-acp ${AGENT_CLIS["claude-code-acp"].version}`);
    expect(st?.state).toBe("ready"); // session/new needed no sign-in
    expect(st?.authMethods).toEqual(["claude-login"]);
    expect(await p.pending("live")).toBeUndefined();
    const turn = await p.waitTurn("live", await p.prompt("live", "hello"), 60_000);
    expect(turn?.error).toMatch(/needs authentication \(auth methods: claude-login\)/);
    expect(await p.pending("live")).toMatchObject({ kind: "authentication", options: ["claude-login"] });
    await expectPromptRefused(p, "live");
    // The adapter does not implement `authenticate` (sign in with `claude /login` instead).
    await expect(p.respond("live", { action: "claude-login" })).rejects.toThrow(
      /authenticate claude-login failed: Internal error: Method not implemented/,
    );
    expect((await p.acpStatus("live"))?.state).toBe("needs_auth");
  });
});
