/**
 * TmuxProvider: gc sessions as tmux sessions on a per-city socket, driven through one
 * persistent control-mode connection. Sessions are tagged `@gc_city`, addressed exactly
 * (`=name`, then by session id), and observed in one `list-panes` call per question.
 * Built by `createProvider` (index.ts) from the composition root and `gc conformance`.
 * The provider lists, observes and shuts down; the rest is done by its parts, over one
 * {@link CityServer} (city-server.ts): starts, stops and exits (session-lifecycle.ts),
 * input and idle waits (session-input.ts), screens and interactions (session-screens.ts),
 * metadata (session-meta.ts), files and commands (session-commands.ts).
 */
import { unlink } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidNameError } from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import { type CensusEntry, hasOption, killOrphans, processCensus } from "../../proc/census.js";
import { anyProcessNamed, processTree, readProcessTable } from "../../proc/process-table.js";
import type { ProviderFactoryOptions } from "../factory.js";
import type {
  BackendShutdownProvider,
  BackendWatchProvider,
  BatchInteractionProvider,
  CensusProvider,
  CommandProvider,
  ExecCommandOptions,
  ExecCommandResult,
  ExitStatus,
  ExitStatusProvider,
  IdleResult,
  IdleWaitProvider,
  ImmediateNudgeProvider,
  InteractionProvider,
  InteractionResponse,
  NudgeContent,
  NudgeOptions,
  OpOptions,
  OrphanKillProvider,
  OutputWatchProvider,
  PendingInteraction,
  Provider,
  ProviderCapabilities,
  SessionLook,
  SessionOutputWatch,
  SessionSnapshot,
  SnapshotLookProvider,
  SnapshotProvider,
  StartConfig,
  StartReport,
} from "../provider.js";
import { CityServer } from "./city-server.js";
import { type ControlClient, KEEPER_SESSION } from "./control-client.js";
import { TmuxConnectionError } from "./errors.js";
import { gateFile, ServerGate } from "./gate.js";
import { STATE_POLL_MS } from "./pane.js";
import { removeOrphanClients, serverListening, socketArgs } from "./server.js";
import { SessionCommands } from "./session-commands.js";
import { SessionInput } from "./session-input.js";
import { SessionLifecycle } from "./session-lifecycle.js";
import { SessionMeta } from "./session-meta.js";
import { SessionScreens } from "./session-screens.js";
import {
  isAbsent,
  isLive,
  type ListingFormat,
  LOOK_FORMAT,
  PANE_FORMAT,
  parseSessions,
  type SessionInfo,
} from "./sessions.js";
import type { ResolvedTmuxSettings } from "./settings.js";

/** Times shutdown lists and stops this city's sessions (a late create is caught by the next). */
const SHUTDOWN_ROUNDS = 3;
/** How long shutdown waits for the tmux server to stop listening after kill-server. */
const SERVER_EXIT_MS = 10_000;

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
    SnapshotLookProvider,
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
  private readonly srv: CityServer;
  private readonly lifecycle: SessionLifecycle;
  private readonly input: SessionInput;
  private readonly screens: SessionScreens;
  private readonly meta: SessionMeta;
  private readonly commands: SessionCommands;

  constructor(opts: TmuxProviderOptions) {
    this.srv = new CityServer(opts);
    this.settings = this.srv.settings;
    this.input = new SessionInput(this.srv);
    this.lifecycle = new SessionLifecycle(this.srv, this.input);
    this.screens = new SessionScreens(this.srv);
    this.meta = new SessionMeta(this.srv);
    this.commands = new SessionCommands(this.srv);
  }

  /** argv prefix that reaches this provider's server with a plain `tmux` (for tests and `gc attach`). */
  tmuxArgv(): string[] {
    return this.srv.tmuxArgv();
  }

  /** The control connection (exposed for diagnostics and benchmarks). */
  get control(): ControlClient {
    return this.srv.client;
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

  // ---- lifecycle (session-lifecycle.ts) --------------------------------------------------

  /** {@link SessionLifecycle.start}. */
  start(name: string, config: StartConfig, opts: OpOptions = {}): Promise<StartReport> {
    return this.lifecycle.start(name, config, opts);
  }

  /** {@link SessionLifecycle.stop}. */
  stop(name: string, opts: OpOptions = {}): Promise<void> {
    return this.lifecycle.stop(name, opts);
  }

  /** {@link SessionLifecycle.lastExit}. */
  lastExit(name: string, opts: OpOptions = {}): Promise<ExitStatus | undefined> {
    return this.lifecycle.lastExit(name, opts);
  }

  /** Sends C-c to the session's pane. Best-effort: resolves when missing or not running. */
  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    await this.sendKeys(name, ["C-c"], opts);
  }

  /** True when the session is ours and some pane's program is alive. */
  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
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
    const listed = await this.listOurs(prefix, opts);
    return listed ? this.snapshotOf(listed.mine, opts) : [];
  }

  /**
   * {@link snapshot} and a {@link look} at each running session it lists, from its one
   * `list-panes -a` (see {@link SnapshotLookProvider}).
   * @throws when tmux cannot be reached.
   */
  async snapshotWithLooks(
    prefix: string,
    opts: OpOptions = {},
  ): Promise<{ sessions: SessionSnapshot[]; looks: Map<string, SessionLook> }> {
    // The look's narrower format: what a snapshot and a look read, and ~1/3 less for tmux to expand.
    const listed = await this.listOurs(prefix, opts, "look");
    if (!listed) return { sessions: [], looks: new Map() };
    // The captures are asked for first: they are what the server takes longest on.
    const looks = this.screens.lookAtListed(listed.all, listed.gen, opts, (n) => n.startsWith(prefix));
    const [sessions, seen] = await Promise.all([this.snapshotOf(listed.mine, opts), looks]);
    return { sessions, looks: seen };
  }

  /**
   * This city's sessions whose names start with `prefix` (`mine`), from one `list-panes -a`
   * (every session it listed: `all`), with the connection generation it was made on;
   * `undefined` when no server runs.
   */
  private async listOurs(
    prefix: string,
    opts: OpOptions,
    format: ListingFormat = "pane",
  ): Promise<{ mine: SessionInfo[]; all: SessionInfo[]; gen: number } | undefined> {
    let lines: string[];
    try {
      lines = await this.srv.tmux(["list-panes", "-a", "-F", format === "look" ? LOOK_FORMAT : PANE_FORMAT], {
        signal: opts.signal,
        retry: true,
      });
    } catch (e) {
      if (isAbsent(e)) return undefined; // no server: nothing of ours can be running
      // A connection lost while the server goes away (kill-server, gc stop): if nothing
      // listens on the socket any more, nothing runs there.
      if (e instanceof TmuxConnectionError && !(await serverListening(this.srv.client.socketPath)))
        return undefined;
      throw e;
    }
    const gen = this.srv.client.generation;
    const all = parseSessions(lines, this.srv.tag, format);
    return { mine: all.filter((s) => s.name?.startsWith(prefix)), all, gen };
  }

  /** The snapshot entries of `mine` (attached terminals asked only of attached sessions). */
  private async snapshotOf(mine: readonly SessionInfo[], opts: OpOptions): Promise<SessionSnapshot[]> {
    const terminals = await Promise.all(mine.map((s) => this.srv.terminals(s, opts.signal)));
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
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return false;
    if (names.length === 0) return true;
    const table = await readProcessTable();
    return s.panes.some((p) => !p.dead && anyProcessNamed(processTree(table, p.pid), names));
  }

  /** Time of the last output (second resolution), or `undefined` when missing. */
  async getLastActivity(name: string, opts: OpOptions = {}): Promise<Date | undefined> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    return s && s.activity > 0 ? new Date(s.activity * 1000) : undefined;
  }

  /** True when at least one client is attached. False when missing. */
  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    return s !== undefined && (await this.srv.terminals(s, opts.signal)) > 0;
  }

  // ---- input (session-input.ts) ----------------------------------------------------------

  /** {@link SessionInput.nudge}. */
  nudge(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    return this.input.nudge(name, content, opts);
  }

  /** {@link SessionInput.nudgeNow}. */
  nudgeNow(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    return this.input.nudgeNow(name, content, opts);
  }

  /** {@link SessionInput.sendKeys}. */
  sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    return this.input.sendKeys(name, keys, opts);
  }

  /** {@link SessionInput.waitForIdle}. */
  waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    return this.input.waitForIdle(name, timeoutMs, opts);
  }

  /** {@link SessionInput.watchOutput}. */
  watchOutput(name: string, opts: OpOptions = {}): Promise<SessionOutputWatch | undefined> {
    return this.input.watchOutput(name, opts);
  }

  // ---- screens and interactions (session-screens.ts) -------------------------------------

  /** {@link SessionScreens.peek}. */
  peek(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screens.peek(name, lines, opts);
  }

  /** {@link SessionScreens.peekStyled}. */
  peekStyled(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screens.peekStyled(name, lines, opts);
  }

  /** {@link SessionScreens.pending}. */
  pending(name: string, opts: OpOptions = {}): Promise<PendingInteraction | undefined> {
    return this.screens.pending(name, opts);
  }

  /** {@link SessionScreens.pendingAll}. */
  pendingAll(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, PendingInteraction>> {
    return this.screens.pendingAll(names, opts);
  }

  /** {@link SessionScreens.look}. */
  look(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, SessionLook>> {
    return this.screens.look(names, opts);
  }

  /** {@link SessionScreens.respond}. */
  respond(name: string, response: InteractionResponse, opts: OpOptions = {}): Promise<void> {
    return this.screens.respond(name, response, opts);
  }

  /** {@link SessionScreens.clearScrollback}. */
  clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    return this.screens.clearScrollback(name, opts);
  }

  /** {@link SessionScreens.attach}. */
  attach(name: string, opts: OpOptions = {}): Promise<void> {
    return this.screens.attach(name, opts);
  }

  // ---- metadata (session-meta.ts) --------------------------------------------------------

  /** {@link SessionMeta.setMeta}. */
  setMeta(name: string, key: string, value: string, opts: OpOptions = {}): Promise<void> {
    return this.meta.setMeta(name, key, value, opts);
  }

  /** {@link SessionMeta.getMeta}. */
  getMeta(name: string, key: string, opts: OpOptions = {}): Promise<string | undefined> {
    return this.meta.getMeta(name, key, opts);
  }

  /** {@link SessionMeta.removeMeta}. */
  removeMeta(name: string, key: string, opts: OpOptions = {}): Promise<void> {
    return this.meta.removeMeta(name, key, opts);
  }

  // ---- files and commands (session-commands.ts) ------------------------------------------

  /** {@link SessionCommands.copyTo}. */
  copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    return this.commands.copyTo(name, src, relDst, opts);
  }

  /** {@link SessionCommands.runLive}. */
  runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    return this.commands.runLive(name, config, opts);
  }

  /** {@link SessionCommands.execCommand}. */
  execCommand(
    name: string,
    argv: readonly string[],
    opts: ExecCommandOptions = {},
  ): Promise<ExecCommandResult> {
    return this.commands.execCommand(name, argv, opts);
  }

  // ---- the server ------------------------------------------------------------------------

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
    await removeOrphanClients(socketArgs(this.settings.socket), this.srv.client).catch(() => undefined);
    for (let round = 0; round < SHUTDOWN_ROUNDS; round++) {
      const ours = await this.snapshot("", opts);
      if (ours.length === 0) break;
      for (const s of ours) await this.stop(s.name, opts);
    }
    let names: string[];
    try {
      names = await this.srv.tmux(["list-sessions", "-F", "#{session_name}"], { signal: opts.signal });
    } catch (e) {
      if (isAbsent(e)) return;
      // The server went away under us (another gc stop, a crash): nothing left to shut down.
      if (e instanceof TmuxConnectionError && !(await serverListening(this.srv.client.socketPath))) return;
      throw e;
    }
    if (names.some((n) => n !== KEEPER_SESSION)) return; // someone else's sessions live here
    const path = this.srv.client.socketPath;
    try {
      await this.srv.tmux(["kill-server"], { signal: opts.signal });
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

  /** Kills the orphans of sessions `names`, from one census (see {@link OrphanKillProvider}). */
  killOrphans(names: readonly string[]): Promise<CensusEntry[]> {
    return killOrphans(() => this.scan(new Set(names)));
  }

  private scan(sessions: ReadonlySet<string> | undefined): Promise<CensusEntry[]> {
    const [flag, value] = socketArgs(this.settings.socket) as [string, string];
    return processCensus(
      (p) => p.comm.startsWith("tmux") || p.argv0 === "tmux",
      (argv) => hasOption(argv, flag, value),
      { owner: this.srv.envCity.owner, sessions },
    );
  }

  /** Starts the city's tmux server (and this provider's control connection) when it is not up. */
  async prepare(opts: OpOptions = {}): Promise<void> {
    await this.srv.client.connect(opts.signal);
  }

  /** Calls `fn` whenever this provider's connection to the tmux server is lost (server gone). */
  onBackendLost(fn: () => void): () => void {
    return this.srv.client.onConnectionLost(fn);
  }

  /** Closes the control connection (sessions and the server keep running). Idempotent. */
  async close(): Promise<void> {
    await this.srv.client.close();
  }
}
