/**
 * The agent CLIs gc is checked against, pinned, and how to install them into a cache
 * directory outside the repository (shared by the live test and the screen recorder).
 * Nothing here touches the network except `npm`.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Pinned versions (the ones docs/config.md and the screen fixtures were checked against). */
export const AGENT_CLIS = {
  claude: {
    pkg: "@anthropic-ai/claude-code",
    version: "2.1.332",
    bin: "claude",
    // npm blocks install scripts; this one links the native binary for the platform.
    postinstall: ["node", "install.cjs"],
  },
  codex: { pkg: "@openai/codex", version: "0.171.0", bin: "codex", postinstall: undefined },
  gemini: { pkg: "@google/gemini-cli", version: "0.61.0", bin: "gemini", postinstall: undefined },
  // ACP adapters for the claude-acp and codex-acp presets (test/agents/acp-live.e2e.test.ts).
  "claude-code-acp": {
    pkg: "@zed-industries/claude-code-acp",
    version: "0.16.2",
    bin: "claude-code-acp",
    postinstall: undefined,
  },
  "codex-acp": {
    pkg: "@zed-industries/codex-acp",
    version: "0.16.0",
    bin: "codex-acp",
    postinstall: undefined,
  },
  // Checked for the copilot and opencode presets (recorded screens only, no live test).
  copilot: { pkg: "@github/copilot", version: "1.0.102", bin: "copilot", postinstall: undefined },
  // npm blocks install scripts; this one links the platform's native binary.
  opencode: {
    pkg: "opencode-ai",
    version: "1.18.33",
    bin: "opencode",
    postinstall: ["node", "postinstall.mjs"],
  },
};

/** `$GC_AGENT_CLI_CACHE`, else `$XDG_CACHE_HOME/gc-agent-clis`, else `~/.cache/gc-agent-clis`. */
export function agentCliCacheDir() {
  if (process.env.GC_AGENT_CLI_CACHE) return process.env.GC_AGENT_CLI_CACHE;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "gc-agent-clis");
}

/**
 * Installs the pinned CLI `name` into the cache (reused when already complete) and returns
 * the path of its executable. A half-finished install is never reused: it is built in a
 * temporary directory and renamed into place with a completion marker.
 */
export async function installAgentCli(name, cacheDir = agentCliCacheDir()) {
  const cli = AGENT_CLIS[name];
  if (!cli) throw new Error(`unknown agent CLI ${name}`);
  const dir = join(cacheDir, `${cli.pkg.replace("/", "+")}@${cli.version}`);
  const bin = join(dir, "node_modules", ".bin", cli.bin);
  if (existsSync(join(dir, ".gc-complete")) && existsSync(bin)) return { bin, dir, cached: true };
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp, { recursive: true });
  try {
    await run(
      "npm",
      ["install", "--no-audit", "--no-fund", "--no-save", "--prefix", tmp, `${cli.pkg}@${cli.version}`],
      { env: { ...process.env, npm_config_update_notifier: "false" }, timeout: 600_000 },
    );
    if (cli.postinstall) {
      await run(cli.postinstall[0], cli.postinstall.slice(1), {
        cwd: join(tmp, "node_modules", ...cli.pkg.split("/")),
        timeout: 300_000,
      });
    }
    writeFileSync(join(tmp, ".gc-complete"), `${cli.pkg}@${cli.version}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  return { bin, dir, cached: false };
}

/** Why npm cannot be used (a reason to skip), or `undefined` when the registry answers. */
export async function npmUnreachable() {
  try {
    await run("npm", ["view", `${AGENT_CLIS.codex.pkg}@${AGENT_CLIS.codex.version}`, "version"], {
      timeout: 60_000,
    });
    return undefined;
  } catch (e) {
    return `npm registry unreachable: ${String(e instanceof Error ? e.message : e).split("\n")[0]}`;
  }
}

/**
 * A private HOME for one agent run: Claude Code's onboarding marked done (with a fresh
 * HOME it otherwise calls home before drawing anything and exits when offline). Nothing
 * else is seeded: every other first-run screen is the real one.
 */
export function seedAgentHome(home) {
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, ".claude.json"),
    `${JSON.stringify({ hasCompletedOnboarding: true, theme: "dark" })}\n`,
  );
}
