/**
 * SubprocessProvider: headless pty sessions, held by one detached holder process per
 * provider root (holder-process.ts) that outlives the controller. All state lives on disk under
 * `<stateDir>/subprocess/` and in the holders, so a new provider instance (a restarted
 * controller, or a CLI command) sees every running session. The embedded default where tmux
 * is absent; built by cmd/gc through `createProvider` in index.ts. This module is the
 * provider's surface; it is made of the holder process (holder-control.ts), the session
 * calls (session-calls.ts), the start sequence and making and removing sessions
 * (session-lifecycle.ts), start locks (start-lock.ts), nudge delivery (nudge-delivery.ts),
 * `look` (look.ts), attach (attach.ts) and local file and command work (commands.ts); its
 * options and deadlines are in options.ts.
 */

import { InvalidNameError, ProviderError, SessionNotFoundError } from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import { type CensusEntry, killOrphans } from "../../proc/census.js";
import { anyProcessNamed, readProcessTable } from "../../proc/process-table.js";
import { OP_TIMEOUT_MS, runHooks } from "../../proc/run.js";
import { ownerKey } from "../identity.js";
import { hookDirOf, sessionEnv } from "../launch.js";
import { limitsFor, StartsInProgress } from "../lifecycle/index.js";
import {
  type BackendShutdownProvider,
  type BackendWatchProvider,
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
  type OutputChunk,
  type PendingInteraction,
  type Provider,
  type ProviderCapabilities,
  type SessionLook,
  type SessionSnapshot,
  type SnapshotProvider,
  type StartConfig,
  type StartReport,
} from "../provider.js";
import { findInteraction } from "../screen/classify.js";
import { terminalText } from "../screen/delivery.js";
import { respondToInteraction, type ScreenIO } from "../screen/keys.js";
import { attachTerminal } from "./attach.js";
import { HolderUnavailableError } from "./client.js";
import { copyInto, runInSession } from "./commands.js";
import { defaultHolderPath, HolderControl } from "./holder-control.js";
import { unknownKeys } from "./keys.js";
import { providerRoot, type SessionPaths, sessionPaths } from "./layout.js";
import { ScreenLooks } from "./look.js";
import { deliverNudge } from "./nudge-delivery.js";
import { defaultHolders, PTY_ENV, type SubprocessProviderOptions } from "./options.js";
import type { HolderOp, HolderRequest, HolderResults, HolderStatus, ModeRequest } from "./protocol.js";
import { type CallResult, SessionCalls } from "./session-calls.js";
import { HeldSessions } from "./session-lifecycle.js";
import { sessionProcesses } from "./tree.js";

/**
 * The subprocess {@link Provider}. Safe for concurrent use; a concurrent start of one name
 * (in this process or another) lets exactly one win through an exclusive lock file. A session
 * "exists" while its holder answers (queries such as peek and meta work); it is "running"
 * while its program is alive. A session whose program exited is kept — exit status, screen
 * and metadata readable — until `stop` or a new `start` reaps it; it is never listed.
 */
export class SubprocessProvider
  implements
    Provider,
    IdleWaitProvider,
    ImmediateNudgeProvider,
    InteractionProvider,
    ExitStatusProvider,
    CommandProvider,
    SnapshotProvider,
    CensusProvider,
    OrphanKillProvider,
    BackendWatchProvider,
    BackendShutdownProvider
{
  readonly name: string;
  /** City name. */
  readonly city: string;
  /** Ownership tag of this city's holders: `<name>-<id>` (identity.ts). */
  readonly owner: string;
  /** `<stateDir>/subprocess`. */
  readonly root: string;
  private readonly opts: SubprocessProviderOptions;
  private readonly starts = new StartsInProgress();
  /** Requests to the sessions' sockets. */
  private readonly calls: SessionCalls;
  /** The holder process of this root. */
  private readonly holder: HolderControl;
  /** Making and removing sessions. */
  private readonly sessions: HeldSessions;
  /** The screens `look` read, re-read only after new output. */
  private readonly looks: ScreenLooks;

  constructor(opts: SubprocessProviderOptions) {
    this.opts = opts;
    this.name = opts.name ?? "subprocess";
    this.city = opts.city;
    this.owner = ownerKey(opts.city, opts.cityId);
    this.root = opts.rootDir ?? providerRoot(opts.stateDir);
    this.calls = new SessionCalls({ root: this.root, owner: this.owner, name: this.name });
    this.holder = new HolderControl({
      root: this.root,
      owner: this.owner,
      holderPath: opts.holderPath ?? defaultHolderPath(),
      slots: opts.holders ?? defaultHolders(),
      nodePath: opts.nodePath,
    });
    this.looks = new ScreenLooks(this.calls);
    this.sessions = new HeldSessions({
      city: this.city,
      opts,
      calls: this.calls,
      holder: this.holder,
      starts: this.starts,
    });
  }

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

  /**
   * Stops watching the holder and closes the kept-open session connections (sessions and the
   * holder keep running). Idempotent.
   */
  async close(): Promise<void> {
    this.calls.close();
    this.holder.close();
  }

  /**
   * Calls `fn` whenever the holder process of this root ends (it died, taking every session
   * with it, or it exited after its last session), so the controller reconciles at once.
   * Watches the running holder now and each one this provider starts later.
   * @returns the unsubscribe.
   */
  onBackendLost(fn: () => void): () => void {
    return this.holder.onLost(fn);
  }

  /**
   * The live holder process of this provider root (whether or not it still answers) and all
   * its descendants (every session's program), from /proc, plus the city's orphans
   * (programs that outlived a lost holder, found by their `GC_OWNER` tag; flagged `orphan`).
   */
  census(): Promise<CensusEntry[]> {
    return this.holder.census(undefined);
  }

  /** Kills the orphans of session `name` (see {@link OrphanKillProvider}). */
  killOrphans(names: readonly string[]): Promise<CensusEntry[]> {
    return killOrphans(() => this.holder.census(new Set(names)));
  }

  private paths(name: string): SessionPaths {
    return sessionPaths(this.root, name);
  }

  /**
   * One request to `name`'s holder. `missing` = nothing answers; `foreign` = the holder
   * serves another city (or another name); `exited` = the program is gone (for operations
   * that need it). Other holder errors are thrown as gc errors. Also how a provider composing
   * this one (the ACP provider) reaches its sessions.
   */
  async call<O extends HolderOp>(
    name: string,
    req: Extract<HolderRequest, { op: O }>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<CallResult<HolderResults[O]>> {
    return this.calls.call(name, req, timeoutMs, signal);
  }

  /**
   * One request of the sessions' mode's own ops (`<mode>.<op>`), answered as {@link call}; the
   * mode states the result's type.
   */
  callMode<T>(
    name: string,
    req: ModeRequest,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<CallResult<T>> {
    return this.calls.callMode(name, req, timeoutMs, signal);
  }

  /** The session's `status`, as {@link call}. */
  async statusOf(name: string, signal?: AbortSignal): Promise<CallResult<HolderStatus>> {
    return this.calls.statusOf(name, signal);
  }

  // ---------------------------------------------------------------- start

  /**
   * Creates session `name` as {@link Provider.start} describes: pre_start (failure →
   * HookFailedError, nothing created), overlay and copy files, the holder, readiness
   * (`readyPromptPrefix` on screen, else `readyDelayMs`), session_setup, session_setup_script,
   * the initial nudge, session_live. Any failure after the holder exists removes it again.
   * A previous session of this name whose program exited is reaped first.
   * @throws SessionExistsError when the name is live, being started, or held by another city.
   * @throws SessionDiedDuringStartupError when the program exits before start completes.
   * @throws HookFailedError when a start hook fails (setup and live hooks included).
   */
  async start(name: string, config: StartConfig, opts: OpOptions = {}): Promise<StartReport> {
    validateSessionName(name);
    const signal = opts.signal;
    signal?.throwIfAborted();
    return this.starts.run(name, () =>
      this.sessions.start(name, config, signal, (n, sig) => this.screenIO(n, sig)),
    );
  }

  /** The program's environment: base env without gc's terminal, the pty's TERM, then the session's. */
  private programEnv(name: string, config: StartConfig): Record<string, string> {
    return sessionEnv(
      this.opts.baseEnv ?? process.env,
      name,
      config,
      { name: this.city, owner: this.owner },
      PTY_ENV,
    );
  }

  /**
   * The session's visible screen and keyboard, for the shared dialog code; `styled`: the
   * screen as a styled capture (SGR kept, for the menu parser), else plain text.
   */
  private screenIO(name: string, signal: AbortSignal | undefined, styled = false): ScreenIO {
    return {
      screen: async () => {
        const r = await this.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal);
        if (!r.ok) throw new SessionNotFoundError(name);
        return styled ? (r.value.styled ?? r.value.text) : r.value.text;
      },
      sendKeys: (keys) => this.sendKeys(name, keys, { signal }),
    };
  }

  // ---------------------------------------------------------------- stop

  /**
   * Stops `name`: the holder kills the program's whole session (SIGHUP+SIGTERM, SIGKILL after
   * the grace period) and exits; anything left (a dead holder's orphans) is killed from one
   * /proc snapshot; the socket, record and metadata are removed (logs are kept). Resolves as
   * soon as every process is gone. Idempotent; never touches another city's session.
   */
  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    opts.signal?.throwIfAborted();
    await this.sessions.teardown(name, false);
  }

  /**
   * Stops every session of this city, exited ones not yet reaped included (a program that
   * exits by itself leaves its session held, with its exit status and last screen, until it
   * is stopped), so the holders, which exit with their last session (one holding none, started
   * for a start that then failed, is asked to exit), are gone when this resolves. Idempotent.
   */
  async shutdown(opts: OpOptions = {}): Promise<void> {
    const sessions = await this.snapshot("", opts);
    const holders = await this.holder.pids();
    if (sessions.length === 0 && holders.length === 0) return;
    await Promise.all(sessions.map((s) => this.stop(s.name, opts)));
    // Stops run side by side, so each may have seen its holder still serving another session
    // and not waited for it: once none of the city's sessions is left, the holders are exiting.
    if (holders.length === 0 || (await this.snapshot("", opts)).length > 0) return;
    // A holder that never got a session (started for a start that failed) is asked to exit too.
    await this.holder.dismissAll();
    await Promise.all(holders.map((pid) => this.holder.awaitExit(pid)));
  }

  // ---------------------------------------------------------------- observation

  /** True while the holder answers and the program is alive. False for unknown names. */
  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    return st.ok && st.value.running;
  }

  /**
   * Running sessions of this city whose names start with `prefix`, from one scan of the
   * state dir with every holder probed in parallel. Dead holders' leftovers are cleaned.
   * @throws when the state dir cannot be read.
   */
  async listRunning(prefix: string, opts: OpOptions = {}): Promise<string[]> {
    return (await this.snapshot(prefix, opts)).filter((s) => s.running).map((s) => s.name);
  }

  /**
   * Every session of this city whose name starts with `prefix`: running ones, and exited
   * ones not yet reaped (`running: false`). Holders that no longer answer are cleaned up
   * (their leftover processes killed, files removed) unless a start is in progress.
   * @throws when the state dir cannot be read.
   */
  async snapshot(prefix: string, opts: OpOptions = {}): Promise<SessionSnapshot[]> {
    return this.sessions.snapshot(prefix, opts.signal);
  }

  /**
   * True when `names` is empty and the session runs; otherwise true when a live process of
   * one of `names` is in the program's session (one /proc snapshot). False when missing.
   */
  async processAlive(name: string, names: readonly string[], opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok || !st.value.running) return false;
    if (names.length === 0) return true;
    const table = await readProcessTable();
    return anyProcessNamed(sessionProcesses(table, st.value.childPid, [st.value.holderPid]), names);
  }

  /** Time of the last output (the start time before any), or `undefined` when missing. */
  async getLastActivity(name: string, opts: OpOptions = {}): Promise<Date | undefined> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    return st.ok ? new Date(st.value.lastActivity) : undefined;
  }

  /** True while a terminal is attached. False when missing. */
  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    return st.ok && st.value.attached > 0;
  }

  /** How the program ended, while the exited session is not yet reaped; else `undefined`. */
  async lastExit(name: string, opts: OpOptions = {}): Promise<ExitStatus | undefined> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok || st.value.running || !st.value.exit) return undefined;
    const { code, signal, at } = st.value.exit;
    return { code, signal, at: new Date(at) };
  }

  /**
   * The rendered screen: the last `lines` lines up to the last non-blank one (wrapped rows
   * joined), newest last; `lines <= 0` = all scrollback. Works after the program exited.
   * @throws SessionNotFoundError when there is no such session of this city.
   */
  async peek(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    validateSessionName(name);
    const n = Number.isFinite(lines) ? Math.trunc(lines) : 0;
    const r = await this.call(name, { op: "peek", lines: n }, OP_TIMEOUT_MS, opts.signal);
    if (!r.ok) throw new SessionNotFoundError(name);
    return r.value.text;
  }

  /**
   * Raw output since byte offset `since` (from the holder's in-memory ring), with the next
   * offset; `truncated` when older output was already dropped. `undefined` when missing.
   * @experimental for `gc wait`/`gc run` ("output since the previous observation").
   */
  async output(name: string, since: number, opts: OpOptions = {}): Promise<OutputChunk | undefined> {
    validateSessionName(name);
    const r = await this.call(
      name,
      { op: "output", since: Math.max(0, Math.trunc(since)) },
      OP_TIMEOUT_MS,
      opts.signal,
    );
    if (!r.ok) return undefined;
    const { data, next, truncated } = r.value;
    if (r.value.cols !== undefined && r.value.rows !== undefined)
      return { data, next, truncated, cols: r.value.cols, rows: r.value.rows };
    // A holder started by an older gc: its status says the size.
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok) return undefined;
    return { data, next, truncated, cols: st.value.cols, rows: st.value.rows };
  }

  /**
   * The session's raw output log (rotated to `<path>.1`) and the holder's own diagnostics log.
   * Both are kept after stop; pure (the files may not exist).
   */
  logFiles(name: string): { readonly output: string; readonly holder: string } {
    validateSessionName(name);
    const p = this.paths(name);
    return { output: p.log, holder: p.holderLog };
  }

  // ---------------------------------------------------------------- input

  /**
   * Types the text and submits it with Enter, confirmed on screen by the shared delivery rule
   * (../screen/delivery.ts `deliverText`, as tmux does): the text is pasted (bracketed when the program
   * enabled it), Enter is pressed on its own once the paste showed, and the nudge resolves only
   * once the input line shows the program took it. Terminal control in the text is neutralised
   * unless `opts.raw`. Resolves for a missing or exited session. Empty text sends nothing.
   * @throws NudgeNotDeliveredError when a menu or dialog waits for a choice (typing would answer
   * it), or the program did not visibly take the text (the error quotes the screen).
   */
  async nudge(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const text = terminalText(flattenContent(content), opts);
    if (text === "") return;
    await deliverNudge(this.calls, name, text, opts.signal, false, opts.multiline);
  }

  /** Same as {@link SubprocessProvider.nudge}: this provider never waits for idle first. */
  async nudgeNow(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    await this.nudge(name, content, opts);
  }

  /**
   * Sends raw keys (tmux names: `Enter`, `C-c`, `Escape`, `Up`, `Tab`, `F5`, `M-x`, or a
   * single character); no implicit Enter. Resolves when missing or exited.
   * @throws InvalidNameError naming the first unknown key (nothing is sent).
   */
  async sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const bad = unknownKeys(keys);
    if (bad.length > 0)
      throw new InvalidNameError("key", bad[0]!, "not a key name (e.g. Enter, C-c, Up, F5, M-x)");
    if (keys.length === 0) return;
    await this.call(name, { op: "keys", keys: [...keys] }, OP_TIMEOUT_MS, opts.signal);
  }

  /**
   * Ctrl-C typed into the pty, as a terminal does (an ACP holder cancels the turn). Sent as
   * the `keys` op, not `interrupt`: a holder started by an earlier gc keeps running after an
   * upgrade, and its `interrupt` signalled the foreground group (which ends Claude Code and
   * Gemini CLI). Best-effort: resolves when missing.
   */
  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    await this.call(name, { op: "keys", keys: ["C-c"] }, OP_TIMEOUT_MS, opts.signal);
  }

  /** Drops the screen model's scrollback. Best-effort: resolves when missing. */
  async clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    await this.call(name, { op: "clear" }, OP_TIMEOUT_MS, opts.signal);
  }

  /**
   * Resolves `idle` once the program printed nothing for a quiet period, shows no busy
   * marker and no menu or dialog, and — when the session has a `readyPromptPrefix` — shows
   * that prompt; `timeout` at `timeoutMs` (a hard bound); `gone` when missing or exited.
   */
  async waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    validateSessionName(name);
    const bound = Math.max(0, Math.trunc(timeoutMs));
    try {
      const r = await this.call(name, { op: "waitIdle", timeoutMs: bound }, bound + 500, opts.signal);
      return r.ok ? r.value.result : "gone";
    } catch (e) {
      if (e instanceof HolderUnavailableError) return "timeout";
      throw e;
    }
  }

  // ---------------------------------------------------------------- interactions

  /**
   * The approval prompt, startup dialog or menu with a cursor on the visible screen
   * (screen/classify.ts), or `undefined` when none, or when the session is missing or exited.
   */
  async pending(name: string, opts: OpOptions = {}): Promise<PendingInteraction | undefined> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok || !st.value.running) return undefined;
    const r = await this.call(name, { op: "screen" }, OP_TIMEOUT_MS, opts.signal);
    return r.ok ? findInteraction(r.value.styled ?? r.value.text) : undefined;
  }

  /**
   * The screens (with their interactions) of the running sessions among `names`: one status
   * per session, and a screen read only when the holder reports output since the session's
   * screen was last read (the read was asked for in a later millisecond than the last output,
   * so none is missed) — a quiet session costs one status call.
   */
  async look(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, SessionLook>> {
    return this.looks.look(names, opts.signal);
  }

  /**
   * Answers the interaction on screen: moves the cursor to the chosen option, verifies it
   * there, then confirms. @throws SessionNotFoundError when missing or exited; ProviderError
   * when nothing is pending, the id differs, or no option fits; DialogRefusedError when it
   * could not be answered safely.
   */
  async respond(name: string, response: InteractionResponse, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok || !st.value.running) throw new SessionNotFoundError(name);
    await respondToInteraction(this.screenIO(name, opts.signal, true), response, { signal: opts.signal });
  }

  // ---------------------------------------------------------------- metadata

  /** Stores `key` = `value` in the holder (persisted atomically beside it; removed by stop). @throws SessionNotFoundError when missing. */
  async setMeta(name: string, key: string, value: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    const r = await this.call(name, { op: "meta.set", key, value }, OP_TIMEOUT_MS, opts.signal);
    if (!r.ok) throw new SessionNotFoundError(name);
  }

  /** The value of `key`, or `undefined` when unset. @throws SessionNotFoundError when missing. */
  async getMeta(name: string, key: string, opts: OpOptions = {}): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    const r = await this.call(name, { op: "meta.get", key }, OP_TIMEOUT_MS, opts.signal);
    if (!r.ok) throw new SessionNotFoundError(name);
    return r.value.value ?? undefined;
  }

  /** Removes `key`; resolves when unset. @throws SessionNotFoundError when missing. */
  async removeMeta(name: string, key: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    const r = await this.call(name, { op: "meta.remove", key }, OP_TIMEOUT_MS, opts.signal);
    if (!r.ok) throw new SessionNotFoundError(name);
  }

  // ---------------------------------------------------------------- files and commands

  /**
   * Copies local `src` (file or tree) to `relDst` under the session's work dir (into it when
   * `relDst` is an existing directory and `src` a file). Best-effort: resolves when the
   * session or `src` is missing. @throws InvalidNameError when `relDst` leaves the work dir.
   */
  async copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const r = await this.call(name, { op: "info" }, OP_TIMEOUT_MS, opts.signal);
    if (!r.ok) return;
    await copyInto(src, r.value.workDir, relDst);
  }

  /**
   * Runs `config.sessionLive` (in its hook dir, with the session env) without restarting.
   * Resolves when the session is missing or exited. @throws HookFailedError on a failing command.
   */
  async runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (!config.sessionLive?.length) return;
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok || !st.value.running) return;
    await runHooks("session_live", config.sessionLive, {
      cwd: hookDirOf(config),
      env: this.programEnv(name, config),
      signal: opts.signal,
      timeoutMs: limitsFor(config).setupTimeoutMs,
    });
  }

  /**
   * Runs `argv` directly (no shell) in the session's work dir with the session's environment
   * (both overridable). A program that cannot be found exits 127.
   * @throws SessionNotFoundError when missing. Timeout → OperationTimeoutError.
   */
  async execCommand(
    name: string,
    argv: readonly string[],
    opts: ExecCommandOptions = {},
  ): Promise<ExecCommandResult> {
    validateSessionName(name);
    const r = await this.call(name, { op: "info" }, OP_TIMEOUT_MS, opts.signal);
    if (!r.ok) throw new SessionNotFoundError(name);
    return runInSession(argv, r.value, opts);
  }

  // ---------------------------------------------------------------- attach

  /**
   * Hands this process's terminal to the session until the user presses the detach key
   * (Ctrl-\ or Ctrl-b d by default; Ctrl-b Ctrl-b sends one Ctrl-b), the program exits, or
   * `signal` aborts. The terminal is put in raw mode and restored afterwards; the session
   * keeps running. The pty takes the terminal's size (and follows its resizes).
   * @throws SessionNotFoundError when missing or exited; ProviderError when stdin is not a TTY.
   */
  async attach(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const input = this.opts.terminal?.input ?? process.stdin;
    const output = this.opts.terminal?.output ?? process.stdout;
    if (!input.isTTY) throw new ProviderError("subprocess", "attach needs a terminal on stdin");
    const st = await this.statusOf(name, opts.signal);
    if (!st.ok || !st.value.running)
      throw new SessionNotFoundError(name, st.ok ? "the program has exited" : undefined);
    await attachTerminal({
      name,
      socket: this.paths(name).socket,
      expect: { city: this.owner, name },
      input,
      output,
      keys: this.opts.detachKeys ?? "both",
      signal: opts.signal,
    });
  }
}
