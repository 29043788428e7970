/**
 * DockerProvider: one container per gc session through the Docker Engine API (dockerode).
 * The container's program runs in a tmux session inside it, so the rendered terminal
 * (peek, activity, keys) outlives any controller; ownership and identity are container
 * labels, metadata are files in the container, and stop removes the container.
 * Built by `createProvider` (index.ts) for the composition root and `gc conformance`.
 */
import { readFile, stat } from "node:fs/promises";
import { posix, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type Dockerode from "dockerode";
import {
  HookFailedError,
  InvalidNameError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
  SessionNotFoundError,
} from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import { terminalText } from "../delivery.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { ownerKey } from "../identity.js";
import { hookDirOf } from "../launch.js";
import {
  execKillable,
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
  type StartPlan,
  StartsInProgress,
  stageLocal,
} from "../lifecycle/index.js";
import {
  type BackendShutdownProvider,
  type CommandProvider,
  type ExecCommandOptions,
  type ExecCommandResult,
  flattenContent,
  type IdleResult,
  type IdleWaitProvider,
  type NudgeContent,
  type NudgeOptions,
  type OpOptions,
  type OutputWatchProvider,
  type Provider,
  type ProviderCapabilities,
  type SessionEnd,
  type SessionEndProvider,
  type SessionOutputWatch,
  type StartConfig,
  type StartReport,
} from "../provider.js";
import { tarOfFiles, tarOfPath, untarFirstFile } from "../tar.js";
import { type Channel, ChannelPool } from "../tmux/channels.js";
import { TmuxConnectionError } from "../tmux/errors.js";
import { remoteGate } from "../tmux/gate.js";
import { isGone, NudgeQueue, validateKeys } from "../tmux/pane.js";
import { dockerTransport } from "./channel.js";
import { Engine, type ExecResult, statusOf } from "./engine.js";
import {
  BOOT_SCRIPT,
  COMM_SCRIPT,
  EXEC_SCRIPT,
  envFile,
  HOOK_SCRIPT,
  META_DIR,
  RUN_DIR,
  SETUP_SCRIPT,
  STDIN_SCRIPT,
  TMUX_SESSION,
  validEnvKey,
} from "./scripts.js";
import { type DockerSettings, resolveSettings } from "./settings.js";

/** Label holding the owning city's identity. */
export const LABEL_CITY = "gc.city";
/** Label holding the gc session name. */
export const LABEL_SESSION = "gc.session";
/** Label holding the work dir inside the container. */
export const LABEL_WORKDIR = "gc.work_dir";
/** Label holding the declared ready prompt prefix (for idle detection). */
export const LABEL_PREFIX = "gc.ready_prefix";

const IDLE_QUIET_MS = 600;
/** How long one Enter of a nudge may take to show its effect. */
const CONFIRM_MS = 1_500;
const HISTORY_LIMIT = 50_000;

/** Container name for session `name` of the city owning `owner` (exact; never a prefix match). */
export function containerName(owner: string, name: string): string {
  const slug = owner.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 48);
  return `gc-${slug}-${name}`;
}

type Info = Dockerode.ContainerInspectInfo;

/** Options for {@link DockerProvider}. */
export interface DockerProviderOptions extends ProviderFactoryOptions {}

/**
 * The docker {@link Provider}. Every method validates the session name first, looks the
 * container up by its exact name and acts only when its labels say this city owns it:
 * containers of other cities (or anybody's else) are never listed, read, written or removed.
 */
export class DockerProvider
  implements
    Provider,
    IdleWaitProvider,
    OutputWatchProvider,
    CommandProvider,
    BackendShutdownProvider,
    SessionEndProvider
{
  readonly name = "docker";
  readonly settings: DockerSettings;
  readonly engine: Engine;
  /** The city's ownership key (`<name>-<id>`, identity.ts): labels, container names, filters. */
  private readonly owner: string;
  /** The city's name, for humans (`GC_CITY` in sessions). */
  private readonly city: string;
  private readonly cityDir: string;
  private readonly starts = new StartsInProgress();
  private readonly nudges = new NudgeQueue();
  /** One long-lived tmux control stream per container (by container id). */
  private readonly channels: ChannelPool;

  constructor(opts: DockerProviderOptions) {
    this.owner = ownerKey(opts.city, opts.cityId);
    this.city = opts.city;
    this.cityDir = opts.cityDir;
    this.settings = resolveSettings(opts.settings, process.env, opts.cityDir);
    this.engine = new Engine(this.settings.socketPath);
    this.channels = new ChannelPool((id) => ({
      transport: dockerTransport(this.engine, id, this.settings.user),
      attach: TMUX_SESSION,
      commandTimeoutMs: this.settings.hookTimeoutMs,
      gate: remoteGate(`docker:${id}`),
    }));
  }

  /** The control channel into container `id` (made on first use, kept until the container goes). */
  channel(id: string): Channel {
    return this.channels.get(id);
  }

  /** The ownership label value (`gc.city=<owner>`) every container of this city carries. */
  get ownerLabel(): string {
    return `${LABEL_CITY}=${this.owner}`;
  }

  /** The exact container name of session `name`. */
  containerName(name: string): string {
    return containerName(this.owner, name);
  }

  /**
   * What a container with tmux inside can do; no exit status (the container's is tmux's),
   * but how a session ended, its program or from outside, is told by {@link sessionEnd}.
   */
  capabilities(): ProviderCapabilities {
    return {
      executes: true,
      attach: true,
      attachDetect: true,
      activity: true,
      interaction: false,
      idleWait: true,
      processNames: true,
      copyTo: true,
      runLive: true,
      exitStatus: false,
      exec: true,
    };
  }

  // ---- lifecycle -------------------------------------------------------------------------

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
    const image = this.settings.image;
    if (!image) throw new ProviderError("docker", "no image configured (session.docker.image)");
    for (const k of Object.keys(cfg.env)) {
      if (!validEnvKey(k))
        throw new InvalidNameError("environment variable", k, "must match [A-Za-z_][A-Za-z0-9_]*");
    }
    const existing = await this.engine.inspect(this.containerName(name), signal);
    if (existing) {
      if (!this.owns(existing, name) || existing.State.Running) throw new SessionExistsError(name);
      await this.remove(existing.Id); // a dead session of ours: make room for the new one
    }
    const config: StartConfig = {
      ...cfg,
      workDir: resolve(this.cityDir, cfg.workDir),
      hookDir: resolve(this.cityDir, hookDirOf(cfg)),
    };
    // The program's base environment is the image's, never this host's.
    const plan = planStart(name, this.city, config, { baseEnv: {}, sourceDir: this.cityDir });
    const limits = limitsFor(config, {
      readyTimeoutMs: this.settings.readyTimeoutMs,
      setupTimeoutMs: config.setupTimeoutMs ?? this.settings.hookTimeoutMs,
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
          ? await this.exec(id, {
              argv: ["/bin/sh", "-c", HOOK_SCRIPT, "gc-hook", plan.workDir, argv[2]!],
              signal: o.signal,
              timeoutMs: o.timeoutMs,
            })
          : await this.exec(id, {
              argv: ["/bin/sh", "-c", STDIN_SCRIPT, "gc-script", plan.workDir],
              stdin: await readFile(argv[argv.length - 1]!, "utf8"),
              signal: o.signal,
              timeoutMs: o.timeoutMs,
            });
        return { exitCode: r.exitCode, signal: null, stdout: r.stdout, stderr: r.stderr };
      },
      stage: async (p) => {
        if (this.settings.workDir === "mount") await stageLocal("docker", p);
      },
      create: async (p, signal) => {
        // The lifecycle destroys only what a successful create made: a failed or aborted
        // create removes its own container.
        try {
          id = await this.create(p.name, p.config, image, p.workDir, signal);
          if (this.settings.workDir === "copy") await this.stageCopy(id, p.config, p.workDir);
          signal.throwIfAborted();
          const d = await this.engine.docker();
          await d.getContainer(id).start();
          const setup = await this.exec(id, {
            argv: [
              "/bin/sh",
              "-c",
              SETUP_SCRIPT,
              "gc-setup",
              String(this.settings.cols),
              String(this.settings.rows),
              String(HISTORY_LIMIT),
              p.workDir,
              ...p.argv,
            ],
            stdin: envFile(p.env),
            signal,
          });
          if (setup.exitCode !== 0) {
            if (!(await this.alive(id))) throw await this.died(p.name, id);
            throw new ProviderError(
              "docker",
              `creating the tmux session in ${p.name}: ${setup.stderr.trim() || `exit ${setup.exitCode}`}`,
            );
          }
        } catch (e) {
          if (id) await this.remove(id).catch(() => undefined);
          id = undefined;
          throw e;
        }
      },
      alive: (signal) => this.programAlive(need(), signal),
      died: () => this.died(plan.name, need()),
      screen: (signal) => this.channel(need()).screen(signal),
      sendKeys: (keys, signal) => this.channel(need()).sendKeys(keys, signal),
      nudge: (text, signal) =>
        this.nudges.run(plan.name, () =>
          this.channel(need()).deliver(plan.name, text, CONFIRM_MS, signal, plan.config.multiline),
        ),
      destroy: async () => {
        if (id) await this.remove(id);
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
    const s = this.settings;
    const labels: Record<string, string> = {
      [LABEL_CITY]: this.owner,
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
    const d = await this.engine.docker();
    signal?.throwIfAborted();
    try {
      const c = await d.createContainer({
        name: this.containerName(name),
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
      throw this.engine.wrap(`creating the container of ${name}`, e);
    }
  }

  private async died(name: string, id: string): Promise<SessionDiedDuringStartupError> {
    let detail = "the container exited";
    try {
      const d = await this.engine.docker();
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

  /**
   * Removes the session's container (SIGKILL to every process in it, then the container
   * and its filesystem). Idempotent; containers this city does not own are never touched.
   */
  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    this.nudges.forget(name);
    const c = await this.find(name, opts.signal);
    if (c) await this.remove(c.Id);
  }

  private async remove(id: string): Promise<void> {
    await this.channels.drop(id);
    const d = await this.engine.docker();
    for (let i = 0; ; i++) {
      try {
        await d.getContainer(id).remove({ force: true, v: true });
        return;
      } catch (e) {
        const st = statusOf(e);
        if (st === 404) return;
        // 409: a removal already in progress (a concurrent stop); wait for it to finish.
        if (st !== 409 || i >= 100) throw this.engine.wrap(`removing container ${id.slice(0, 12)}`, e);
        await sleep(100);
      }
    }
  }

  /** Ctrl-C to the program. Best-effort: resolves when missing or not running. */
  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    await this.sendKeys(name, ["C-c"], opts);
  }

  /** True when the session's container is ours and running. */
  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    return c?.State.Running === true;
  }

  /**
   * This city's running sessions whose names start with `prefix`, from one label-filtered
   * container listing. @throws when the engine cannot be reached.
   */
  async listRunning(prefix: string, opts: OpOptions = {}): Promise<string[]> {
    const d = await this.engine.docker();
    let list: Dockerode.ContainerInfo[];
    try {
      list = (await d.listContainers({
        all: false,
        filters: { label: [this.ownerLabel], status: ["running"] },
        abortSignal: opts.signal,
      } as never)) as unknown as Dockerode.ContainerInfo[];
    } catch (e) {
      throw this.engine.wrap("listing containers", e);
    }
    const names = new Set<string>();
    for (const c of list) {
      const n = c.Labels?.[LABEL_SESSION];
      if (c.Labels?.[LABEL_CITY] !== this.owner || n === undefined || !n.startsWith(prefix)) continue;
      if (c.Names?.includes(`/${this.containerName(n)}`)) names.add(n);
    }
    return [...names].sort();
  }

  /**
   * True for a running session when `names` is empty, or when a process named in `names`
   * runs anywhere in its container (the container is the session's process tree).
   */
  async processAlive(name: string, names: readonly string[], opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return false;
    if (names.length === 0) return true;
    const r = await this.execQuiet(c.Id, ["/bin/sh", "-c", COMM_SCRIPT], opts.signal);
    if (!r) return false;
    const running = new Set(r.stdout.split("\n").map((l) => l.trim()));
    return names.some((n) => running.has(n) || running.has(n.slice(0, 15)));
  }

  // ---- input -----------------------------------------------------------------------------

  /**
   * Delivers the exact text as one paste over the container's control channel and confirms
   * it was submitted (see tmux/pane.ts `deliver`). Nudges to one session are serialized.
   * Resolves when the session is missing or not running.
   * @throws NudgeNotDeliveredError when a menu waits for a choice or submission could not be confirmed.
   */
  async nudge(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return;
    const text = terminalText(flattenContent(content), opts);
    const ch = this.channel(c.Id);
    return this.nudges.run(name, () => ch.deliver(name, text, CONFIRM_MS, opts.signal, opts.multiline));
  }

  /** Raw tmux key names in one `send-keys`; no implicit Enter. Resolves when missing or not running. */
  async sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (keys.length === 0) return;
    validateKeys(keys);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return;
    try {
      await this.channel(c.Id).sendKeys(keys, opts.signal);
    } catch (e) {
      if (!(await this.endedUnder(c.Id, e, opts.signal))) throw e;
    }
  }

  // ---- observation -----------------------------------------------------------------------

  /**
   * The last `lines` lines of the session's terminal (wrapped lines joined, trailing blanks
   * dropped), newest last; `lines <= 0` = all scrollback. "" once the program has exited.
   * @throws SessionNotFoundError when the session is missing.
   */
  async peek(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, false, opts.signal);
  }

  /** {@link peek} with the screen's colours and attributes kept as SGR escapes (`capture-pane -e` in the container). */
  async peekStyled(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, true, opts.signal);
  }

  private async screenText(name: string, lines: number, styled: boolean, signal?: AbortSignal) {
    validateSessionName(name);
    const c = await this.find(name, signal);
    if (!c) throw new SessionNotFoundError(name);
    if (!c.State.Running) return "";
    try {
      return await this.channel(c.Id).capture(lines, styled, signal);
    } catch (e) {
      if (await this.endedUnder(c.Id, e, signal)) return "";
      throw e;
    }
  }

  /**
   * True when `e`, from an operation on container `id`'s channel, means the session ended:
   * its tmux session is gone, or the container stopped under the operation.
   */
  private async endedUnder(id: string, e: unknown, signal?: AbortSignal): Promise<boolean> {
    if (isGone(e)) return true;
    if (!(e instanceof TmuxConnectionError) || signal?.aborted) return false;
    return !(await this.alive(id, signal).catch(() => true));
  }

  /**
   * Stores `value` as a file in the container's filesystem (`/.gc-meta/<key>`, uploaded by
   * the archive API): it lives exactly as long as the container, survives controller and
   * engine restarts, and is readable by any gc process. @throws SessionNotFoundError when missing.
   */
  async setMeta(name: string, key: string, value: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.writeMeta(name, key, `v${value}`, opts.signal);
  }

  /** The stored value, or `undefined` when unset. @throws SessionNotFoundError when missing. */
  async getMeta(name: string, key: string, opts: OpOptions = {}): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    const c = await this.find(name, opts.signal);
    if (!c) throw new SessionNotFoundError(name);
    let tar: Buffer | undefined;
    try {
      tar = await this.engine.getArchive(c.Id, `${META_DIR}/${key}`);
    } catch (e) {
      if (statusOf(e) === 404) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw this.engine.wrap(`reading metadata of ${name}`, e);
    }
    if (!tar) return undefined;
    const stored = (await untarFirstFile(tar))?.toString("utf8");
    return stored?.startsWith("v") ? stored.slice(1) : undefined;
  }

  /** Removes a key (an empty file means unset); resolves when it was not set. @throws SessionNotFoundError when missing. */
  async removeMeta(name: string, key: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.writeMeta(name, key, "", opts.signal);
  }

  private async writeMeta(name: string, key: string, stored: string, signal?: AbortSignal): Promise<void> {
    const c = await this.find(name, signal);
    if (!c) throw new SessionNotFoundError(name);
    const tar = await tarOfFiles([
      { name: `${META_DIR.slice(1)}/`, type: "directory", mode: 0o700 },
      { name: `${META_DIR.slice(1)}/${key}`, data: Buffer.from(stored, "utf8"), mode: 0o600 },
    ]);
    try {
      await this.engine.putArchive(c.Id, tar, "/");
    } catch (e) {
      if (statusOf(e) === 404) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw this.engine.wrap(`writing metadata of ${name}`, e);
    }
  }

  /** Time of the last output in the session's window; `undefined` when missing or exited. */
  async getLastActivity(name: string, opts: OpOptions = {}): Promise<Date | undefined> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return undefined;
    try {
      return await this.channel(c.Id).lastActivity(opts.signal);
    } catch (e) {
      if (await this.endedUnder(c.Id, e, opts.signal)) return undefined;
      throw e;
    }
  }

  /** Clears the pane's history. Best-effort: resolves when missing. */
  async clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return;
    try {
      await this.channel(c.Id).clearHistory(opts.signal);
    } catch (e) {
      if (!(await this.endedUnder(c.Id, e, opts.signal))) throw e;
    }
  }

  /** True when a terminal other than the container's own console client is attached. */
  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return false;
    try {
      return await this.channel(c.Id).attached(opts.signal);
    } catch (e) {
      if (await this.endedUnder(c.Id, e, opts.signal)) return false;
      throw e;
    }
  }

  // ---- files and commands ----------------------------------------------------------------

  /**
   * Uploads local `src` (file or directory) to `relDst` under the session's work dir with
   * the archive API. Best-effort: resolves when the session or `src` is missing.
   * @throws InvalidNameError when `relDst` leaves the work dir.
   */
  async copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const dst = posix.normalize(relDst || ".");
    if (dst.startsWith("..") || posix.isAbsolute(dst)) {
      throw new InvalidNameError("copy destination", relDst, "must stay inside the work dir");
    }
    const c = await this.find(name, opts.signal);
    if (!c) return;
    const st = await stat(src).catch(() => undefined);
    if (!st) return;
    const workDir = c.Config.Labels?.[LABEL_WORKDIR];
    if (!workDir) return;
    const base = relDst === "" ? (st.isDirectory() ? "." : posix.basename(src)) : dst;
    await this.upload(c.Id, src, posix.join(workDir, base));
  }

  private async upload(id: string, src: string, absDst: string): Promise<void> {
    const tar = await tarOfPath(src, absDst.replace(/^\/+/, ""), this.ownerIds());
    try {
      await this.engine.putArchive(id, tar, "/");
    } catch (e) {
      throw this.engine.wrap(`copying ${src}`, e);
    }
  }

  /** Runs `config.sessionLive` in the running container, in its work dir. Resolves when missing. */
  async runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running || !config.sessionLive?.length) return;
    const workDir = c.Config.Labels?.[LABEL_WORKDIR] ?? resolve(this.cityDir, config.workDir);
    for (const cmd of config.sessionLive) await this.hook(c.Id, "session_live", cmd, workDir, opts.signal);
  }

  /**
   * Runs `argv` (no shell around it) in the container through the exec API, in the work
   * dir (or `opts.cwd` relative to it) with the session's environment plus `opts.env`.
   * A missing program yields exit code 127. Past `opts.timeoutMs` (else `hook_timeout`) or on
   * abort, the command and every process it started are killed (see {@link execKillable})
   * before the call rejects with OperationTimeoutError or the signal's reason.
   * @throws SessionNotFoundError when missing or not running.
   */
  async execCommand(
    name: string,
    argv: readonly string[],
    opts: ExecCommandOptions = {},
  ): Promise<ExecCommandResult> {
    validateSessionName(name);
    if (argv.length === 0) throw new ProviderError("docker", "execCommand: empty argv");
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) throw new SessionNotFoundError(name, c ? "its program has exited" : undefined);
    const workDir = c.Config.Labels?.[LABEL_WORKDIR] ?? "/";
    const cwd = opts.cwd ? posix.resolve(workDir, opts.cwd) : workDir;
    const extra = Object.entries(opts.env ?? {});
    for (const [k] of extra)
      if (!validEnvKey(k)) throw new InvalidNameError("environment variable", k, "invalid name");
    const command = [
      "/bin/sh",
      "-c",
      EXEC_SCRIPT,
      "gc-exec",
      cwd,
      String(extra.length),
      ...extra.flat(),
      "--",
    ];
    return execKillable([...command, ...argv], {
      dir: RUN_DIR,
      signal: opts.signal,
      run: (wrapped) =>
        this.exec(c.Id, {
          argv: wrapped,
          stdin: opts.stdin,
          signal: opts.signal,
          timeoutMs: opts.timeoutMs,
          keepOutputOnCut: true,
        }),
      runKill: (kill, timeoutMs) => this.exec(c.Id, { argv: kill, timeoutMs }),
    });
  }

  /**
   * Hands the caller's terminal to the session: a Docker exec of `tmux attach` with a TTY,
   * stdin in raw mode, resizes forwarded. Resolves when the operator detaches (tmux prefix
   * then `d`) or the session ends. @throws SessionNotFoundError when missing or not running.
   */
  async attach(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) throw new SessionNotFoundError(name);
    const d = await this.engine.docker();
    const exec = await d.getContainer(c.Id).exec({
      Cmd: ["tmux", "-u", "attach-session", "-t", TMUX_SESSION],
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
      Env: [`TERM=${process.env.TERM || "xterm-256color"}`],
      ...(this.settings.user ? { User: this.settings.user } : {}),
    });
    const stream = (await exec.start({
      hijack: true,
      stdin: true,
      Tty: true,
    })) as unknown as NodeJS.ReadWriteStream;
    const stdin = process.stdin;
    const raw = stdin.isTTY === true;
    const resize = () => {
      const { columns, rows } = process.stdout;
      if (columns && rows) void exec.resize({ w: columns, h: rows }).catch(() => undefined);
    };
    if (raw) stdin.setRawMode(true);
    stdin.resume();
    stdin.pipe(stream as NodeJS.WritableStream);
    stream.pipe(process.stdout);
    process.stdout.on("resize", resize);
    resize();
    try {
      await new Promise<void>((res, rej) => {
        stream.on("end", res);
        stream.on("close", res);
        stream.on("error", rej);
        opts.signal?.addEventListener("abort", () => res(), { once: true });
      });
    } finally {
      process.stdout.off("resize", resize);
      stdin.unpipe(stream as NodeJS.WritableStream);
      if (raw) stdin.setRawMode(false);
      stdin.pause();
      (stream as unknown as { destroy?: () => void }).destroy?.();
    }
  }

  // ---- idleness --------------------------------------------------------------------------

  /**
   * Resolves `idle` once the screen has been unchanged for a quiet period with the ready
   * prompt visible (when declared), no busy marker and no menu; `timeout` at `timeoutMs`
   * (a hard bound); `gone` when missing or exited.
   */
  async waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return "gone";
    try {
      return await this.channel(c.Id).waitIdle(timeoutMs, {
        readyPrefix: c.Config.Labels?.[LABEL_PREFIX],
        quietMs: IDLE_QUIET_MS,
        signal: opts.signal,
      });
    } catch (e) {
      if (await this.endedUnder(c.Id, e, opts.signal)) return "gone";
      throw e;
    }
  }

  /** The session's output from its channel's notifications; `undefined` when missing or exited. */
  async watchOutput(name: string, opts: OpOptions = {}): Promise<SessionOutputWatch | undefined> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c?.State.Running) return undefined;
    return this.channel(c.Id).output(opts.signal);
  }

  /**
   * Removes every container carrying this city's ownership label, running or exited (a
   * program that ended leaves its container until then), so `gc stop` leaves nothing.
   * Containers of other cities are never touched. Idempotent.
   */
  async shutdown(opts: OpOptions = {}): Promise<void> {
    const d = await this.engine.docker();
    let list: Dockerode.ContainerInfo[];
    try {
      list = (await d.listContainers({
        all: true,
        filters: { label: [this.ownerLabel] },
        abortSignal: opts.signal,
      } as never)) as unknown as Dockerode.ContainerInfo[];
    } catch (e) {
      throw this.engine.wrap("listing containers", e);
    }
    const mine = list.filter((c) => c.Labels?.[LABEL_CITY] === this.owner);
    await Promise.all(mine.map((c) => this.remove(c.Id)));
  }

  /**
   * How session `name`, no longer running, ended — read from its container (see BOOT_SCRIPT
   * in scripts.ts): `program` when the container exited 0 (its console client saw the
   * session end: the program exited, whatever its code or signal) or the OOM killer struck
   * in it; `infrastructure` when it exited otherwise (its processes were signalled from
   * outside: an engine stop or restart, `docker stop`/`kill`) or no container of ours is
   * left (removed from outside); `undefined` while it runs.
   * @throws when the engine cannot be reached.
   */
  async sessionEnd(name: string, opts: OpOptions = {}): Promise<SessionEnd | undefined> {
    validateSessionName(name);
    const c = await this.find(name, opts.signal);
    if (!c) return "infrastructure";
    if (c.State.Running || c.State.Restarting) return undefined;
    return c.State.OOMKilled || c.State.ExitCode === 0 ? "program" : "infrastructure";
  }

  /** Releases the engine connection (sessions keep running). Idempotent. */
  async close(): Promise<void> {
    // dockerode keeps no persistent HTTP connection; the control channels are the streams.
    await this.channels.closeAll();
  }

  // ---- the small backend surface the start lifecycle uses ----------------------------------

  /** Runs one hook command in the container's work dir with the session env. @throws HookFailedError. */
  private async hook(
    id: string,
    hook: string,
    cmd: string,
    workDir: string,
    signal: AbortSignal | undefined,
  ) {
    const r = await this.exec(id, { argv: ["/bin/sh", "-c", HOOK_SCRIPT, "gc-hook", workDir, cmd], signal });
    if (r.exitCode !== 0) {
      throw new HookFailedError(hook, `${JSON.stringify(cmd)}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
    }
  }

  /** Copy mode: the host work dir, overlay_dir and copy_files uploaded into the created container. */
  private async stageCopy(id: string, cfg: StartConfig, workDir: string): Promise<void> {
    const ids = this.ownerIds();
    const parts: Buffer[] = [];
    const hostWork = await stat(workDir).catch(() => undefined);
    parts.push(
      hostWork?.isDirectory()
        ? await tarOfPath(workDir, workDir.slice(1), ids)
        : await tarOfFiles([{ name: `${workDir.slice(1)}/`, type: "directory", mode: 0o755, ...ids }]),
    );
    if (cfg.overlayDir)
      parts.push(await tarOfPath(resolve(this.cityDir, cfg.overlayDir), workDir.slice(1), ids));
    for (const entry of cfg.copyFiles ?? []) {
      const src = resolve(this.cityDir, entry.src);
      const st = await stat(src).catch(() => undefined);
      if (!st) throw new ProviderError("docker", `copy_files ${src}: no such file`);
      const rel = posix.normalize(entry.relDst || (st.isDirectory() ? "." : posix.basename(src)));
      if (rel.startsWith("..") || posix.isAbsolute(rel)) {
        throw new InvalidNameError("copy destination", entry.relDst, "must stay inside the work dir");
      }
      parts.push(await tarOfPath(src, posix.join(workDir.slice(1), rel), ids));
    }
    for (const tar of parts) await this.engine.putArchive(id, tar, "/");
  }

  /** Numeric uid/gid for uploaded files when `user` is numeric (`1000` or `1000:1000`). */
  private ownerIds(): { uid?: number; gid?: number } {
    const m = /^(\d+)(?::(\d+))?$/.exec(this.settings.user ?? "");
    if (!m) return {};
    return { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
  }

  private identityEnv(name: string, workDir: string): Record<string, string> {
    return { GC_SESSION: name, GC_CITY: this.city, GC_DIR: workDir };
  }

  private async exec(
    id: string,
    o: {
      argv: readonly string[];
      stdin?: string | undefined;
      signal?: AbortSignal | undefined;
      timeoutMs?: number | undefined;
      keepOutputOnCut?: boolean | undefined;
    },
  ): Promise<ExecResult> {
    try {
      return await this.engine.exec(id, {
        argv: o.argv,
        stdin: o.stdin,
        user: this.settings.user,
        timeoutMs: o.timeoutMs ?? this.settings.hookTimeoutMs,
        signal: o.signal,
        keepOutputOnCut: o.keepOutputOnCut,
      });
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason;
      throw this.engine.wrap(`exec in ${id.slice(0, 12)}`, e);
    }
  }

  /** An exec that yields `undefined` when the container is gone or not running (404/409, or a refusal once it stopped). */
  private async execQuiet(
    id: string,
    argv: readonly string[],
    signal?: AbortSignal,
    stdin?: string,
  ): Promise<ExecResult | undefined> {
    try {
      return await this.engine.exec(id, {
        argv,
        stdin,
        user: this.settings.user,
        timeoutMs: this.settings.hookTimeoutMs,
        signal,
      });
    } catch (e) {
      const st = statusOf(e) ?? statusOf((e as { cause?: unknown }).cause);
      if (st === 404 || st === 409) return undefined;
      if (signal?.aborted) throw signal.reason;
      // A container that stopped between the exec's create and start is refused with a 500
      // ("container … is not running"): that is the container's end, not an engine failure.
      if (!(await this.alive(id, signal).catch(() => true))) return undefined;
      throw this.engine.wrap(`exec in ${id.slice(0, 12)}`, e);
    }
  }

  /**
   * True while the session's program runs: its tmux session exists (it ends with the
   * program). The container outlives a program that exits at once by a moment (its console
   * client has yet to notice), so a running container alone proves nothing during start.
   */
  private async programAlive(id: string, signal?: AbortSignal): Promise<boolean> {
    if (!(await this.alive(id, signal))) return false;
    try {
      const st = await this.channel(id).read(signal);
      return st !== undefined && !st.dead;
    } catch (e) {
      if (await this.endedUnder(id, e, signal)) return false;
      throw e;
    }
  }

  private async alive(id: string, signal?: AbortSignal): Promise<boolean> {
    const d = await this.engine.docker();
    try {
      const info = (await d.getContainer(id).inspect({ abortSignal: signal } as never)) as unknown as Info;
      return info.State.Running;
    } catch (e) {
      if (statusOf(e) === 404) return false;
      throw e;
    }
  }

  /** True when container `c` carries this city's labels for session `name`. */
  private owns(c: Info, name: string): boolean {
    const l = c.Config.Labels ?? {};
    return l[LABEL_CITY] === this.owner && l[LABEL_SESSION] === name;
  }

  /** The container of session `name` when this city owns it. */
  private async find(name: string, signal?: AbortSignal): Promise<Info | undefined> {
    const c = await this.engine.inspect(this.containerName(name), signal);
    return c && this.owns(c, name) ? c : undefined;
  }
}

/** What the container's console client (tmux attach) itself prints when it ends or cannot attach. */
const TMUX_CLIENT_NOISE =
  /^(\[exited\]|\[server exited\]|\[lost server\]|no sessions|no server running\b.*|can't find session\b.*)$/;

function stripAnsi(s: string): string {
  return s.replace(/\x1b\[[0-9;?>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r/g, "");
}
