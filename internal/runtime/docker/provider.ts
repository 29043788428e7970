/**
 * DockerProvider: one container per gc session through the Docker Engine API (dockerode).
 * The container's program runs in a tmux session inside it, so the rendered terminal
 * (peek, activity, keys) outlives any controller; ownership and identity are container
 * labels, metadata are files in the container, and stop removes the container.
 * Built by `createProvider` (index.ts) for the composition root and `gc conformance`.
 * The city's containers (ownership, exec, the tmux channels) are containers.ts; starting
 * one is start.ts.
 */
import { stat } from "node:fs/promises";
import { posix, resolve } from "node:path";
import type Dockerode from "dockerode";
import { InvalidNameError, ProviderError, SessionNotFoundError } from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { execKillable } from "../lifecycle/index.js";
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
import { terminalText } from "../screen/delivery.js";
import { tarOfFiles, untarFirstFile } from "../tar.js";
import type { Channel } from "../tmux/channels.js";
import { NudgeQueue, validateKeys } from "../tmux/pane.js";
import {
  CityContainers,
  CONFIRM_MS,
  LABEL_CITY,
  LABEL_PREFIX,
  LABEL_SESSION,
  LABEL_WORKDIR,
} from "./containers.js";
import { type Engine, statusOf } from "./engine.js";
import { COMM_SCRIPT, EXEC_SCRIPT, META_DIR, RUN_DIR, TMUX_SESSION, validEnvKey } from "./scripts.js";
import type { DockerSettings } from "./settings.js";
import { ContainerStarts } from "./start.js";

const IDLE_QUIET_MS = 600;

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
  /** The city's containers: ownership, exec, channels (containers.ts). */
  private readonly ctr: CityContainers;
  private readonly nudges = new NudgeQueue();
  private readonly starts: ContainerStarts;

  constructor(opts: DockerProviderOptions) {
    this.ctr = new CityContainers(opts);
    this.settings = this.ctr.settings;
    this.engine = this.ctr.engine;
    this.starts = new ContainerStarts(this.ctr, this.nudges);
  }

  /** The control channel into container `id` (made on first use, kept until the container goes). */
  channel(id: string): Channel {
    return this.ctr.channel(id);
  }

  /** The ownership label value (`gc.city=<owner>`) every container of this city carries. */
  get ownerLabel(): string {
    return this.ctr.ownerLabel;
  }

  /** The exact container name of session `name`. */
  containerName(name: string): string {
    return this.ctr.containerName(name);
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

  /** {@link ContainerStarts.start}. */
  start(name: string, config: StartConfig, opts: OpOptions = {}): Promise<StartReport> {
    return this.starts.start(name, config, opts);
  }

  /**
   * Removes the session's container (SIGKILL to every process in it, then the container
   * and its filesystem). Idempotent; containers this city does not own are never touched.
   */
  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    this.nudges.forget(name);
    const c = await this.ctr.find(name, opts.signal);
    if (c) await this.ctr.remove(c.Id);
  }

  /** Ctrl-C to the program. Best-effort: resolves when missing or not running. */
  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    await this.sendKeys(name, ["C-c"], opts);
  }

  /** True when the session's container is ours and running. */
  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
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
        filters: { label: [this.ctr.ownerLabel], status: ["running"] },
        abortSignal: opts.signal,
      } as never)) as unknown as Dockerode.ContainerInfo[];
    } catch (e) {
      throw this.engine.wrap("listing containers", e);
    }
    const names = new Set<string>();
    for (const c of list) {
      const n = c.Labels?.[LABEL_SESSION];
      if (c.Labels?.[LABEL_CITY] !== this.ctr.owner || n === undefined || !n.startsWith(prefix)) continue;
      if (c.Names?.includes(`/${this.ctr.containerName(n)}`)) names.add(n);
    }
    return [...names].sort();
  }

  /**
   * True for a running session when `names` is empty, or when a process named in `names`
   * runs anywhere in its container (the container is the session's process tree).
   */
  async processAlive(name: string, names: readonly string[], opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return false;
    if (names.length === 0) return true;
    const r = await this.ctr.execQuiet(c.Id, ["/bin/sh", "-c", COMM_SCRIPT], opts.signal);
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
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return;
    const text = terminalText(flattenContent(content), opts);
    const ch = this.ctr.channel(c.Id);
    return this.nudges.run(name, () => ch.deliver(name, text, CONFIRM_MS, opts.signal, opts.multiline));
  }

  /** Raw tmux key names in one `send-keys`; no implicit Enter. Resolves when missing or not running. */
  async sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (keys.length === 0) return;
    validateKeys(keys);
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return;
    try {
      await this.ctr.channel(c.Id).sendKeys(keys, opts.signal);
    } catch (e) {
      if (!(await this.ctr.endedUnder(c.Id, e, opts.signal))) throw e;
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
    const c = await this.ctr.find(name, signal);
    if (!c) throw new SessionNotFoundError(name);
    if (!c.State.Running) return "";
    try {
      return await this.ctr.channel(c.Id).capture(lines, styled, signal);
    } catch (e) {
      if (await this.ctr.endedUnder(c.Id, e, signal)) return "";
      throw e;
    }
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
    const c = await this.ctr.find(name, opts.signal);
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
    const c = await this.ctr.find(name, signal);
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
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return undefined;
    try {
      return await this.ctr.channel(c.Id).lastActivity(opts.signal);
    } catch (e) {
      if (await this.ctr.endedUnder(c.Id, e, opts.signal)) return undefined;
      throw e;
    }
  }

  /** Clears the pane's history. Best-effort: resolves when missing. */
  async clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return;
    try {
      await this.ctr.channel(c.Id).clearHistory(opts.signal);
    } catch (e) {
      if (!(await this.ctr.endedUnder(c.Id, e, opts.signal))) throw e;
    }
  }

  /** True when a terminal other than the container's own console client is attached. */
  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return false;
    try {
      return await this.ctr.channel(c.Id).attached(opts.signal);
    } catch (e) {
      if (await this.ctr.endedUnder(c.Id, e, opts.signal)) return false;
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
    const c = await this.ctr.find(name, opts.signal);
    if (!c) return;
    const st = await stat(src).catch(() => undefined);
    if (!st) return;
    const workDir = c.Config.Labels?.[LABEL_WORKDIR];
    if (!workDir) return;
    const base = relDst === "" ? (st.isDirectory() ? "." : posix.basename(src)) : dst;
    await this.ctr.upload(c.Id, src, posix.join(workDir, base));
  }

  /** Runs `config.sessionLive` in the running container, in its work dir. Resolves when missing. */
  async runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running || !config.sessionLive?.length) return;
    const workDir = c.Config.Labels?.[LABEL_WORKDIR] ?? resolve(this.ctr.cityDir, config.workDir);
    for (const cmd of config.sessionLive)
      await this.ctr.hook(c.Id, "session_live", cmd, workDir, opts.signal);
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
    const c = await this.ctr.find(name, opts.signal);
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
        this.ctr.exec(c.Id, {
          argv: wrapped,
          stdin: opts.stdin,
          signal: opts.signal,
          timeoutMs: opts.timeoutMs,
          keepOutputOnCut: true,
        }),
      runKill: (kill, timeoutMs) => this.ctr.exec(c.Id, { argv: kill, timeoutMs }),
    });
  }

  /**
   * Hands the caller's terminal to the session: a Docker exec of `tmux attach` with a TTY,
   * stdin in raw mode, resizes forwarded. Resolves when the operator detaches (tmux prefix
   * then `d`) or the session ends. @throws SessionNotFoundError when missing or not running.
   */
  async attach(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
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
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return "gone";
    try {
      return await this.ctr.channel(c.Id).waitIdle(timeoutMs, {
        readyPrefix: c.Config.Labels?.[LABEL_PREFIX],
        quietMs: IDLE_QUIET_MS,
        signal: opts.signal,
      });
    } catch (e) {
      if (await this.ctr.endedUnder(c.Id, e, opts.signal)) return "gone";
      throw e;
    }
  }

  /** The session's output from its channel's notifications; `undefined` when missing or exited. */
  async watchOutput(name: string, opts: OpOptions = {}): Promise<SessionOutputWatch | undefined> {
    validateSessionName(name);
    const c = await this.ctr.find(name, opts.signal);
    if (!c?.State.Running) return undefined;
    return this.ctr.channel(c.Id).output(opts.signal);
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
        filters: { label: [this.ctr.ownerLabel] },
        abortSignal: opts.signal,
      } as never)) as unknown as Dockerode.ContainerInfo[];
    } catch (e) {
      throw this.engine.wrap("listing containers", e);
    }
    const mine = list.filter((c) => c.Labels?.[LABEL_CITY] === this.ctr.owner);
    await Promise.all(mine.map((c) => this.ctr.remove(c.Id)));
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
    const c = await this.ctr.find(name, opts.signal);
    if (!c) return "infrastructure";
    if (c.State.Running || c.State.Restarting) return undefined;
    return c.State.OOMKilled || c.State.ExitCode === 0 ? "program" : "infrastructure";
  }

  /** Releases the engine connection (sessions keep running). Idempotent. */
  async close(): Promise<void> {
    // dockerode keeps no persistent HTTP connection; the control channels are the streams.
    await this.ctr.channels.closeAll();
  }
}
