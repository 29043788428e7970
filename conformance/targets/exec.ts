/**
 * Conformance target for an exec session script (`gc conformance exec:PATH`). The provider
 * gets a private temp state dir (so the script's backend — e.g. the reference script's tmux
 * server — is private to the run) and each config a fresh temp work dir. Process checks and
 * foreign sessions are offered when the script's `capabilities` says its backend is local
 * (and, for foreign sessions, gives the tmux socket arguments). Session files are read from
 * the local work dir when the backend is local — said by `capabilities`, or, for a script
 * without `copy-from` that does not say, probed with a marker file — else through
 * `copy-from`; a remote script without `copy-from` skips the cases that read files, saying why.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { UsageError } from "../../internal/base/errors.js";
import { pidAlive } from "../../internal/proc/kill.js";
import { run } from "../../internal/proc/run.js";
import { createProvider } from "../../internal/runtime/exec/index.js";
import type { StartConfig } from "../../internal/runtime/provider.js";
import { type ConformanceTarget, readLocalFile } from "../harness.js";

/** tmux name of a session, as the reference script encodes it (`_` → `_u`, `.` → `_d`). */
function tmuxName(name: string): string {
  return name.replaceAll("_", "_u").replaceAll(".", "_d");
}

/** How long the locality probe waits for its marker file. */
const LOCAL_PROBE_MS = 10_000;

/**
 * True when a session started by `provider` writes into a local work dir: starts `name`
 * writing a random marker into `workDir` and polls for it locally. Always stops the session.
 */
async function probeLocal(
  provider: Awaited<ReturnType<typeof createProvider>>,
  workDir: string,
  name: string,
): Promise<boolean> {
  await mkdir(workDir, { recursive: true });
  const marker = randomBytes(8).toString("hex");
  try {
    await provider.start(name, {
      command: `printf '%s' ${marker} > .gc-local-probe; exec sleep 300`,
      workDir,
      env: {},
    });
    const deadline = Date.now() + LOCAL_PROBE_MS;
    while (Date.now() < deadline) {
      if ((await readLocalFile(workDir, ".gc-local-probe")) === marker) return true;
      await sleep(50);
    }
    return false;
  } finally {
    await provider.stop(name).catch(() => undefined);
  }
}

/**
 * A target for the script at `scriptPath` (absolute, relative to the current directory, or
 * on PATH).
 * @throws UsageError without a script; ProviderError when the script cannot be used.
 */
export async function createTarget(scriptPath?: string): Promise<ConformanceTarget> {
  if (!scriptPath) throw new UsageError('exec needs a script: "exec:<path>"');
  // Short root: the reference script puts its tmux socket in the state dir.
  const root = await mkdtemp(join(tmpdir(), "gcx-"));
  const stateDir = join(root, "s");
  const workRoot = join(root, "w");
  await mkdir(stateDir, { mode: 0o700 });
  await mkdir(workRoot);
  const city = `conf${process.pid}`;
  const namePrefix = `ex${process.pid}-`;
  let provider: Awaited<ReturnType<typeof createProvider>>;
  try {
    provider = await createProvider({ city, cityDir: process.cwd(), stateDir, arg: scriptPath });
  } catch (e) {
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  const backend = provider.probe.backend ?? {};
  const canCopyFrom = provider.supports("copy-from");
  // A v2 script says where its sessions run; a v1 script (or a v2 one that does not say) and
  // lacks copy-from is probed: a session writes a marker into a local work dir.
  let local = backend.local === true;
  if (backend.local === undefined && !canCopyFrom) {
    try {
      local = await probeLocal(provider, join(workRoot, "local-probe"), `${namePrefix}local-probe`);
    } catch (e) {
      await provider.close();
      await rm(root, { recursive: true, force: true });
      throw e;
    }
  }
  const tmuxArgs =
    backend.type === "tmux" &&
    Array.isArray(backend.tmux_args) &&
    backend.tmux_args.every((a) => typeof a === "string")
      ? (backend.tmux_args as string[])
      : undefined;
  const tmux = (...args: string[]) => run(["tmux", ...(tmuxArgs ?? []), "-f", "/dev/null", ...args]);
  let dirs = 0;

  const target: ConformanceTarget = {
    label: provider.name,
    provider,
    namePrefix,
    async makeConfig(command: string, extra?: Partial<StartConfig>): Promise<StartConfig> {
      const workDir = join(workRoot, `w${++dirs}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {}, ...extra };
    },
    protocol: provider.probe.protocol,
    ...(local
      ? { readFile: (_name: string, config: StartConfig, rel: string) => readLocalFile(config.workDir, rel) }
      : canCopyFrom
        ? {
            async readFile(name: string, _config: StartConfig, rel: string) {
              try {
                return await provider.copyFrom(name, rel);
              } catch {
                return undefined;
              }
            },
          }
        : {
            noFilesReason:
              "the script lacks copy-from and its sessions do not write to this machine's work dirs (probed: a marker file never appeared locally)",
          }),
    ...(local ? { pidAlive: async (_name: string, pid: number) => pidAlive(pid) } : {}),
    ...(tmuxArgs
      ? {
          async createForeign(name: string) {
            // Same tmux server, no ownership tag: the provider must never see or touch it.
            const r = await tmux("new-session", "-d", "-s", tmuxName(name), "sleep", "300");
            if (r.exitCode !== 0) throw new Error(`creating foreign session ${name}: ${r.stderr.trim()}`);
            return async () => {
              await tmux("kill-session", "-t", `=${tmuxName(name)}`);
            };
          },
        }
      : {}),
    async cleanup() {
      try {
        const left = await provider.listRunning(namePrefix);
        await Promise.all(left.map((n) => provider.stop(n).catch(() => undefined)));
      } catch {
        // the backend may already be gone
      }
      if (tmuxArgs) await tmux("kill-server").catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
  return target;
}
