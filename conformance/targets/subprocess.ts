/**
 * Conformance target for the subprocess provider: a temp city (state dir + one fresh work
 * dir per session) on real holders. "Foreign on the same backend" is another city's
 * holder in the SAME state directory — the only way two cities' sessions can ever meet on
 * this backend (state dirs are per city), so the ownership tag is what must keep them apart.
 * Cleanup stops every session of both cities and kills any holder still serving the temp dir.
 */
import { pidAlive } from "../../internal/proc/kill.js";
import { SubprocessProvider } from "../../internal/runtime/subprocess/index.js";
import { type ConformanceTarget, readLocalFile } from "../harness.js";
import { makeHolderDir } from "../holder-dir.js";

/** A subprocess provider (city `conformance`) over a fresh temp state dir, plus a foreign city beside it. */
export async function createTarget(): Promise<ConformanceTarget> {
  const dir = await makeHolderDir("gc-sp-");
  const provider = new SubprocessProvider({ city: "conformance", stateDir: dir.stateDir });
  const foreign = new SubprocessProvider({ city: "someone-else", stateDir: dir.stateDir });
  return {
    label: "subprocess",
    provider,
    namePrefix: `sp${process.pid}-`,
    async makeConfig(command, extra) {
      return { command, workDir: await dir.workDir(), env: {}, ...extra };
    },
    readFile: (_name, cfg, rel) => readLocalFile(cfg.workDir, rel),
    pidAlive: (_name, pid) => pidAlive(pid),
    async createForeign(name) {
      await foreign.start(name, {
        command: "exec sleep 300",
        workDir: await dir.workDir("foreign"),
        env: {},
      });
      return () => foreign.stop(name);
    },
    cleanup: () => dir.teardown([provider, foreign]),
  };
}
