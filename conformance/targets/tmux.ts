/**
 * Conformance target for the tmux provider: a private tmux server (unique socket) and a
 * fresh city per run, temp work dirs, pid checks through /proc, and foreign sessions made
 * with raw tmux on the same socket. `cleanup` kills the server and removes every temp dir.
 */
import { mkdir, mkdtemp, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pidAlive } from "../../internal/proc/kill.js";
import { run } from "../../internal/proc/run.js";
import { createProvider, tmuxSessionName } from "../../internal/runtime/tmux/index.js";
import type { ConformanceTarget } from "../harness.js";
import { readLocalFile } from "../harness.js";

/** A tmux target on a socket no other run uses (`gc-conf-<pid>-<rand>`). */
export async function createTarget(): Promise<ConformanceTarget> {
  const rand = Math.random().toString(36).slice(2, 8);
  const socket = `gc-conf-${process.pid}-${rand}`;
  const root = await mkdtemp(join(tmpdir(), "gc-tmux-conf-"));
  const stateDir = join(root, ".gc");
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const provider = createProvider({
    city: `conf-${rand}`,
    cityDir: root,
    stateDir,
    settings: { socket },
  });
  const tmux = provider.tmuxArgv();
  // Connecting starts the private server; remember its socket file to remove it at the end.
  let socketPath: string | undefined;
  try {
    [socketPath] = await provider.control.command(["display-message", "-p", "#{socket_path}"]);
  } catch (e) {
    await provider.close();
    await run([...tmux, "kill-server"], { timeoutMs: 10_000 }).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  let dirs = 0;
  return {
    label: "tmux",
    provider,
    // The dot exercises the reversible gc-name → tmux-name mapping in every case.
    namePrefix: `tm.${process.pid}.`,
    async makeConfig(command, extra) {
      const workDir = join(root, `work-${++dirs}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {}, ...extra };
    },
    readFile: (_name, cfg, rel) => readLocalFile(cfg.workDir, rel),
    pidAlive: (_name, pid) => pidAlive(pid),
    async createForeign(name) {
      // Exactly the tmux name this provider would use, but without this city's tag.
      const r = await run([...tmux, "new-session", "-d", "-s", tmuxSessionName(name), "--", "sleep", "300"], {
        timeoutMs: 10_000,
      });
      if (r.exitCode !== 0) throw new Error(`creating foreign session: ${r.stderr}`);
      return async () => {
        await run([...tmux, "kill-session", "-t", `=${tmuxSessionName(name)}`], { timeoutMs: 10_000 });
      };
    },
    async cleanup() {
      await provider.close();
      await run([...tmux, "kill-server"], { timeoutMs: 10_000 }).catch(() => undefined);
      if (socketPath) await unlink(socketPath).catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
}
