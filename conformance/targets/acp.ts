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
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { shellQuote } from "../../internal/config/resolve.js";
import { killPids, pidAlive } from "../../internal/proc/kill.js";
import { AcpProvider } from "../../internal/runtime/acp/index.js";
import type { StartConfig } from "../../internal/runtime/provider.js";
import { type ConformanceTarget, readLocalFile } from "../harness.js";

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

async function holdersUnder(root: string): Promise<number[]> {
  const out: number[] = [];
  for (const e of await readdir("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const args = (await readFile(`/proc/${e}/cmdline`, "utf8")).split("\0");
      if (args.some((a) => a.endsWith("holder.js")) && args.some((a) => a.startsWith(root)))
        out.push(Number(e));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** An ACP provider (city `conformance`) over a fresh temp state dir, plus a foreign city beside it. */
export async function createTarget(): Promise<ConformanceTarget> {
  const root = await mkdtemp(join(tmpdir(), "gc-acp-"));
  const stateDir = join(root, "state");
  await mkdir(stateDir, { mode: 0o700 });
  const provider = new AcpProvider({ city: "conformance", stateDir });
  const foreign = new AcpProvider({ city: "someone-else", stateDir });
  const agent = testAgentCommand();
  let dirs = 0;
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
      const workDir = join(root, `work-${++dirs}`);
      await mkdir(workDir, { recursive: true });
      return bridged(command, workDir, extra);
    },
    readFile: (_name, cfg, rel) => readLocalFile(cfg.workDir, rel),
    pidAlive: (_name, pid) => pidAlive(pid),
    async createForeign(name) {
      const workDir = join(root, `foreign-${++dirs}`);
      await mkdir(workDir, { recursive: true });
      await foreign.start(name, bridged("exec sleep 300", workDir));
      return () => foreign.stop(name);
    },
    async cleanup() {
      for (const p of [provider, foreign]) {
        for (const s of await p.snapshot("").catch(() => [])) await p.stop(s.name).catch(() => undefined);
      }
      await killPids(await holdersUnder(root));
      await rm(root, { recursive: true, force: true });
    },
  };
}
