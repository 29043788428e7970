/**
 * Conformance target for the subprocess provider: a temp city (state dir + one fresh work
 * dir per session) on real holders. "Foreign on the same backend" is another city's
 * holder in the SAME state directory — the only way two cities' sessions can ever meet on
 * this backend (state dirs are per city), so the ownership tag is what must keep them apart.
 * Cleanup stops every session of both cities and kills any holder still serving the temp dir.
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killPids, pidAlive } from "../../internal/proc/kill.js";
import { SubprocessProvider } from "../../internal/runtime/subprocess/index.js";
import { type ConformanceTarget, readLocalFile } from "../harness.js";

/** Pids of holder processes whose command line mentions `root`. */
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

/** A subprocess provider (city `conformance`) over a fresh temp state dir, plus a foreign city beside it. */
export async function createTarget(): Promise<ConformanceTarget> {
  const root = await mkdtemp(join(tmpdir(), "gc-sp-"));
  const stateDir = join(root, "state");
  await mkdir(stateDir, { mode: 0o700 });
  const provider = new SubprocessProvider({ city: "conformance", stateDir });
  const foreign = new SubprocessProvider({ city: "someone-else", stateDir });
  let dirs = 0;
  return {
    label: "subprocess",
    provider,
    namePrefix: `sp${process.pid}-`,
    async makeConfig(command, extra) {
      const workDir = join(root, `work-${++dirs}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {}, ...extra };
    },
    readFile: (_name, cfg, rel) => readLocalFile(cfg.workDir, rel),
    pidAlive: (_name, pid) => pidAlive(pid),
    async createForeign(name) {
      const workDir = join(root, `foreign-${++dirs}`);
      await mkdir(workDir, { recursive: true });
      await foreign.start(name, { command: "exec sleep 300", workDir, env: {} });
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
