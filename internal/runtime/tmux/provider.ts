/**
 * TmuxProvider: gc sessions as tmux sessions on a per-city socket, driven through one
 * persistent control-mode connection. Sessions are tagged `@gc_city`, addressed exactly
 * (`=name`, then by session id), and observed in one `list-panes` call per question.
 * Built by `createProvider` (index.ts) from the composition root and `gc conformance`.
 */

import { spawn } from "node:child_process";
import { mkdir, stat, unlink } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  HookFailedError,
  InvalidNameError,
  NudgeNotDeliveredError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
  SessionNotFoundError,
} from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import { type CensusEntry, hasOption, killOrphans, processCensus } from "../../proc/census.js";
import { killTree } from "../../proc/kill.js";
import { anyProcessNamed, processTree, readProcessTable, readStat } from "../../proc/process-table.js";
import { OP_TIMEOUT_MS, run, runHooks } from "../../proc/run.js";
import { terminalText } from "../delivery.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { ownerKey } from "../identity.js";
import { commandViaEnv, hookDirOf, SHELL, sessionEnv } from "../launch.js";
import {
  copyInto,
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
  type StartPlan,
  StartsInProgress,
  stageLocal,
} from "../lifecycle/index.js";
import { outputTail } from "../pane-text.js";
import {
  type BackendShutdownProvider,
  type BackendWatchProvider,
  type BatchInteractionProvider,
  type CensusProvider,
  type CommandProvider,
  type ExecCommandOptions,
  type ExecCommandResult,
  type ExitStatus,
  type ExitStatusProvider,
  flattenContent,
  type IdleResult,
  type IdleWaitProvider,
  type ImmediateNudgeProvider,
  type InteractionProvider,
  type InteractionResponse,
  type NudgeContent,
  type NudgeOptions,
  type OpOptions,
  type OrphanKillProvider,
  type OutputWatchProvider,
  type PendingInteraction,
  type Provider,
  type ProviderCapabilities,
  type SessionLook,
  type SessionOutputWatch,
  type SessionSnapshot,
  type SnapshotProvider,
  type StartConfig,
  type StartReport,
} from "../provider.js";
import { findInteraction } from "../screen/classify.js";
import { respondToInteraction, type ScreenIO } from "../screen/keys.js";
import { type CommandOptions, ControlClient, KEEPER_SESSION } from "./control-client.js";
import { TmuxConnectionError } from "./errors.js";
import { gateFile, ServerGate } from "./gate.js";
import {
  attachedClients,
  captureScreens,
  captureText,
  clearHistory,
  deliver,
  NudgeQueue,
  OutputWatch,
  type Pane,
  readPane,
  STATE_POLL_MS,
  screen,
  sendKeys,
  validateKeys,
  waitIdle,
} from "./pane.js";
import { fromHex, sessionTarget, tmuxSessionName, toHex } from "./quote.js";
import { killServer, removeOrphanClients, serverListening, socketArgs } from "./server.js";
import {
  isAbsent,
  isDuplicate,
  isLive,
  isStaleTarget,
  ownerTag,
  PANE_FORMAT,
  parseSessions,
  type SessionInfo,
} from "./sessions.js";
import { type ResolvedTmuxSettings, resolveSettings } from "./settings.js";

/** What the tmux client (and a server it starts) gets from gc's environment. */
const CLIENT_ENV = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TMUX_TMPDIR"];
/** Runs the program in its work dir without tmux's `-c`, which expands `#{}` and `#()`. */
const CD_WRAPPER = 'cd "$1" || exit 127; shift; exec "$@"';

/** Times shutdown lists and stops this city's sessions (a late create is caught by the next). */
const SHUTDOWN_ROUNDS = 3;
/** How long shutdown waits for the tmux server to stop listening after kill-server. */
const SERVER_EXIT_MS = 10_000;
/** How long a dead pane may lack an exit status before it counts as killed by a signal. */
const EXIT_STATUS_GRACE_MS = 2_000;
/** Death detail when the dead pane shows nothing: tmux may have dropped the program's output. */
const LOST_OUTPUT = "no output captured (tmux can discard what a program prints just before it exits)";

/** Options for {@link TmuxProvider}. */
export interface TmuxProviderOptions extends ProviderFactoryOptions {}

/**
 * The tmux {@link Provider}. One instance owns one control connection to the city's
 * socket; any number of gc processes may drive the same server at once. Every method
 * validates the session name first ({@link InvalidNameError}) so a hostile name never
 * reaches tmux. Sessions of other cities (or untagged ones) on the same server are
 * invisible: they are never listed, stopped, read or written.
 */
export class TmuxProvider
  implements
    Provider,
    IdleWaitProvider,
    OutputWatchProvider,
    InteractionProvider,
    ImmediateNudgeProvider,
    ExitStatusProvider,
    CommandProvider,
    SnapshotProvider,
    BackendShutdownProvider,
    CensusProvider,
    OrphanKillProvider,
    BackendWatchProvider,
    BatchInteractionProvider
{
  /** Backend name reported to the CLI and in conformance reports. */
  readonly name = "tmux";
  /** Resolved settings (socket, timeouts, window size). */
  readonly settings: ResolvedTmuxSettings;
  private readonly city: string;
  private readonly cityDir: string;
  private readonly tag: string;
  /** The city as session env tags it: name and owner key (`GC_OWNER`). */
  private readonly envCity: { readonly name: string; readonly owner: string };
  private readonly client: ControlClient;
  /** Environment of every control client process this provider starts. */
  private readonly clientEnv: NodeJS.ProcessEnv;
  private readonly starts = new StartsInProgress();
  private readonly nudges = new NudgeQueue();
  /** Session ids of our sessions by gc name, with the connection generation they belong to. */
  private readonly ids = new Map<string, { readonly id: string; readonly generation: number }>();
  /** When a dead pane without an exit status was first seen (`<generation>:<session id>`). */
  private readonly deadWithoutStatus = new Map<string, number>();
  /**
   * What `look` last read per session id (`<generation>:<id>`: the screen and the interaction
   * on it), with the activity second it was read at: valid while the session printed nothing since.
   */
  private readonly interactionCache = new Map<
    string,
    { readonly activity: number; readonly screen: string; readonly found: PendingInteraction | undefined }
  >();

  constructor(opts: TmuxProviderOptions) {
    this.city = opts.city;
    this.cityDir = opts.cityDir;
    this.tag = ownerTag(ownerKey(opts.city, opts.cityId));
    this.envCity = { name: opts.city, owner: ownerKey(opts.city, opts.cityId) };
    this.settings = resolveSettings(opts.city, opts.settings, opts.cityId);
    const env: NodeJS.ProcessEnv = {};
    for (const k of CLIENT_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
    this.clientEnv = env;
    this.client = new ControlClient({
      socket: this.settings.socket,
      tmuxPath: this.settings.tmuxPath,
      commandTimeoutMs: this.settings.commandTimeoutMs,
      env,
      // Every (re)connect also removes control clients a dead gc process left on this socket.
      beforeConnect: async () => {
        await removeOrphanClients(socketArgs(this.settings.socket), this.client);
      },
      // A server silent for a minute (every command and reconnect timing out) is wedged: it
      // is killed, and its sessions are recovered as an infrastructure loss.
      onWedged: async () => (await killServer(socketArgs(this.settings.socket))).length > 0,
      setup: [
        ["refresh-client", "-f", "no-output"],
        ["set-option", "-s", "exit-empty", "off"],
        ["set-option", "-g", "destroy-unattached", "off"],
        ["set-option", "-gw", "remain-on-exit", "on"],
        ["set-option", "-g", "history-limit", String(this.settings.historyLimit)],
      ],
    });
  }

  /** argv prefix that reaches this provider's server with a plain `tmux` (for tests and `gc attach`). */
  tmuxArgv(): string[] {
    return [this.settings.tmuxPath, "-u", ...socketArgs(this.settings.socket)];
  }

  /** The control connection (exposed for diagnostics and benchmarks). */
  get control(): ControlClient {
    return this.client;
  }

  /** Everything: tmux runs real programs and can observe and drive all of it. Constant. */
  capabilities(): ProviderCapabilities {
    return {
      executes: true,
      attach: true,
      attachDetect: true,
      activity: true,
      interaction: true,
      idleWait: true,
      processNames: true,
      copyTo: true,
      runLive: true,
      exitStatus: true,
      exec: true,
    };
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /**
   * Creates the session: pre_start (failure → {@link HookFailedError}, nothing created),
   * overlay/copy files, `new-session` (env via `-e`, work dir via argv, the prompt as an
   * argument), readiness (`readyPromptPrefix`, else `readyDelayMs`) with startup dialogs
   * answered, session_setup, session_setup_script, the initial nudge, session_live.
   * A dead session of ours with this name is cleaned up first.
   * @throws SessionExistsError when the name is live, taken by a foreign session, or
   * another start of it is in progress in this process.
   * @throws SessionDiedDuringStartupError when the program exits before start finishes.
   * @throws DialogRefusedError when a startup dialog's layout is unfamiliar.
   * Any rejection (including an abort) kills what was created.
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
    const existing = await this.lookup(sessionTarget(name), signal);
    if (existing) {
      if (existing.name !== name)
        throw new SessionExistsError(name, undefined, await this.foreignHolder(name));
      if (isLive(existing)) throw new SessionExistsError(name);
      await this.destroy(existing.id); // a dead session of ours: its exit status has had its day
    }
    const config = {
      ...cfg,
      workDir: resolve(this.cityDir, cfg.workDir),
      hookDir: resolve(this.cityDir, hookDirOf(cfg)),
    };
    const plan = planStart(name, this.envCity, config, { sourceDir: this.cityDir });
    await mkdir(plan.hookDir, { recursive: true });
    let id: string | undefined;
    const live = async (sig: AbortSignal) => {
      const s = id === undefined ? undefined : await this.lookup(id, sig);
      return s && isLive(s) ? s : undefined;
    };
    const backend: StartBackend = {
      provider: "tmux",
      hookEnv: { GC_TMUX_SOCKET: this.settings.socketLabel },
      runCommand: runLocalCommand,
      stage: (p) => stageLocal("tmux", p),
      create: async (p, sig) => {
        id = await this.create(p, sig);
      },
      alive: async (sig) => (await live(sig)) !== undefined,
      died: () => this.died(name, id ?? ""),
      screen: (sig) => screen(this.pane(id ?? ""), sig),
      sendKeys: (keys, sig) => sendKeys(this.pane(id ?? ""), keys, sig),
      nudge: async (text, sig) => {
        const s = await live(sig);
        if (!s) throw await this.died(name, id ?? "");
        await this.nudgeSession(name, s, text, true, sig, cfg.multiline);
      },
      destroy: async () => {
        if (id !== undefined) await this.destroy(id);
      },
    };
    const limits = limitsFor(cfg, {
      readyTimeoutMs: this.settings.readyTimeoutMs,
      dialogTimeoutMs: this.settings.dialogTimeoutMs,
    });
    return runStart(backend, plan, limits, signal);
  }

  /**
   * Creates the tmux session running `plan.argv` in `plan.workDir` with `plan.env`, tagged as
   * this city's. Resolves its session id; leaves nothing behind when it rejects.
   */
  private async create(plan: StartPlan, signal: AbortSignal | undefined): Promise<string> {
    const { name, config: cfg, workDir } = plan;
    // The command text travels in the environment, never in argv (ps shows argv).
    const launch = commandViaEnv(plan.argv);
    const env = { ...plan.env, ...launch.env };
    const envArgs = Object.entries(env)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    const target = sessionTarget(name);
    const tag = (k: string, v: string) => ["set-option", "-t", target, k, v];
    // Ownership is part of creation: one command list, which the server runs as a whole, so
    // no controller death (or stop) between steps can leave an untagged session behind.
    // Declared env *names* only: values (secrets included) live in the session environment.
    const tags = [
      tag("@gc_city", this.tag),
      tag("@gc_name", name),
      tag("@gc_workdir", toHex(workDir)),
      tag("@gc_envkeys", toHex(JSON.stringify(Object.keys(cfg.env).sort()))),
    ];
    if (cfg.readyPromptPrefix?.trim()) tags.push(tag("@gc_prefix", toHex(cfg.readyPromptPrefix)));
    let out: string[];
    try {
      [out = []] = await this.client.commandList(
        [
          [
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{session_id}",
            "-s",
            tmuxSessionName(name),
            "-x",
            String(this.settings.cols),
            "-y",
            String(this.settings.rows),
            ...envArgs,
            "--",
            SHELL,
            "-c",
            CD_WRAPPER,
            "gc-session",
            workDir,
            ...launch.argv,
          ],
          ...tags,
        ],
        { signal, create: true },
      );
    } catch (e) {
      if (isDuplicate(e)) throw new SessionExistsError(name, { cause: e }, await this.foreignHolder(name));
      // A failure after new-session (a tag) leaves a session this start created: remove it.
      const made = await this.lookup(sessionTarget(name)).catch(() => undefined);
      if (made && made.name === undefined) await this.destroy(made.id).catch(() => undefined);
      throw e;
    }
    const id = out[0]?.trim() ?? "";
    if (!/^\$\d+$/.test(id))
      throw new ProviderError("tmux", `new-session printed ${JSON.stringify(out.join(" "))}`);
    if (signal?.aborted) {
      await this.destroy(id).catch(() => undefined);
      throw signal.reason;
    }
    return id;
  }

  private async died(name: string, id: string): Promise<SessionDiedDuringStartupError> {
    let detail = "the session is gone";
    try {
      let s = await this.lookup(id);
      if (s && !isLive(s) && !hasExitInfo(s.panes[0])) await this.reapLostChildren();
      for (let i = 0; i < 10 && s && !isLive(s) && !hasExitInfo(s.panes[0]); i++) {
        await sleep(STATE_POLL_MS);
        s = await this.lookup(id);
      }
      const pane = s?.panes[0];
      if (pane?.dead) {
        const how =
          pane.exitStatus !== undefined
            ? `exit status ${pane.exitStatus}`
            : pane.exitSignal !== undefined
              ? `signal ${pane.exitSignal}`
              : "killed";
        // A dead pane's pty is closed, so its screen and history are final. tmux 3.3 closes
        // it as soon as the exit reaches it, discarding output the kernel had not handed
        // over yet (a program that prints and exits at once can lose its last line so):
        // an empty screen is not proof of silence, and the detail says so.
        const tail = outputTail(await captureText(this.pane(id), 0, false));
        detail = `${how}; ${tail ? `last output: ${tail}` : LOST_OUTPUT}`;
      }
    } catch {
      // keep the generic detail
    }
    return new SessionDiedDuringStartupError(name, detail);
  }

  /**
   * Kills the session's whole process tree (every live pane), then the session. Returns as
   * soon as the processes are gone. Idempotent; sessions of other cities are never touched.
   */
  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    this.nudges.forget(name);
    this.ids.delete(name);
    if (s) await this.destroy(s.id);
  }

  private async destroy(id: string): Promise<void> {
    this.deadWithoutStatus.delete(`${this.client.generation}:${id}`);
    for (const [n, r] of this.ids) if (r.id === id) this.ids.delete(n);
    const s = await this.lookup(id).catch(() => undefined);
    const pids = s?.panes.filter((p) => p.pid > 0).map((p) => p.pid) ?? [];
    if (s) await Promise.all(s.panes.filter((p) => !p.dead && p.pid > 0).map((p) => killTree(p.pid)));
    try {
      await this.tmux(["kill-session", "-t", id]);
    } catch (e) {
      if (!isAbsent(e)) throw e;
    }
    // A program whose SIGCHLD tmux missed (see lastExit) would stay a zombie in the server.
    if (pids.some(isZombie)) await this.reapLostChildren();
  }

  /** Sends C-c to the session's pane. Best-effort: resolves when missing or not running. */
  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    await this.sendKeys(name, ["C-c"], opts);
  }

  /** True when the session is ours and some pane's program is alive. */
  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    return s !== undefined && isLive(s);
  }

  /**
   * This city's running sessions whose names start with `prefix`, from one `list-panes -a`.
   * Dead sessions (program exited, kept for its exit status) and foreign sessions are not listed.
   * @throws when tmux cannot be reached.
   */
  async listRunning(prefix: string, opts: OpOptions = {}): Promise<string[]> {
    return (await this.snapshot(prefix, opts))
      .filter((s) => s.running)
      .map((s) => s.name)
      .sort();
  }

  /**
   * Every session of this city whose name starts with `prefix` (dead ones with
   * `running: false`), with attached state and last activity, from one `list-panes -a`.
   * @throws when tmux cannot be reached.
   */
  async snapshot(prefix: string, opts: OpOptions = {}): Promise<SessionSnapshot[]> {
    let lines: string[];
    try {
      lines = await this.tmux(["list-panes", "-a", "-F", PANE_FORMAT], { signal: opts.signal, retry: true });
    } catch (e) {
      if (isAbsent(e)) return []; // no server: nothing of ours can be running
      // A connection lost while the server goes away (kill-server, gc stop): if nothing
      // listens on the socket any more, nothing runs there.
      if (e instanceof TmuxConnectionError && !(await serverListening(this.client.socketPath))) return [];
      throw e;
    }
    const mine = parseSessions(lines, this.tag).filter((s) => s.name?.startsWith(prefix));
    const terminals = await Promise.all(mine.map((s) => this.terminals(s, opts.signal)));
    return mine.map((s, i) => ({
      name: s.name!,
      running: isLive(s),
      attached: terminals[i]! > 0,
      lastActivity: s.activity > 0 ? new Date(s.activity * 1000) : undefined,
    }));
  }

  /**
   * True when `names` is empty and the session runs, or when a live process named in
   * `names` is in the process tree of one of its panes (one /proc snapshot). False when
   * missing or dead.
   */
  async processAlive(name: string, names: readonly string[], opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return false;
    if (names.length === 0) return true;
    const table = await readProcessTable();
    return s.panes.some((p) => !p.dead && anyProcessNamed(processTree(table, p.pid), names));
  }

  /** The exit of a session whose program ended (kept until stop or the next start). */
  async lastExit(name: string, opts: OpOptions = {}): Promise<ExitStatus | undefined> {
    validateSessionName(name);
    let s = await this.find(name, opts.signal);
    if (!s || isLive(s)) return undefined;
    // tmux marks a pane dead when its pty closes and records the exit only once it reaps
    // the child. A tmux linked with libutempter can miss that SIGCHLD (the utempter helper
    // resets SIGCHLD while it runs, exactly when a pane closes) and then never reaps the
    // child until another one exits: make it fork a trivial job, whose SIGCHLD runs tmux's
    // waitpid(WAIT_ANY) loop. Until the exit is known the answer is "not known yet"; past a
    // grace period it is reported as a death by an unknown signal.
    if (s && !hasExitInfo(s.panes[0])) await this.reapLostChildren();
    for (let i = 0; i < 10 && s && !hasExitInfo(s.panes[0]); i++) {
      await sleep(STATE_POLL_MS, undefined, { signal: opts.signal });
      s = await this.find(name, opts.signal);
    }
    const pane = s?.panes[0];
    if (!s || !pane || isLive(s)) return undefined;
    if (!hasExitInfo(pane)) {
      const key = `${this.client.generation}:${s.id}`;
      const first = this.deadWithoutStatus.get(key) ?? Date.now();
      this.deadWithoutStatus.set(key, first);
      if (Date.now() - first < EXIT_STATUS_GRACE_MS) return undefined;
    }
    // tmux 3.3 reports a status only for normal exits; a death time without one is a signal.
    const signal =
      pane.exitStatus === undefined
        ? pane.exitSignal !== undefined
          ? (signalName(pane.exitSignal) ?? String(pane.exitSignal))
          : "unknown"
        : null;
    const at = pane.deadAt ?? s.activity;
    return { code: pane.exitStatus ?? null, signal, at: at > 0 ? new Date(at * 1000) : new Date() };
  }

  // ---- input -----------------------------------------------------------------------------

  /**
   * Waits (up to `nudgeIdleWaitMs`) for the session to be idle, then delivers like
   * {@link nudgeNow}. Resolves when the session is missing or not running.
   * @throws NudgeNotDeliveredError when the text could not be confirmed as submitted, or
   * a menu/dialog is waiting for a choice (typing would answer it).
   */
  async nudge(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return;
    await this.nudgeSession(
      name,
      s,
      terminalText(flattenContent(content), opts),
      true,
      opts.signal,
      opts.multiline,
    );
  }

  /**
   * Delivers the text as one transaction: it goes into a named paste buffer (never argv,
   * never key by key), is pasted (bracketed when the program asked for it), then a literal
   * CR submits it; the screen is read to confirm the paste landed and the input was
   * submitted, and CR is retried (bounded) while the text still sits on the cursor line.
   * Nudges to one session are serialized. Resolves when the session is missing.
   * @throws NudgeNotDeliveredError when submission could not be confirmed, or a menu is on screen.
   */
  async nudgeNow(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return;
    await this.nudgeSession(
      name,
      s,
      terminalText(flattenContent(content), opts),
      false,
      opts.signal,
      opts.multiline,
    );
  }

  private nudgeSession(
    name: string,
    s: SessionInfo,
    text: string,
    waitIdle: boolean,
    signal: AbortSignal | undefined,
    multiline?: "paste" | "lines" | undefined,
  ): Promise<void> {
    if (text.includes("\0")) return Promise.reject(new NudgeNotDeliveredError(name, "the text contains NUL"));
    return this.nudges.run(name, async () => {
      if (text === "") return;
      if (waitIdle && this.settings.nudgeIdleWaitMs > 0) {
        const r = await this.idleWait(s, this.settings.nudgeIdleWaitMs, signal);
        if (r === "gone") return;
      }
      await deliver(this.pane(s.id), name, text, {
        confirmMs: this.settings.nudgeConfirmMs,
        multiline,
        signal,
      });
    });
  }

  /** Raw keys (tmux key names) in one `send-keys`; no implicit Enter. Resolves when missing or dead. */
  async sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (keys.length === 0) return;
    validateKeys(keys);
    // Keys sent to a dead pane are dropped by tmux, so a remembered id needs no liveness check.
    const known = this.remembered(name);
    if (known) {
      try {
        await sendKeys(this.pane(known.id, known.generation), keys, opts.signal);
        return;
      } catch (e) {
        if (!isStaleTarget(e)) throw e;
        this.ids.delete(name);
      }
    }
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return;
    try {
      await sendKeys(this.pane(s.id, this.client.generation), keys, opts.signal);
    } catch (e) {
      if (!isAbsent(e) && !isStaleTarget(e)) throw e;
    }
  }

  // ---- observation -----------------------------------------------------------------------

  /**
   * The last `lines` lines of the pane (wrapped lines joined, trailing blanks dropped),
   * newest last; `lines <= 0` = all scrollback. Works on dead sessions too (last words).
   * @throws SessionNotFoundError when the session is missing.
   */
  async peek(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, false, opts);
  }

  /** {@link peek} with the screen's colours and attributes kept as SGR escapes (`capture-pane -e`). */
  async peekStyled(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, true, opts);
  }

  private async screenText(name: string, lines: number, styled: boolean, opts: OpOptions): Promise<string> {
    validateSessionName(name);
    const known = this.remembered(name);
    if (known) {
      try {
        return await captureText(this.pane(known.id, known.generation), lines, styled, opts.signal);
      } catch (e) {
        if (!isStaleTarget(e)) throw e;
        this.ids.delete(name);
      }
    }
    const target = sessionTarget(name);
    // Capturing is read-only, so it goes out together with the ownership lookup (one round
    // trip) and its text is thrown away unless the session is ours.
    const [s, text] = await Promise.all([
      this.lookup(target, opts.signal),
      captureText(this.pane(target), lines, styled, opts.signal).catch((e: unknown) => {
        if (isAbsent(e)) return undefined;
        throw e;
      }),
    ]);
    if (s?.name !== name || text === undefined) throw new SessionNotFoundError(name);
    this.ids.set(name, { id: s.id, generation: this.client.generation });
    return text;
  }

  /** Time of the last output (second resolution), or `undefined` when missing. */
  async getLastActivity(name: string, opts: OpOptions = {}): Promise<Date | undefined> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    return s && s.activity > 0 ? new Date(s.activity * 1000) : undefined;
  }

  /** True when at least one client is attached. False when missing. */
  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    return s !== undefined && (await this.terminals(s, opts.signal)) > 0;
  }

  /**
   * Terminals attached to `s`: tmux's `session_attached` also counts control clients (an
   * idle wait's watcher, see {@link idleWait}), so a non-zero count is checked client by
   * client. No round trip while nothing is attached. 0 when the session went away meanwhile.
   */
  private async terminals(s: SessionInfo, signal: AbortSignal | undefined): Promise<number> {
    if (s.attached === 0) return 0;
    return attachedClients(this.client, s.id, signal).catch((e: unknown) => {
      if (isAbsent(e)) return 0;
      throw e;
    });
  }

  /**
   * Runs `tmux attach-session` on this socket with the caller's terminal and resolves when
   * the user detaches (or the session ends). Aborting detaches.
   * @throws SessionNotFoundError when missing; ProviderError when stdin is not a terminal.
   */
  async attach(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s) throw new SessionNotFoundError(name);
    if (!process.stdin.isTTY) throw new ProviderError("tmux", "attach needs a terminal on stdin");
    const env = { ...process.env };
    delete env.TMUX;
    delete env.TMUX_PANE;
    const [bin, ...args] = this.tmuxArgv();
    const child = spawn(bin!, [...args, "attach-session", "-t", s.id], { stdio: "inherit", env });
    const onAbort = () => child.kill("SIGTERM");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const code = await new Promise<number | null>((res, rej) => {
        child.once("error", rej);
        child.once("exit", (c) => res(c));
      });
      opts.signal?.throwIfAborted();
      if (code !== 0) throw new ProviderError("tmux", `attach-session exited with ${code}`);
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Drops the pane's scrollback. Best-effort: resolves when missing. */
  async clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s) return;
    try {
      await clearHistory(this.pane(s.id), opts.signal);
    } catch (e) {
      if (!isAbsent(e)) throw e;
    }
  }

  // ---- metadata --------------------------------------------------------------------------

  /**
   * Stores `value` (any UTF-8) as the session user option `@gc_m_<hex key>`, hex-encoded,
   * so no value is ever parsed by tmux. Lives as long as the session.
   * @throws SessionNotFoundError when missing.
   */
  async setMeta(name: string, key: string, value: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.setOption(name, `@gc_m_${toHex(key)}`, `v${toHex(value)}`, opts.signal);
  }

  /** The stored value or `undefined`; one tmux command. @throws SessionNotFoundError when missing. */
  async getMeta(name: string, key: string, opts: OpOptions = {}): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    let lines: string[];
    try {
      lines = await this.tmux(
        [
          "list-panes",
          "-s",
          "-t",
          sessionTarget(name),
          "-F",
          `#{@gc_city}|#{@gc_name}|#{@gc_m_${toHex(key)}}`,
        ],
        { signal: opts.signal, retry: true },
      );
    } catch (e) {
      if (isAbsent(e)) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw e;
    }
    const [city, owner, stored] = (lines[0] ?? "").split("|");
    if (city !== this.tag || owner !== name) throw new SessionNotFoundError(name);
    if (!stored) return undefined;
    return stored.startsWith("v") ? (fromHex(stored.slice(1)) ?? undefined) : undefined;
  }

  /** Removes a key; resolves when it was not set. @throws SessionNotFoundError when missing. */
  async removeMeta(name: string, key: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.setOption(name, `@gc_m_${toHex(key)}`, undefined, opts.signal);
  }

  private async setOption(name: string, option: string, value: string | undefined, signal?: AbortSignal) {
    const argv = (id: string) =>
      value === undefined ? ["set-option", "-u", "-t", id, option] : ["set-option", "-t", id, option, value];
    const known = this.remembered(name);
    if (known) {
      try {
        await this.tmux(argv(known.id), { signal, generation: known.generation });
        return;
      } catch (e) {
        if (!isStaleTarget(e)) throw e;
        this.ids.delete(name);
      }
    }
    const s = await this.find(name, signal);
    if (!s) throw new SessionNotFoundError(name);
    try {
      await this.tmux(argv(s.id), { signal, generation: this.client.generation });
    } catch (e) {
      if (isAbsent(e) || isStaleTarget(e)) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw e;
    }
  }

  // ---- files and commands ----------------------------------------------------------------

  /**
   * Copies `src` (file or directory) to `relDst` under the session's work dir.
   * Best-effort: resolves when the session or `src` is missing.
   * @throws InvalidNameError when `relDst` leaves the work dir.
   */
  async copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
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
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s) || !config.sessionLive?.length) return;
    const workDir = s.workDir ?? resolve(this.cityDir, config.workDir);
    await runHooks("session_live", config.sessionLive, {
      cwd: resolve(this.cityDir, hookDirOf(config)),
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
    const s = await this.find(name, opts.signal);
    if (!s) throw new SessionNotFoundError(name);
    let declared: Record<string, string>;
    try {
      declared = await this.declaredEnv(s.id, opts.signal);
    } catch (e) {
      if (isAbsent(e)) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw e;
    }
    const workDir = s.workDir ?? this.cityDir;
    const env = {
      ...sessionEnv(process.env, name, { env: declared, workDir }, this.envCity),
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

  // ---- idleness and interactions ---------------------------------------------------------

  /**
   * Resolves `idle` once the screen has been unchanged for `idleQuietMs` with the ready
   * prompt visible (when the session declared one), no busy marker and no menu or dialog on
   * screen; `timeout` at `timeoutMs` (a hard bound); `gone` when missing or dead.
   */
  async waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return "gone";
    return this.idleWait(s, timeoutMs, opts.signal);
  }

  /**
   * {@link waitIdle} driven by the session's `%output` notifications ({@link watchSession});
   * the screen is still read through the provider's client, only to confirm.
   */
  private async idleWait(
    s: SessionInfo,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<IdleResult> {
    const w = this.watchSession(s.id);
    try {
      return await waitIdle(this.pane(s.id), timeoutMs, {
        readyPrefix: s.readyPrefix,
        quietMs: this.settings.idleQuietMs,
        signal,
        watch: w.watch,
      });
    } finally {
      await w.close();
    }
  }

  /**
   * A watch on the session's output (see {@link watchSession}); `undefined` when the session
   * is missing or not running.
   */
  async watchOutput(name: string, opts: OpOptions = {}): Promise<SessionOutputWatch | undefined> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return undefined;
    const w = this.watchSession(s.id);
    try {
      await w.watch.arm(opts.signal);
    } catch (e) {
      await w.close();
      throw e;
    }
    return { settle: (o) => w.watch.settle(o), close: w.close };
  }

  /**
   * The `%output` notifications of session `id`: the provider's own client sees no output
   * (it sits in the keeper session, `no-output`), so a second control client attaches to the
   * session until `close` (`ignore-size`: it never resizes the window; it does not count as
   * an attached terminal, see {@link terminals}). Connects on first use.
   */
  private watchSession(id: string): { readonly watch: OutputWatch; close(): Promise<void> } {
    const client = new ControlClient({
      socket: this.settings.socket,
      tmuxPath: this.settings.tmuxPath,
      commandTimeoutMs: this.settings.commandTimeoutMs,
      env: this.clientEnv,
      attach: id,
    });
    const watch = new OutputWatch(client);
    return {
      watch,
      close: async () => {
        watch.dispose();
        await client.close();
      },
    };
  }

  /** The approval prompt, dialog or menu on screen, or `undefined` (also when missing). */
  async pending(name: string, opts: OpOptions = {}): Promise<PendingInteraction | undefined> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) return undefined;
    const st = await readPane(this.pane(s.id), opts.signal);
    return st ? findInteraction(st.rows.join("\n")) : undefined;
  }

  /** Pending interactions of the running sessions among `names`, from one {@link TmuxProvider.look}. */
  async pendingAll(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, PendingInteraction>> {
    const out = new Map<string, PendingInteraction>();
    for (const [n, l] of await this.look(names, opts)) if (l.interaction) out.set(n, l.interaction);
    return out;
  }

  /**
   * The screens (with their interactions) of the running sessions among `names`: one
   * `list-panes -a`, then one command list capturing only the screens that printed since
   * they were last read (none in a quiet city). A capture is trusted only when it was taken
   * in a later second than the session's last output (tmux keeps activity in whole seconds),
   * so no output is missed.
   */
  async look(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, SessionLook>> {
    const wanted = new Set(names);
    const out = new Map<string, SessionLook>();
    let lines: string[];
    try {
      lines = await this.tmux(["list-panes", "-a", "-F", PANE_FORMAT], { signal: opts.signal, retry: true });
    } catch (e) {
      if (isAbsent(e)) return out;
      throw e;
    }
    const gen = this.client.generation;
    const live = parseSessions(lines, this.tag).filter(
      (s) => s.name !== undefined && wanted.has(s.name) && isLive(s),
    );
    const lookOf = (s: SessionInfo, screen: string, found: PendingInteraction | undefined): SessionLook => ({
      screen,
      interaction: found,
      lastActivity: s.activity > 0 ? new Date(s.activity * 1000) : undefined,
      readyPromptPrefix: s.readyPrefix,
    });
    const keep = new Set<string>();
    const stale: SessionInfo[] = [];
    for (const s of live) {
      const key = `${gen}:${s.id}`;
      keep.add(key);
      const hit = this.interactionCache.get(key);
      if (hit && hit.activity === s.activity) out.set(s.name!, lookOf(s, hit.screen, hit.found));
      else stale.push(s);
    }
    for (const k of this.interactionCache.keys()) if (!keep.has(k)) this.interactionCache.delete(k);
    if (stale.length === 0) return out;
    const readAt = Math.floor(Date.now() / 1000);
    const screens = await captureScreens(
      this.client,
      stale.map((s) => `${s.id}:`),
      opts.signal,
    );
    stale.forEach((s, i) => {
      const rows = screens[i];
      if (rows === undefined) return;
      const screen = rows.map((r) => r.trimEnd()).join("\n");
      const found = findInteraction(screen);
      out.set(s.name!, lookOf(s, screen, found));
      if (readAt > s.activity)
        this.interactionCache.set(`${gen}:${s.id}`, { activity: s.activity, screen, found });
    });
    return out;
  }

  /**
   * Answers the interaction on screen by moving the cursor to the chosen option, verifying
   * it, and confirming. @throws SessionNotFoundError when missing; ProviderError when
   * nothing is pending, the id differs, or no option fits; DialogRefusedError when it
   * could not be answered safely.
   */
  async respond(name: string, response: InteractionResponse, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.find(name, opts.signal);
    if (!s || !isLive(s)) throw new SessionNotFoundError(name);
    await respondToInteraction(this.screenIO(s.id, opts.signal), response, { signal: opts.signal });
  }

  /**
   * Stops every session of this city (dead ones too), then kills the city's tmux server and
   * removes its socket, unless sessions that are not ours still live on it (those are never
   * touched). Reads afterwards do not start a new server. Idempotent.
   *
   * A controller killed a moment ago can leave its control client still running the commands
   * it had sent (a `new-session` arriving after the list was read): that client is removed
   * first, and sessions are listed again until none of ours is left.
   */
  async shutdown(opts: OpOptions = {}): Promise<void> {
    await removeOrphanClients(socketArgs(this.settings.socket), this.client).catch(() => undefined);
    for (let round = 0; round < SHUTDOWN_ROUNDS; round++) {
      const ours = await this.snapshot("", opts);
      if (ours.length === 0) break;
      for (const s of ours) await this.stop(s.name, opts);
    }
    let names: string[];
    try {
      names = await this.tmux(["list-sessions", "-F", "#{session_name}"], { signal: opts.signal });
    } catch (e) {
      if (isAbsent(e)) return;
      // The server went away under us (another gc stop, a crash): nothing left to shut down.
      if (e instanceof TmuxConnectionError && !(await serverListening(this.client.socketPath))) return;
      throw e;
    }
    if (names.some((n) => n !== KEEPER_SESSION)) return; // someone else's sessions live here
    const path = this.client.socketPath;
    try {
      await this.tmux(["kill-server"], { signal: opts.signal });
    } catch (e) {
      if (!(e instanceof TmuxConnectionError)) throw e; // the reply may be lost as the server exits
    }
    // tmux leaves its socket file behind; remove it unless a new server already listens there.
    // A server with many panes takes a while to exit; shutdown means it is gone.
    const deadline = Date.now() + SERVER_EXIT_MS;
    while (Date.now() < deadline && (await serverListening(path))) await sleep(STATE_POLL_MS);
    if (!(await serverListening(path))) {
      await unlink(path).catch(() => undefined);
      ServerGate.remove(gateFile(path));
    }
  }

  /**
   * Every live process on the city's socket from /proc: each tmux process started with this
   * socket (the server and any client) and all its descendants (every pane, tagged or not),
   * plus the city's orphans (panes' processes that outlived a lost server, found by their
   * `GC_OWNER` tag; flagged `orphan`). Never talks to tmux, so a server that is exiting is
   * counted, not an error.
   */
  census(): Promise<CensusEntry[]> {
    return this.scan(undefined);
  }

  /** Kills the orphans of session `name` (see {@link OrphanKillProvider}). */
  killOrphans(name: string): Promise<CensusEntry[]> {
    return killOrphans(() => this.scan(name));
  }

  private scan(session: string | undefined): Promise<CensusEntry[]> {
    const [flag, value] = socketArgs(this.settings.socket) as [string, string];
    return processCensus(
      (p) => p.comm.startsWith("tmux") || p.argv0 === "tmux",
      (argv) => hasOption(argv, flag, value),
      { owner: this.envCity.owner, session },
    );
  }

  /** Calls `fn` whenever this provider's connection to the tmux server is lost (server gone). */
  onBackendLost(fn: () => void): () => void {
    return this.client.onConnectionLost(fn);
  }

  /** Closes the control connection (sessions and the server keep running). Idempotent. */
  async close(): Promise<void> {
    await this.client.close();
  }

  // ---- helpers ---------------------------------------------------------------------------

  /**
   * Makes the server fork and reap a trivial job (a constant command, no user text): its
   * SIGCHLD makes tmux reap every exited child, including a pane whose SIGCHLD it missed.
   */
  private async reapLostChildren(): Promise<void> {
    await this.tmux(["run-shell", "-b", "true"]).catch(() => undefined);
  }

  /**
   * Who holds session `name` when it is not this city's: another city sharing the tmux socket
   * (its `@gc_city` tag differs) or something gc did not start; with the fix. `undefined` when
   * it is this city's own or cannot be read.
   */
  private async foreignHolder(name: string): Promise<string | undefined> {
    const owner = await this.tmux(["show-options", "-qv", "-t", sessionTarget(name), "@gc_city"]).then(
      (lines) => lines[0] ?? "",
      () => undefined,
    );
    if (owner === undefined || owner === this.tag) return undefined;
    const sock = this.settings.socketLabel;
    const who = owner ? `it belongs to another city (owner ${owner})` : "it was not started by gc";
    return `${who} on the shared tmux socket ${sock}; give this city its own socket (remove session.tmux.socket from the city file: each city then gets one of its own) or rename the session`;
  }

  /** One tmux command. Never starts a server unless `create` is set (only `new-session` does). */
  private tmux(argv: readonly string[], opts: CommandOptions = {}): Promise<string[]> {
    return this.client.command(argv, { ...opts, create: opts.create ?? false });
  }

  /** One session by target (`=name` or `$id`), owned or not; `undefined` when missing. */
  private async lookup(target: string, signal?: AbortSignal): Promise<SessionInfo | undefined> {
    try {
      const lines = await this.tmux(["list-panes", "-s", "-t", target, "-F", PANE_FORMAT], {
        signal,
        retry: true,
      });
      return parseSessions(lines, this.tag)[0];
    } catch (e) {
      if (isAbsent(e)) return undefined;
      throw e;
    }
  }

  /** The session named `name` when this city owns it. */
  private async find(name: string, signal?: AbortSignal): Promise<SessionInfo | undefined> {
    const s = await this.lookup(sessionTarget(name), signal);
    if (s?.name !== name) return undefined;
    this.ids.set(name, { id: s.id, generation: this.client.generation });
    return s;
  }

  /**
   * The session id last seen for `name` on the current connection. Ids are never reused
   * within a server's life and ownership does not change, so a command on a remembered id
   * either reaches this very session or fails (then the caller looks it up again).
   */
  private remembered(name: string): { readonly id: string; readonly generation: number } | undefined {
    const r = this.ids.get(name);
    return r && r.generation === this.client.generation ? r : undefined;
  }

  /** The pane of session `id` (`$N`, or a `=name` target), on connection `generation` when given. */
  private pane(id: string, generation?: number): Pane {
    return { client: this.client, target: id.endsWith(":") ? id : `${id}:`, generation };
  }

  private screenIO(id: string, signal: AbortSignal | undefined): ScreenIO {
    return {
      screen: () => screen(this.pane(id), signal),
      sendKeys: (keys) => sendKeys(this.pane(id), keys, signal),
    };
  }

  /**
   * The declared env of session `id`: names from `@gc_envkeys`, values from the session
   * environment (where `new-session -e` put them), all in one command-list round trip.
   * Values never sit in a tmux option, so `show-options` cannot reveal a secret.
   */
  private async declaredEnv(id: string, signal: AbortSignal | undefined): Promise<Record<string, string>> {
    const [hex] = await this.tmux(["show-options", "-qv", "-t", id, "@gc_envkeys"], { signal, retry: true });
    const parsed: unknown = hex ? JSON.parse(fromHex(hex.trim()) ?? "[]") : [];
    const keys = Array.isArray(parsed) ? parsed.filter((k): k is string => typeof k === "string") : [];
    if (keys.length === 0) return {};
    // `show-environment` fails for an unset name and would end the list there: `-g`-less
    // lookups of keys we set ourselves are always present.
    const replies = await this.client.commandList(
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
      ...sessionEnv(process.env, name, { env: cfg.env, workDir }, this.envCity),
      GC_TMUX_SOCKET: this.settings.socketLabel,
    };
  }
}

/** True when `pid` exists as a zombie (exited, not yet reaped by its parent). */
function isZombie(pid: number): boolean {
  return readStat(pid)?.state === "Z";
}

/** True when tmux has reaped the pane's program (it then records a death time, and a status for exits). */
function hasExitInfo(pane: SessionInfo["panes"][number] | undefined): boolean {
  return (
    pane !== undefined &&
    (pane.exitStatus !== undefined || pane.exitSignal !== undefined || pane.deadAt !== undefined)
  );
}

function signalName(n: number): string | undefined {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0];
}
