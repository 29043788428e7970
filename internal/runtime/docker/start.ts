/**
 * Starting a session in a new container through the shared start lifecycle
 * (lifecycle/start.ts): `pre_start` on the host, the work dir mounted or uploaded, the
 * container created (labels, limits, network, tmpfs for the env file) and started, the env
 * file streamed in and the tmux session created; then readiness, hooks and typing, each in
 * the container. A failed start reports the container's last words and removes what it made.
 */
import { readFile, stat } from "node:fs/promises";
import { posix, resolve } from "node:path";
import type Dockerode from "dockerode";
import {
  InvalidNameError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
} from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import { hookDirOf } from "../launch.js";
import {
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
  type StartPlan,
  StartsInProgress,
  stageLocal,
} from "../lifecycle/index.js";
import type { OpOptions, StartConfig, StartReport } from "../provider.js";
import { tarOfFiles, tarOfPath } from "../tar.js";
import type { NudgeQueue } from "../tmux/pane.js";
import {
  type CityContainers,
  CONFIRM_MS,
  LABEL_CITY,
  LABEL_PREFIX,
  LABEL_SESSION,
  LABEL_WORKDIR,
} from "./containers.js";
import { statusOf } from "./engine.js";
import {
  BOOT_SCRIPT,
  envFile,
  HOOK_SCRIPT,
  RUN_DIR,
  SETUP_SCRIPT,
  STDIN_SCRIPT,
  validEnvKey,
} from "./scripts.js";

const HISTORY_LIMIT = 50_000;

/** The starts of one city's sessions. */
export class ContainerStarts {
  private readonly ctr: CityContainers;
  /** The provider's nudge queue: the start's nudge takes its turn with the others. */
  private readonly nudges: NudgeQueue;
  private readonly starts = new StartsInProgress();

  constructor(ctr: CityContainers, nudges: NudgeQueue) {
    this.ctr = ctr;
    this.nudges = nudges;
  }

  /**
   * Creates the session's container: pre_start on the host (failure → HookFailedError,
   * nothing created), work dir mounted or copied, container created (labels, limits,
   * network, tmpfs for the env file) and started, the env file streamed in over exec stdin
   * and the tmux session created; then readiness (with startup dialogs), session_setup,
   * session_setup_script, the nudge and session_live — those in the container.
   * @throws SessionExistsError when the name is live or its container name is taken.
   * @throws SessionDiedDuringStartupError when the program exits before start finishes.
   * @throws ProviderError when no image is configured or the engine refuses (e.g. no such image).
   * Every rejection (including an abort) removes what was created.
   */
  async start(name: string, config: StartConfig, opts: OpOptions = {}): Promise<StartReport> {
    validateSessionName(name);
    opts.signal?.throwIfAborted();
    return this.starts.run(name, () => this.doStart(name, config, opts.signal));
  }

  private async doStart(
    name: string,
    cfg: StartConfig,
    signal: AbortSignal | undefined,
  ): Promise<StartReport> {
    const image = this.ctr.settings.image;
    if (!image) throw new ProviderError("docker", "no image configured (session.docker.image)");
    for (const k of Object.keys(cfg.env)) {
      if (!validEnvKey(k))
        throw new InvalidNameError("environment variable", k, "must match [A-Za-z_][A-Za-z0-9_]*");
    }
    const existing = await this.ctr.engine.inspect(this.ctr.containerName(name), signal);
    if (existing) {
      if (!this.ctr.owns(existing, name) || existing.State.Running) throw new SessionExistsError(name);
      await this.ctr.remove(existing.Id); // a dead session of ours: make room for the new one
    }
    const config: StartConfig = {
      ...cfg,
      workDir: resolve(this.ctr.cityDir, cfg.workDir),
      hookDir: resolve(this.ctr.cityDir, hookDirOf(cfg)),
    };
    // The program's base environment is the image's, never this host's.
    const plan = planStart(name, this.ctr.city, config, { baseEnv: {}, sourceDir: this.ctr.cityDir });
    const limits = limitsFor(config, {
      readyTimeoutMs: this.ctr.settings.readyTimeoutMs,
      setupTimeoutMs: config.setupTimeoutMs ?? this.ctr.settings.hookTimeoutMs,
    });
    return runStart(this.startBackend(image, plan), plan, limits, signal);
  }

  /**
   * The start lifecycle's view of one container being started: `pre_start` runs on the host
   * (the container does not exist yet); once created, hooks and the setup script run inside
   * it, in the work dir, with the session env.
   */
  private startBackend(image: string, plan: StartPlan): StartBackend {
    let id: string | undefined;
    const need = (): string => {
      if (!id) throw new ProviderError("docker", "the container does not exist yet");
      return id;
    };
    return {
      provider: "docker",
      runCommand: async (argv, o) => {
        if (!id)
          return runLocalCommand(argv, {
            ...o,
            env: { ...(process.env as Record<string, string>), ...o.env },
          });
        const hook = argv.length === 3 && argv[1] === "-c";
        const r = hook
          ? await this.ctr.exec(id, {
              argv: ["/bin/sh", "-c", HOOK_SCRIPT, "gc-hook", plan.workDir, argv[2]!],
              signal: o.signal,
              timeoutMs: o.timeoutMs,
            })
          : await this.ctr.exec(id, {
              argv: ["/bin/sh", "-c", STDIN_SCRIPT, "gc-script", plan.workDir],
              stdin: await readFile(argv[argv.length - 1]!, "utf8"),
              signal: o.signal,
              timeoutMs: o.timeoutMs,
            });
        return { exitCode: r.exitCode, signal: null, stdout: r.stdout, stderr: r.stderr };
      },
      stage: async (p) => {
        if (this.ctr.settings.workDir === "mount") await stageLocal("docker", p);
      },
      create: async (p, signal) => {
        // The lifecycle destroys only what a successful create made: a failed or aborted
        // create removes its own container.
        try {
          id = await this.create(p.name, p.config, image, p.workDir, signal);
          if (this.ctr.settings.workDir === "copy") await this.stageCopy(id, p.config, p.workDir);
          signal.throwIfAborted();
          const d = await this.ctr.engine.docker();
          await d.getContainer(id).start();
          const setup = await this.ctr.exec(id, {
            argv: [
              "/bin/sh",
              "-c",
              SETUP_SCRIPT,
              "gc-setup",
              String(this.ctr.settings.cols),
              String(this.ctr.settings.rows),
              String(HISTORY_LIMIT),
              p.workDir,
              ...p.argv,
            ],
            stdin: envFile(p.env),
            signal,
          });
          if (setup.exitCode !== 0) {
            if (!(await this.ctr.alive(id))) throw await this.died(p.name, id);
            throw new ProviderError(
              "docker",
              `creating the tmux session in ${p.name}: ${setup.stderr.trim() || `exit ${setup.exitCode}`}`,
            );
          }
        } catch (e) {
          if (id) await this.ctr.remove(id).catch(() => undefined);
          id = undefined;
          throw e;
        }
      },
      alive: (signal) => this.ctr.programAlive(need(), signal),
      died: () => this.died(plan.name, need()),
      screen: (signal) => this.ctr.channel(need()).screen(signal),
      sendKeys: (keys, signal) => this.ctr.channel(need()).sendKeys(keys, signal),
      nudge: (text, signal) =>
        this.nudges.run(plan.name, () =>
          this.ctr.channel(need()).deliver(plan.name, text, CONFIRM_MS, signal, plan.config.multiline),
        ),
      destroy: async () => {
        if (id) await this.ctr.remove(id);
      },
    };
  }

  private async create(
    name: string,
    cfg: StartConfig,
    image: string,
    workDir: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const s = this.ctr.settings;
    const labels: Record<string, string> = {
      [LABEL_CITY]: this.ctr.owner,
      [LABEL_SESSION]: name,
      [LABEL_WORKDIR]: workDir,
    };
    if (cfg.readyPromptPrefix?.trim()) labels[LABEL_PREFIX] = cfg.readyPromptPrefix;
    const mounts: Dockerode.MountSettings[] = s.mounts.map((m) => ({
      Type: "bind",
      Source: m.source,
      Target: m.target,
      ReadOnly: m.readOnly,
    }));
    if (s.workDir === "mount")
      mounts.unshift({ Type: "bind", Source: workDir, Target: workDir, ReadOnly: false });
    const d = await this.ctr.engine.docker();
    signal?.throwIfAborted();
    try {
      const c = await d.createContainer({
        name: this.ctr.containerName(name),
        Image: image,
        Cmd: ["/bin/sh", "-c", BOOT_SCRIPT],
        Entrypoint: [],
        // Only gc's identity variables: the declared env (secrets included) never appears
        // in `docker inspect`; it reaches the program through the env file (see SETUP_SCRIPT).
        Env: Object.entries(this.identityEnv(name, workDir)).map(([k, v]) => `${k}=${v}`),
        Labels: labels,
        Tty: true,
        OpenStdin: true,
        WorkingDir: workDir,
        ...(s.user ? { User: s.user } : {}),
        HostConfig: {
          NetworkMode: s.network,
          Mounts: mounts,
          Tmpfs: { [RUN_DIR]: "rw,nosuid,nodev,mode=1777" },
          Init: true,
          RestartPolicy: { Name: "no" },
          ...(s.memoryBytes ? { Memory: s.memoryBytes } : {}),
          ...(s.cpus ? { NanoCpus: Math.round(s.cpus * 1e9) } : {}),
          ...(s.pidsLimit ? { PidsLimit: s.pidsLimit } : {}),
        },
      });
      return c.id;
    } catch (e) {
      if (statusOf(e) === 409) throw new SessionExistsError(name, { cause: e });
      if (statusOf(e) === 404) {
        throw new ProviderError(
          "docker",
          `image ${JSON.stringify(image)} not found on the engine (pull or build it first)`,
          {
            cause: e,
          },
        );
      }
      throw this.ctr.engine.wrap(`creating the container of ${name}`, e);
    }
  }

  private async died(name: string, id: string): Promise<SessionDiedDuringStartupError> {
    let detail = "the container exited";
    try {
      const d = await this.ctr.engine.docker();
      const info = await d.getContainer(id).inspect();
      const logs = (await d
        .getContainer(id)
        .logs({ stdout: true, stderr: true, tail: 20 })) as unknown as Buffer;
      const text = stripAnsi(logs.toString("utf8"))
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter((l) => l !== "" && !TMUX_CLIENT_NOISE.test(l))
        .slice(-4)
        .join(" ⏎ ");
      // The container exits 0 when the program ended (see BOOT_SCRIPT), a moment after it.
      const how =
        info.State.Running || info.State.ExitCode === 0
          ? "the program exited"
          : `container exit status ${info.State.ExitCode}`;
      detail = `${how}${text ? `; last output: ${text.slice(0, 300)}` : ""}`;
    } catch {
      // keep the generic detail
    }
    return new SessionDiedDuringStartupError(name, detail);
  }

  /** Copy mode: the host work dir, overlay_dir and copy_files uploaded into the created container. */
  private async stageCopy(id: string, cfg: StartConfig, workDir: string): Promise<void> {
    const ids = this.ctr.ownerIds();
    const parts: Buffer[] = [];
    const hostWork = await stat(workDir).catch(() => undefined);
    parts.push(
      hostWork?.isDirectory()
        ? await tarOfPath(workDir, workDir.slice(1), ids)
        : await tarOfFiles([{ name: `${workDir.slice(1)}/`, type: "directory", mode: 0o755, ...ids }]),
    );
    if (cfg.overlayDir)
      parts.push(await tarOfPath(resolve(this.ctr.cityDir, cfg.overlayDir), workDir.slice(1), ids));
    for (const entry of cfg.copyFiles ?? []) {
      const src = resolve(this.ctr.cityDir, entry.src);
      const st = await stat(src).catch(() => undefined);
      if (!st) throw new ProviderError("docker", `copy_files ${src}: no such file`);
      const rel = posix.normalize(entry.relDst || (st.isDirectory() ? "." : posix.basename(src)));
      if (rel.startsWith("..") || posix.isAbsolute(rel)) {
        throw new InvalidNameError("copy destination", entry.relDst, "must stay inside the work dir");
      }
      parts.push(await tarOfPath(src, posix.join(workDir.slice(1), rel), ids));
    }
    for (const tar of parts) await this.ctr.engine.putArchive(id, tar, "/");
  }

  private identityEnv(name: string, workDir: string): Record<string, string> {
    return { GC_SESSION: name, GC_CITY: this.ctr.city, GC_DIR: workDir };
  }
}

/** What the container's console client (tmux attach) itself prints when it ends or cannot attach. */
const TMUX_CLIENT_NOISE =
  /^(\[exited\]|\[server exited\]|\[lost server\]|no sessions|no server running\b.*|can't find session\b.*)$/;

function stripAnsi(s: string): string {
  return s.replace(/\x1b\[[0-9;?>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r/g, "");
}
