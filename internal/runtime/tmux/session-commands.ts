/**
 * Files and commands beside the city's tmux sessions, run on this host: copying into a
 * session's work dir, `session_live` hooks, and commands run with a session's declared
 * environment (read back from the session, never from a tmux option). Used by the tmux
 * provider (provider.ts).
 */
import { stat } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { resolve } from "node:path";
import { ProviderError, SessionNotFoundError } from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import { OP_TIMEOUT_MS, run, runHooks } from "../../proc/run.js";
import { hookDirOf, sessionEnv } from "../launch.js";
import { copyInto, limitsFor } from "../lifecycle/index.js";
import type { ExecCommandOptions, ExecCommandResult, OpOptions, StartConfig } from "../provider.js";
import type { CityServer } from "./city-server.js";
import { fromHex } from "./quote.js";
import { isAbsent, isLive } from "./sessions.js";

/** Copies, live hooks and commands of the city's tmux sessions. */
export class SessionCommands {
  private readonly srv: CityServer;

  constructor(srv: CityServer) {
    this.srv = srv;
  }

  /**
   * Copies `src` (file or directory) to `relDst` under the session's work dir.
   * Best-effort: resolves when the session or `src` is missing.
   * @throws InvalidNameError when `relDst` leaves the work dir.
   */
  async copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s?.workDir) return;
    const exists = await stat(src).then(
      () => true,
      () => false,
    );
    if (!exists) return;
    await copyInto(src, s.workDir, relDst);
  }

  /** Runs `config.sessionLive` (hook env, hook dir) against a running session. Resolves when missing. */
  async runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s) || !config.sessionLive?.length) return;
    const workDir = s.workDir ?? resolve(this.srv.cityDir, config.workDir);
    await runHooks("session_live", config.sessionLive, {
      cwd: resolve(this.srv.cityDir, hookDirOf(config)),
      env: this.hookEnv(name, config, workDir),
      signal: opts.signal,
      timeoutMs: limitsFor(config).setupTimeoutMs,
    });
  }

  /**
   * Runs `argv` directly (no shell) in the session's work dir with the session's declared
   * environment (plus `opts.env`). A missing program yields exit code 127.
   * @throws SessionNotFoundError when the session is missing.
   */
  async execCommand(
    name: string,
    argv: readonly string[],
    opts: ExecCommandOptions = {},
  ): Promise<ExecCommandResult> {
    validateSessionName(name);
    if (argv.length === 0) throw new ProviderError("tmux", "execCommand: empty argv");
    const s = await this.srv.find(name, opts.signal);
    if (!s) throw new SessionNotFoundError(name);
    let declared: Record<string, string>;
    try {
      declared = await this.declaredEnv(s.id, opts.signal);
    } catch (e) {
      if (isAbsent(e)) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw e;
    }
    const workDir = s.workDir ?? this.srv.cityDir;
    const env = {
      ...sessionEnv(process.env, name, { env: declared, workDir }, this.srv.envCity),
      ...opts.env,
    };
    try {
      const r = await run(argv, {
        cwd: opts.cwd ? resolve(workDir, opts.cwd) : workDir,
        env,
        stdin: opts.stdin,
        signal: opts.signal,
        timeoutMs: opts.timeoutMs ?? OP_TIMEOUT_MS,
        keepOutputOnCut: true,
      });
      const code = r.exitCode ?? 128 + (r.signal ? (osConstants.signals[r.signal] ?? 0) : 0);
      return { exitCode: code, stdout: r.stdout, stderr: r.stderr };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") {
        return { exitCode: 127, stdout: "", stderr: `${argv[0]}: command not found\n` };
      }
      throw e;
    }
  }

  /**
   * The declared env of session `id`: names from `@gc_envkeys`, values from the session
   * environment (where `new-session -e` put them), all in one command-list round trip.
   * Values never sit in a tmux option, so `show-options` cannot reveal a secret.
   */
  private async declaredEnv(id: string, signal: AbortSignal | undefined): Promise<Record<string, string>> {
    const [hex] = await this.srv.tmux(["show-options", "-qv", "-t", id, "@gc_envkeys"], {
      signal,
      retry: true,
    });
    const parsed: unknown = hex ? JSON.parse(fromHex(hex.trim()) ?? "[]") : [];
    const keys = Array.isArray(parsed) ? parsed.filter((k): k is string => typeof k === "string") : [];
    if (keys.length === 0) return {};
    // `show-environment` fails for an unset name and would end the list there: `-g`-less
    // lookups of keys we set ourselves are always present.
    const replies = await this.srv.client.commandList(
      keys.map((k) => ["show-environment", "-t", id, k]),
      { signal, create: false },
    );
    const env: Record<string, string> = {};
    keys.forEach((k, i) => {
      const text = (replies[i] ?? []).join("\n");
      if (text.startsWith(`${k}=`)) env[k] = text.slice(k.length + 1);
    });
    return env;
  }

  private hookEnv(name: string, cfg: StartConfig, workDir: string): NodeJS.ProcessEnv {
    return {
      ...sessionEnv(process.env, name, { env: cfg.env, workDir }, this.srv.envCity),
      GC_TMUX_SOCKET: this.srv.settings.socketLabel,
    };
  }
}
