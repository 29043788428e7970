/**
 * Conformance target for the ACP provider. Every session program is the ACP test agent
 * (test/fixtures/acp/agent.mjs, written on the official SDK's agent side) in bridge mode:
 * it runs the case's POSIX-sh program as its "model" — prompts go to the program's stdin,
 * its output comes back as agent message chunks, `session/cancel` becomes SIGINT — so each
 * case observes the real ACP round trip through the real holder. A start config's `prompt`
 * (prompt_mode arg/flag) is argv as on every provider; `prompt_mode: nudge` makes it the
 * first turn. The foreign city shares the state dir.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { shellQuote } from "../../internal/base/shell-quote.js";
import { pidAlive } from "../../internal/proc/kill.js";
import { AcpProvider } from "../../internal/runtime/acp/index.js";
import type { StartConfig } from "../../internal/runtime/provider.js";
import { type ConformanceTarget, readLocalFile } from "../harness.js";
import { makeHolderDir } from "../holder-dir.js";

/** The test agent, found from the source tree or from `dist/`. */
export function testAgentPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const p = join(dir, "test", "fixtures", "acp", "agent.mjs");
    if (existsSync(p)) return p;
    dir = resolve(dir, "..");
  }
  throw new Error("test/fixtures/acp/agent.mjs not found (gc conformance acp needs the repository checkout)");
}

/** The command that runs the ACP test agent (node by absolute path, quoted for sh). */
export function testAgentCommand(): string {
  return `exec ${shellQuote(process.execPath)} ${shellQuote(testAgentPath())}`;
}

/** An ACP provider (city `conformance`) over a fresh temp state dir, plus a foreign city beside it. */
export async function createTarget(): Promise<ConformanceTarget> {
  const dir = await makeHolderDir("gc-acp-");
  const provider = new AcpProvider({ city: "conformance", stateDir: dir.stateDir });
  const foreign = new AcpProvider({ city: "someone-else", stateDir: dir.stateDir });
  const agent = testAgentCommand();
  const bridged = (command: string, workDir: string, extra?: Partial<StartConfig>): StartConfig => ({
    workDir,
    ...extra,
    command: agent,
    env: { ...extra?.env, GC_ACP_TEST_SH: command },
  });
  return {
    label: "acp",
    provider,
    namePrefix: `acp${process.pid}-`,
    async makeConfig(command, extra) {
      return bridged(command, await dir.workDir(), extra);
    },
    readFile: (_name, cfg, rel) => readLocalFile(cfg.workDir, rel),
    pidAlive: (_name, pid) => pidAlive(pid),
    async createForeign(name) {
      await foreign.start(name, bridged("exec sleep 300", await dir.workDir("foreign")));
      return () => foreign.stop(name);
    },
    cleanup: () => dir.teardown([provider, foreign]),
  };
}
