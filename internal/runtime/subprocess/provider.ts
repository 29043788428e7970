/**
 * SubprocessProvider: headless pty sessions, held by one detached holder process per
 * provider root (holder-process.ts) that outlives the controller. All state lives on disk under
 * `<stateDir>/subprocess/` and in the holders, so a new provider instance (a restarted
 * controller, or a CLI command) sees every running session. The embedded default where tmux
 * is absent; built by cmd/gc through `createProvider` in index.ts.
 */

import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { cp, link, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import {
  describeError,
  InvalidNameError,
  NudgeNotDeliveredError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
  SessionNotFoundError,
} from "../../base/errors.js";
import { nameProblem, validateMetaKey, validateSessionName } from "../../base/names.js";
import { type CensusEntry, killOrphans, processCensus } from "../../proc/census.js";
import { pidAlive } from "../../proc/kill.js";
import { anyProcessNamed, procStartTime, readArgv, readProcessTable } from "../../proc/process-table.js";
import { OP_TIMEOUT_MS, run, runHooks } from "../../proc/run.js";
import { ownerKey } from "../identity.js";
import { commandViaEnv, hookDirOf, launchArgv, sessionEnv, withoutOwnerTag } from "../launch.js";
import {
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
  StartsInProgress,
  stageLocal,
} from "../lifecycle/index.js";
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
import { deliverText, type TerminalState, terminalText } from "../screen/delivery.js";
import { respondToInteraction, type ScreenIO } from "../screen/keys.js";
import {
  ConnectionPool,
  HolderOpError,
  HolderUnavailableError,
  holderRequest,
  openAttach,
  watchHolder,
} from "./client.js";
import { DETACH_RESET, type DetachKeys, DetachMatcher, describeDetachKeys, unknownKeys } from "./keys.js";
import {
  ensurePrivateDir,
  holderLockPath,
  holderLogPath,
  holderSocketPath,
  providerRoot,
  rotateIfLarge,
  type SessionPaths,
  sessionPaths,
  sessionsDir,
} from "./layout.js";
import {
  type HolderOp,
  type HolderRecord,
  type HolderRequest,
  type HolderResults,
  type HolderSpec,
  type HolderStatus,
  type ModeRequest,
  PROTOCOL_VERSION,
} from "./protocol.js";
import { killSession, sessionProcesses } from "./tree.js";

/** Longest wait for a new holder process to answer on its control socket, and for a `create`. */
export const HOLDER_START_TIMEOUT_MS = 15_000;
/** Longest wait for `readyPromptPrefix`; past it start proceeds (the program may just be quiet). */
export const READY_TIMEOUT_MS = 60_000;
/** Deadline for a status probe (listRunning, isRunning, …). */
export const STATUS_TIMEOUT_MS = 3_000;
/** Deadline for the holder to stop the program and answer `shutdown`. */
export const SHUTDOWN_TIMEOUT_MS = 10_000;
/** How long start keeps answering startup dialogs when `emitsPermissionWarning` is set. */
export const DIALOG_TIMEOUT_MS = 10_000;
/** Screen checks while waiting for readiness (a prompt wakes the wait at once). */
const _READY_POLL_MS = 200;
/** Default terminal width of a new session. */
export const DEFAULT_COLS = 160;
/** Default terminal height of a new session. */
export const DEFAULT_ROWS = 50;
/** Default scrollback lines kept by the screen model. */
export const DEFAULT_SCROLLBACK = 5_000;
/** Default raw log size before rotation. */
export const DEFAULT_LOG_MAX_BYTES = 8 * 1024 * 1024;
/** Default raw output kept in memory. */
export const DEFAULT_RING_BYTES = 1024 * 1024;
/** A start lock that stayed empty this long was left by a crashed starter. */
const EMPTY_LOCK_STALE_MS = 10_000;
const POLL_MS = 25;

/** Variables of the controller's own terminal that must not leak into a session's pty. */
const PTY_ENV = { TERM: "xterm-256color" } as const;

/** Options for {@link SubprocessProvider}. */
export interface SubprocessProviderOptions {
  /** City name (`GC_CITY` in sessions). */
  readonly city: string;
  /** The city's stable id: with the name, the ownership tag recorded with every session. */
  readonly cityId?: string | undefined;
  /** The city's state dir; sessions live under `<stateDir>/subprocess/`. */
  readonly stateDir: string;
  readonly cols?: number | undefined;
  readonly rows?: number | undefined;
  readonly scrollback?: number | undefined;
  readonly logMaxBytes?: number | undefined;
  readonly ringBytes?: number | undefined;
  /** Keys that end `attach`. Default `both` (Ctrl-\ or Ctrl-b d). */
  readonly detachKeys?: DetachKeys | undefined;
  /** Deadline for `readyPromptPrefix`. Default {@link READY_TIMEOUT_MS}. */
  readonly readyTimeoutMs?: number | undefined;
  /** How long start answers startup dialogs after readiness. Default {@link DIALOG_TIMEOUT_MS}. */
  readonly dialogTimeoutMs?: number | undefined;
  /** The built holder script. Default: `holder.js` beside this module (from `dist/`). */
  readonly holderPath?: string | undefined;
  /** Where sessions live. Default `<stateDir>/subprocess` (the ACP provider uses `<stateDir>/acp`). */
  readonly rootDir?: string | undefined;
  /** The provider's name in its errors. Default `subprocess`. */
  readonly name?: string | undefined;
  /** The holder mode sessions run in (its holder script is {@link holderPath}). Default: ptys. */
  readonly mode?: HeldMode | undefined;
  /** Node binary for holders. Default `process.execPath`. */
  readonly nodePath?: string | undefined;
  /** Base environment of sessions and hooks. Default `process.env`. */
  readonly baseEnv?: NodeJS.ProcessEnv | undefined;
  /** Terminal streams `attach` hands over. Default the process's stdin/stdout. */
  readonly terminal?: { readonly input: NodeJS.ReadStream; readonly output: NodeJS.WriteStream } | undefined;
}

/**
 * A plugged-in holder mode (holder-mode.ts) as the provider side uses it: what goes into the
 * spec, and what a start waits for once the holder runs the program. The ACP provider's.
 */
export interface HeldMode {
  /** The spec's `mode`. */
  readonly mode: string;
  /** The mode's own fields of the spec. */
  readonly spec?: Readonly<Record<string, unknown>> | undefined;
  /**
   * Runs once the holder answers, inside the start's `create` (a rejection removes the
   * session): the ACP provider waits for its handshake here.
   */
  afterCreate?(name: string, signal: AbortSignal): Promise<void>;
}

/**
 * The holder entry script of the runtime package whose module is `moduleUrl`: `holder.js`
 * beside it when running from `dist/`, else (tests run the TypeScript sources) the same path
 * under the repository's `dist/`.
 */
export function holderScriptOf(moduleUrl: string): string {
  const here = dirname(fileURLToPath(moduleUrl));
  if (fileURLToPath(moduleUrl).endsWith(".js")) return join(here, "holder.js");
  return resolve(here, "../../../dist/internal/runtime", basename(here), "holder.js");
}

/** This package's holder script (ptys only). */
export function defaultHolderPath(): string {
  return holderScriptOf(import.meta.url);
}

/**
 * What one holder call found. `missing`: nothing listens on the session's socket (the
 * session is gone, or its holder died); `unresponsive`: the socket accepted nothing in time
 * (a busy or hung holder: the session may well be alive, so it is never cleaned up for it).
 */
export type CallResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly why: "missing" | "unresponsive" | "foreign" | "exited" };

/** How long one Enter may take to show on screen before it counts as swallowed (as tmux's default). */
const NUDGE_CONFIRM_MS = 1_500;
/** Screen poll interval while a nudge is confirmed. */
const NUDGE_POLL_MS = 25;

const MISSING = { ok: false, why: "missing" } as const;
const UNRESPONSIVE = { ok: false, why: "unresponsive" } as const;

/** Reads a holder record; `undefined` when absent or unreadable. */
function readRecord(path: string): HolderRecord | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as HolderRecord;
  } catch {
    return undefined;
  }
}

/** True when `pid` is the holder process of provider root `root` (guards against pid reuse). */
async function isHolderProcess(pid: number, root: string): Promise<boolean> {
  const args = await readArgv(pid);
  return args?.some((a) => a.endsWith("holder.js")) === true && args.includes(root);
}

/**
 * Holder ops sent on the kept-open connection to a session's socket (client.ts `reuse`):
 * reads, safe to send twice, whose waits are short (`waitReady` is bounded by the start
 * sequence's poll interval).
 */
const REUSABLE_OPS: ReadonlySet<HolderOp> = new Set<HolderOp>([
  "status",
  "info",
  "peek",
  "screen",
  "meta.get",
  "meta.list",
  "waitReady",
]);

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
  private readonly holderPath: string;
  private readonly starts = new StartsInProgress();
  /** Kept-open connections to session sockets, for the reads in {@link REUSABLE_OPS}. */
  private readonly connections = new ConnectionPool();
  /** The holder spawn in progress in this process, shared by concurrent starts. */
  private holderReady: Promise<void> | undefined;
  /** {@link SubprocessProvider.onBackendLost} subscribers. */
  private readonly lossListeners = new Set<() => void>();
  /**
   * What `look` last read per session: the screen, its interaction, when the read was asked
   * for, and the holder incarnation it came from (valid while the holder reports no output since).
   */
  private readonly screenCache = new Map<
    string,
    {
      readonly incarnation: string;
      readonly askedAt: number;
      readonly screen: string;
      readonly found: PendingInteraction | undefined;
    }
  >();
  /** Stops watching the holder process; set while a watch connection is open. */
  private unwatch: (() => void) | undefined;

  constructor(opts: SubprocessProviderOptions) {
    this.opts = opts;
    this.name = opts.name ?? "subprocess";
    this.city = opts.city;
    this.owner = ownerKey(opts.city, opts.cityId);
    this.root = opts.rootDir ?? providerRoot(opts.stateDir);
    this.holderPath = opts.holderPath ?? defaultHolderPath();
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
    this.connections.close();
    this.lossListeners.clear();
    this.unwatch?.();
    this.unwatch = undefined;
  }

  /**
   * Calls `fn` whenever the holder process of this root ends (it died, taking every session
   * with it, or it exited after its last session), so the controller reconciles at once.
   * Watches the running holder now and each one this provider starts later.
   * @returns the unsubscribe.
   */
  onBackendLost(fn: () => void): () => void {
    this.lossListeners.add(fn);
    void this.watch();
    return () => {
      this.lossListeners.delete(fn);
      if (this.lossListeners.size === 0) {
        this.unwatch?.();
        this.unwatch = undefined;
      }
    };
  }

  /** Opens the watch connection when someone listens and none is open. Never throws. */
  private async watch(): Promise<void> {
    if (this.unwatch || this.lossListeners.size === 0) return;
    this.unwatch = () => undefined; // claimed while connecting
    try {
      this.unwatch = await watchHolder(
        this.controlSocket,
        () => {
          this.unwatch = undefined;
          for (const fn of [...this.lossListeners]) fn();
        },
        STATUS_TIMEOUT_MS,
      );
      if (this.lossListeners.size === 0) {
        this.unwatch();
        this.unwatch = undefined;
      }
    } catch {
      this.unwatch = undefined; // no holder now: watched once this provider starts one
    }
  }

  /**
   * The live holder process of this provider root (whether or not it still answers) and all
   * its descendants (every session's program), from /proc, plus the city's orphans
   * (programs that outlived a lost holder, found by their `GC_OWNER` tag; flagged `orphan`).
   */
  census(): Promise<CensusEntry[]> {
    return this.scan(undefined);
  }

  /** Kills the orphans of session `name` (see {@link OrphanKillProvider}). */
  killOrphans(name: string): Promise<CensusEntry[]> {
    return killOrphans(() => this.scan(name));
  }

  private scan(session: string | undefined): Promise<CensusEntry[]> {
    const node = basename(this.opts.nodePath ?? process.execPath);
    return processCensus(
      (p) => p.pid !== process.pid && (p.argv0 === node || p.argv0.startsWith("node")),
      (argv) => argv.some((a) => a.endsWith("holder.js")) && argv.includes(this.root),
      { owner: this.owner, session },
    );
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
    try {
      const value = await holderRequest(this.paths(name).socket, req, {
        timeoutMs,
        signal,
        expect: { city: this.owner, name },
        reuse: REUSABLE_OPS.has(req.op) ? this.connections : undefined,
      });
      return { ok: true, value };
    } catch (e) {
      if (e instanceof HolderUnavailableError)
        return e.reason === "ENOENT" || e.reason === "ECONNREFUSED" ? MISSING : UNRESPONSIVE;
      if (e instanceof HolderOpError) {
        if (e.code === "not_owner") return { ok: false, why: "foreign" };
        if (e.code === "not_running" || e.code === "shutting_down") return { ok: false, why: "exited" };
        if (e.code === "awaiting_choice") throw new NudgeNotDeliveredError(name, e.message, { cause: e });
        if (e.code === "invalid_name" || e.code === "invalid_key") {
          throw new InvalidNameError(e.code === "invalid_key" ? "key" : "metadata key", "", e.message, {
            cause: e,
          });
        }
        throw new ProviderError(this.name, `${name}: ${req.op}: ${e.message}`, { cause: e });
      }
      throw e;
    }
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
    // The holder's reply to a mode op is the mode's result, which the client passes through.
    return this.call(name, req as unknown as HolderRequest & { op: HolderOp }, timeoutMs, signal) as Promise<
      CallResult<T>
    >;
  }

  /** The session's `status`, as {@link call}. */
  async statusOf(name: string, signal?: AbortSignal): Promise<CallResult<HolderStatus>> {
    return this.call(name, { op: "status" }, STATUS_TIMEOUT_MS, signal);
  }

  /**
   * {@link SubprocessProvider.statusOf}, asking once more with the long operation deadline
   * when the holder was slow: during start a holder busy with a burst of other starts must
   * not make this session look dead.
   */
  private async patientStatus(name: string, signal?: AbortSignal): Promise<CallResult<HolderStatus>> {
    const st = await this.statusOf(name, signal);
    if (st.ok || st.why !== "unresponsive") return st;
    return this.call(name, { op: "status" }, OP_TIMEOUT_MS, signal);
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
    return this.starts.run(name, () => this.startGuarded(name, config, signal));
  }

  private async startGuarded(
    name: string,
    config: StartConfig,
    signal: AbortSignal | undefined,
  ): Promise<StartReport> {
    let release: (() => Promise<void>) | undefined;
    try {
      release = await this.lock(name);
      await this.clearPrevious(name);
      signal?.throwIfAborted();
      const plan = planStart(name, { name: this.city, owner: this.owner }, config, {
        baseEnv: this.opts.baseEnv ?? process.env,
        terminal: PTY_ENV,
      });
      await mkdir(plan.hookDir, { recursive: true });
      const destroy = async () => {
        await this.teardown(name, true).catch(() => undefined);
      };
      const backend: StartBackend = {
        provider: "subprocess",
        runCommand: runLocalCommand,
        stage: (p) => stageLocal("subprocess", p),
        create: (p, sig) =>
          this.createSession(name, p.config, p.env, sig)
            .then(() => this.opts.mode?.afterCreate?.(name, sig))
            .catch(async (e: unknown) => {
              await destroy();
              throw e;
            }),
        alive: async (sig) => {
          const st = await this.patientStatus(name, sig);
          return st.ok && st.value.running;
        },
        died: () =>
          this.requireAlive(name, undefined).then(
            () => new SessionDiedDuringStartupError(name),
            (e) => e,
          ),
        screen: (sig) => this.screenIO(name, sig).screen(),
        sendKeys: (keys, sig) => this.sendKeys(name, keys, { signal: sig }),
        waitForPrompt: async (prefix, ms, sig) => {
          await this.call(name, { op: "waitReady", prefix, timeoutMs: ms }, ms + STATUS_TIMEOUT_MS, sig);
        },
        nudge: (text, sig) => this.deliver(name, text, sig, true, config.multiline),
        destroy,
      };
      const limits = limitsFor(config, {
        readyTimeoutMs: this.opts.readyTimeoutMs ?? READY_TIMEOUT_MS,
        dialogTimeoutMs: this.opts.dialogTimeoutMs ?? DIALOG_TIMEOUT_MS,
      });
      return await runStart(backend, plan, limits, signal);
    } catch (e) {
      // Whatever step noticed the abort (a hook, a wait, a dialog), the caller gets its reason.
      if (signal?.aborted) throw signal.reason;
      throw e;
    } finally {
      await release?.();
    }
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
   * Takes the start lock `<root>/locks/<name>.lock`.
   * @throws SessionExistsError when another live starter holds it.
   */
  private async lock(name: string): Promise<() => Promise<void>> {
    const release = await tryLock(this.root, this.paths(name).lock);
    if (!release) throw new SessionExistsError(name);
    return release;
  }
  /**
   * Under the start lock: refuses a live session, reaps an exited one, clears stale files.
   * @throws SessionExistsError when the name is live, unresponsive, or owned by another city.
   */
  private async clearPrevious(name: string): Promise<void> {
    const p = this.paths(name);
    const st = await this.statusOf(name);
    if (st.ok) {
      if (st.value.running) throw new SessionExistsError(name);
      await this.teardown(name, true);
      return;
    }
    if (st.why === "foreign") {
      throw new SessionExistsError(name, { cause: new Error("held by a session of another city") });
    }
    if (st.why === "unresponsive") {
      throw new SessionExistsError(name, { cause: new Error("its holder is not answering in time") });
    }
    const rec = readRecord(p.record);
    if (rec && rec.city !== this.owner) {
      throw new SessionExistsError(name, { cause: new Error(`left by city ${rec.city}`) });
    }
    if (rec && !(await this.letGo(rec))) {
      throw new SessionExistsError(name, { cause: new Error(`holder ${rec.holderPid} is not answering`) });
    }
    // No socket answering and no record (a fresh name): only stray files can be left.
    if (!rec && st.why === "missing") await this.removeFiles(name);
    else await this.teardown(name, true);
  }

  /**
   * Asks the holder process to create the session (spawning the holder first when none
   * serves this root), and resolves once the session's socket serves and its program runs.
   * Not abortable once the holder is asked (the caller's `destroy` removes what was made).
   * @throws SessionDiedDuringStartupError when the program cannot be started.
   */
  private async createSession(
    name: string,
    config: StartConfig,
    env: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (!existsSync(this.holderPath)) {
      throw new ProviderError("subprocess", `holder not found at ${this.holderPath}: run \`npm run build\``);
    }
    signal?.throwIfAborted();
    const p = this.paths(name);
    ensurePrivateDir(p.dir);
    ensurePrivateDir(dirname(p.log));
    if (dirname(p.socket) !== p.dir) ensurePrivateDir(dirname(p.socket));
    await rm(p.socket, { force: true });
    // The command text travels in the environment, never in argv (ps shows argv).
    const launch = commandViaEnv(launchArgv(config));
    const spec: HolderSpec = {
      protocol: PROTOCOL_VERSION,
      city: this.owner,
      name,
      dir: p.dir,
      argv: launch.argv,
      env: { ...env, ...launch.env },
      cwd: config.workDir,
      cols: this.opts.cols ?? DEFAULT_COLS,
      rows: this.opts.rows ?? DEFAULT_ROWS,
      scrollback: this.opts.scrollback ?? DEFAULT_SCROLLBACK,
      ringBytes: this.opts.ringBytes ?? DEFAULT_RING_BYTES,
      socket: p.socket,
      log: p.log,
      holderLog: p.holderLog,
      logMaxBytes: this.opts.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES,
      readyPromptPrefix: config.readyPromptPrefix,
      ...(this.opts.mode ? { ...this.opts.mode.spec, mode: this.opts.mode.mode } : {}),
    };
    // Asked straight away: a holder usually serves already. None answering (or one exiting:
    // its last session just stopped, it refuses with `shutting_down` or has closed its
    // socket) makes sure one does, then asks again.
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await this.ensureHolder();
      try {
        await holderRequest(
          this.controlSocket,
          { op: "create", spec },
          { timeoutMs: HOLDER_START_TIMEOUT_MS },
        );
        void this.watch();
        return;
      } catch (e) {
        // Not after a timeout: the holder may have applied the create it did not answer in time,
        // and asking again would only be told the name is still held.
        const retry =
          (e instanceof HolderUnavailableError && e.reason !== "timeout") ||
          (e instanceof HolderOpError && e.code === "shutting_down");
        if (retry && attempt < 4) continue;
        if (e instanceof HolderOpError) throw new SessionDiedDuringStartupError(name, e.message);
        throw new ProviderError("subprocess", `${name}: creating the session: ${describeError(e)}`, {
          cause: e,
        });
      }
    }
  }

  /** The holder process's control socket. */
  private get controlSocket(): string {
    return holderSocketPath(this.root);
  }

  /** The holder process's pid when it answers on its control socket, else `undefined`. */
  private async holderPid(): Promise<number | undefined> {
    try {
      return (await holderRequest(this.controlSocket, { op: "hello" }, { timeoutMs: STATUS_TIMEOUT_MS })).pid;
    } catch {
      return undefined;
    }
  }

  /**
   * Makes sure a holder process serves this root: spawns one (detached: it outlives us) under
   * `<root>/holder.lock`, so concurrent starters here or in other processes spawn one only.
   * @throws ProviderError when none answers within {@link HOLDER_START_TIMEOUT_MS}.
   */
  private ensureHolder(): Promise<void> {
    this.holderReady ??= this.spawnHolderOnce().finally(() => {
      this.holderReady = undefined;
    });
    return this.holderReady;
  }

  private async spawnHolderOnce(): Promise<void> {
    const deadline = Date.now() + HOLDER_START_TIMEOUT_MS;
    for (;;) {
      if ((await this.holderPid()) !== undefined) return;
      const release = await tryLock(this.root, holderLockPath(this.root));
      if (release) {
        try {
          if ((await this.holderPid()) === undefined) await this.spawnHolder(deadline);
          return;
        } finally {
          await release();
        }
      }
      if (Date.now() > deadline) {
        throw new ProviderError("subprocess", `no holder answered within ${HOLDER_START_TIMEOUT_MS} ms`);
      }
      await sleep(POLL_MS);
    }
  }

  /** Spawns the holder process and waits until its control socket answers. */
  private async spawnHolder(deadline: number): Promise<void> {
    const sock = this.controlSocket;
    if (dirname(sock) !== this.root) ensurePrivateDir(dirname(sock));
    const logPath = holderLogPath(this.root);
    ensurePrivateDir(dirname(logPath));
    // gc may run inside a session: the holder must not carry that session's owner tag.
    const holderEnv: NodeJS.ProcessEnv = withoutOwnerTag(process.env);
    delete holderEnv.NODE_OPTIONS; // an inspector or loader flag of the controller must not follow
    try {
      rotateIfLarge(logPath); // no holder writes it now: one is spawned only when none runs
    } catch {
      // a log that cannot be rotated is appended to as before
    }
    const logFd = openSync(logPath, "a", 0o600);
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(this.opts.nodePath ?? process.execPath, [this.holderPath, this.root], {
        detached: true,
        stdio: ["ignore", logFd, logFd],
        cwd: "/",
        env: holderEnv,
      });
    } finally {
      closeSync(logFd);
    }
    // Detached and unref'd: the holder outlives us; while we live, Node still reaps it.
    child.unref();
    let ended: string | undefined;
    child.once("exit", (code, sig) => {
      ended = sig ? `signal ${sig}` : `exit ${code}`;
    });
    child.once("error", (e) => {
      ended = describeError(e);
    });
    for (;;) {
      if ((await this.holderPid()) !== undefined) return;
      if (ended !== undefined) {
        const tail = (await readFile(logPath, "utf8").catch(() => ""))
          .trim()
          .split("\n")
          .slice(-3)
          .join(" | ");
        throw new ProviderError("subprocess", `holder ${ended}${tail ? `: ${tail}` : ""}`);
      }
      if (Date.now() > deadline) {
        throw new ProviderError(
          "subprocess",
          `the holder did not answer within ${HOLDER_START_TIMEOUT_MS} ms`,
        );
      }
      await sleep(POLL_MS);
    }
  }

  /** The session's visible screen and keyboard, for the shared dialog code. */
  private screenIO(name: string, signal: AbortSignal | undefined): ScreenIO {
    return {
      screen: async () => {
        const r = await this.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal);
        if (!r.ok) throw new SessionNotFoundError(name);
        return r.value.text;
      },
      sendKeys: (keys) => this.sendKeys(name, keys, { signal }),
    };
  }

  /** @throws SessionDiedDuringStartupError (with exit status and last screen lines) unless running. */
  private async requireAlive(name: string, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    const st = await this.patientStatus(name, signal);
    if (st.ok && st.value.running) return;
    let detail = "holder gone";
    if (st.ok && st.value.exit) {
      const ex = st.value.exit;
      detail = ex.signal ? `killed by ${ex.signal}` : `exit code ${ex.code}`;
      const screen = await this.call(name, { op: "peek", lines: 5 }, STATUS_TIMEOUT_MS);
      const last = screen.ok ? screen.value.text.trim() : "";
      if (last) detail += `; last output: ${last.length > 500 ? `…${last.slice(-500)}` : last}`;
    }
    throw new SessionDiedDuringStartupError(name, detail);
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
    await this.teardown(name, false);
  }

  /**
   * Stops every session of this city, exited ones not yet reaped included (a program that
   * exits by itself leaves its session held, with its exit status and last screen, until it
   * is stopped), so the holder, which exits with its last session, is gone when this
   * resolves. Idempotent.
   */
  async shutdown(opts: OpOptions = {}): Promise<void> {
    const sessions = await this.snapshot("", opts);
    if (sessions.length === 0) return;
    const holder = await this.holderPid();
    await Promise.all(sessions.map((s) => this.stop(s.name, opts)));
    // Stops run side by side, so each may have seen the holder still serving another session
    // and not waited for it: once none of the city's sessions is left, the holder is exiting.
    if (holder === undefined || (await this.snapshot("", opts)).length > 0) return;
    const deadline = Date.now() + SHUTDOWN_TIMEOUT_MS;
    while ((await pidAlive(holder)) && (await isHolderProcess(holder, this.root)) && Date.now() < deadline) {
      await sleep(POLL_MS);
    }
  }

  /** Whether a start of `name` is in progress here or in another live process. */
  private async startInProgress(name: string): Promise<boolean> {
    return this.starts.has(name) || (await lockOwner(this.paths(name).lock)) === "live";
  }

  /**
   * True when the holder recorded in `rec` no longer holds the session: it is dead (or its
   * pid now names another process), or it answers on its control socket and let the session
   * go (`release`). False when it lives but answers nothing (left alone).
   */
  private async letGo(rec: HolderRecord): Promise<boolean> {
    if (!(await pidAlive(rec.holderPid)) || !(await isHolderProcess(rec.holderPid, this.root))) return true;
    try {
      await holderRequest(
        this.controlSocket,
        { op: "release", name: rec.name, city: this.owner },
        { timeoutMs: SHUTDOWN_TIMEOUT_MS },
      );
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Has the holder stop the session (never the shared holder process itself), kills whatever
   * of the session survives, and removes its files. When that was the holder's last session,
   * waits for the holder process to exit, so nothing of the root is left running.
   * `force` (the caller holds the start lock) removes files even while a start is in progress.
   */
  private async teardown(name: string, force: boolean): Promise<void> {
    const p = this.paths(name);
    const rec = readRecord(p.record);
    if (rec && rec.city !== this.owner) return;
    let pids: Pick<HolderRecord, "holderPid" | "childPid" | "childStart"> | undefined = rec;
    const st = await this.statusOf(name);
    if (!st.ok && st.why === "foreign") return;
    if (st.ok) {
      pids = st.value;
      try {
        await holderRequest(
          p.socket,
          { op: "shutdown" },
          { timeoutMs: SHUTDOWN_TIMEOUT_MS, expect: { city: this.owner, name } },
        );
      } catch {
        // killed below
      }
    } else if (rec) {
      await this.letGo(rec);
    }
    if (pids) {
      await killSession(pids.childPid, { startTime: pids.childStart });
      await this.awaitIdleHolderExit(pids.holderPid);
    }
    if (!force && (await this.startInProgress(name))) return;
    await this.removeFiles(name);
  }

  /** Removes session `name`'s directory and socket. */
  private async removeFiles(name: string): Promise<void> {
    const p = this.paths(name);
    await rm(p.dir, { recursive: true, force: true });
    if (dirname(p.socket) !== p.dir) await rm(p.socket, { force: true });
  }

  /**
   * When holder `pid` is exiting (alive, but its control socket is closed: its last session
   * is gone), waits until it is gone (bounded by {@link SHUTDOWN_TIMEOUT_MS}).
   */
  private async awaitIdleHolderExit(pid: number): Promise<void> {
    const deadline = Date.now() + SHUTDOWN_TIMEOUT_MS;
    while ((await pidAlive(pid)) && (await isHolderProcess(pid, this.root))) {
      if ((await this.holderPid()) === pid || Date.now() > deadline) return;
      await sleep(POLL_MS);
    }
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
    opts.signal?.throwIfAborted();
    let entries: string[];
    try {
      entries = await readdir(sessionsDir(this.root));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new ProviderError("subprocess", `listing ${sessionsDir(this.root)}: ${describeError(e)}`, {
        cause: e,
      });
    }
    const names = entries.filter((n) => nameProblem(n) === undefined && n.startsWith(prefix)).sort();
    const seen = await Promise.all(
      names.map(async (name): Promise<SessionSnapshot | undefined> => {
        const st = await this.statusOf(name, opts.signal);
        if (st.ok) {
          return {
            name,
            running: st.value.running,
            attached: st.value.attached > 0,
            lastActivity: new Date(st.value.lastActivity),
          };
        }
        if (st.why === "missing") await this.cleanStale(name);
        return undefined;
      }),
    );
    return seen.filter((s): s is SessionSnapshot => s !== undefined);
  }

  /** Removes what a holder that no longer answers left behind, if it was ours and is dead. */
  private async cleanStale(name: string): Promise<void> {
    const p = this.paths(name);
    if (await this.startInProgress(name)) return;
    const rec = readRecord(p.record);
    if (rec && rec.city !== this.owner) return;
    if (rec && !(await this.letGo(rec))) return;
    await this.teardown(name, false);
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
   * (../delivery.ts `deliverText`, as tmux does): the text is pasted (bracketed when the program
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
    await this.deliver(name, text, opts.signal, false, opts.multiline);
  }

  /** Same as {@link SubprocessProvider.nudge}: this provider never waits for idle first. */
  async nudgeNow(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    await this.nudge(name, content, opts);
  }

  private async deliver(
    name: string,
    text: string,
    signal: AbortSignal | undefined,
    strict: boolean,
    multiline?: "paste" | "lines" | undefined,
  ): Promise<void> {
    const wrap = (e: unknown): unknown =>
      e instanceof ProviderError ? new NudgeNotDeliveredError(name, e.message, { cause: e, sent: true }) : e;
    const first = await this.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal).catch((e: unknown) => {
      throw e instanceof ProviderError ? new NudgeNotDeliveredError(name, e.message, { cause: e }) : e;
    });
    if (!first.ok) {
      if (strict) await this.requireAlive(name, signal);
      return;
    }
    if (first.value.rows === undefined) {
      // An ACP session (the protocol confirms the prompt) or a holder of an earlier gc.
      let r: CallResult<HolderResults["nudge"]>;
      try {
        r = await this.call(name, { op: "nudge", text }, OP_TIMEOUT_MS, signal);
      } catch (e) {
        throw wrap(e);
      }
      if (!r.ok && strict) await this.requireAlive(name, signal);
      return;
    }
    const state = async (): Promise<TerminalState | undefined> => {
      const r = await this.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal);
      if (!r.ok || r.value.rows === undefined) return undefined;
      const v = r.value;
      return { rows: v.rows!, cursorX: v.cursorX ?? 0, cursorY: v.cursorY ?? 0, history: v.history };
    };
    let gone = false;
    try {
      await deliverText(
        name,
        {
          state,
          paste: async (body) => {
            gone = !(await this.call(name, { op: "paste", text: body }, OP_TIMEOUT_MS, signal)).ok;
          },
          submit: async () => {
            if (!gone) await this.call(name, { op: "keys", keys: ["Enter"] }, OP_TIMEOUT_MS, signal);
          },
          erase: async () => {
            if (!gone) await this.call(name, { op: "keys", keys: ["BSpace"] }, OP_TIMEOUT_MS, signal);
          },
        },
        text,
        { confirmMs: NUDGE_CONFIRM_MS, pollMs: NUDGE_POLL_MS, multiline, signal },
      );
    } catch (e) {
      throw wrap(e);
    }
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
    return r.ok ? findInteraction(r.value.text) : undefined;
  }

  /**
   * The screens (with their interactions) of the running sessions among `names`: one status
   * per session, and a screen read only when the holder reports output since the session's
   * screen was last read (the read was asked for in a later millisecond than the last output,
   * so none is missed) — a quiet session costs one status call.
   */
  async look(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, SessionLook>> {
    const out = new Map<string, SessionLook>();
    const live = new Set<string>();
    await Promise.all(
      names.map(async (name) => {
        if (nameProblem(name) !== undefined) return;
        const st = await this.statusOf(name, opts.signal);
        if (!st.ok || !st.value.running) return;
        live.add(name);
        const incarnation = `${st.value.holderPid}:${st.value.startedAt}`;
        const lastActivity = new Date(st.value.lastActivity);
        const hit = this.screenCache.get(name);
        if (hit && hit.incarnation === incarnation && hit.askedAt > st.value.lastActivity) {
          out.set(name, { screen: hit.screen, interaction: hit.found, lastActivity });
          return;
        }
        const askedAt = Date.now();
        const r = await this.call(name, { op: "screen" }, OP_TIMEOUT_MS, opts.signal);
        if (!r.ok) return;
        const found = findInteraction(r.value.text);
        this.screenCache.set(name, { incarnation, askedAt, screen: r.value.text, found });
        out.set(name, { screen: r.value.text, interaction: found, lastActivity });
      }),
    );
    for (const n of names) if (!live.has(n)) this.screenCache.delete(n);
    return out;
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
    await respondToInteraction(this.screenIO(name, opts.signal), response, { signal: opts.signal });
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
    try {
      const res = await run(argv, {
        cwd: opts.cwd ?? r.value.workDir,
        env: { ...r.value.env, ...opts.env },
        stdin: opts.stdin,
        timeoutMs: opts.timeoutMs ?? OP_TIMEOUT_MS,
        signal: opts.signal,
        keepOutputOnCut: true,
      });
      return {
        exitCode: res.exitCode ?? 128 + signalNumber(res.signal),
        stdout: res.stdout,
        stderr: res.stderr,
      };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "EACCES") {
        return {
          exitCode: code === "ENOENT" ? 127 : 126,
          stdout: "",
          stderr: `${argv[0]}: ${describeError(e)}\n`,
        };
      }
      throw e;
    }
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
    const p = this.paths(name);
    const expect = { city: this.owner, name };
    const size = () => ({ cols: output.columns || undefined, rows: output.rows || undefined });
    const stream = await openAttach(p.socket, size(), {
      timeoutMs: OP_TIMEOUT_MS,
      signal: opts.signal,
      expect,
    });
    const keys = this.opts.detachKeys ?? "both";
    const matcher = new DetachMatcher(keys);
    const wasRaw = input.isRaw;
    await new Promise<void>((resolveAttach) => {
      let done = false;
      const finish = (how: "detached" | "ended") => {
        if (done) return;
        done = true;
        input.off("data", onInput);
        output.off("resize", onResize);
        stream.socket.off("data", onOutput);
        opts.signal?.removeEventListener("abort", onAbort);
        input.setRawMode(wasRaw);
        input.pause();
        stream.socket.destroy();
        output.write(
          `${DETACH_RESET}\r\n[gc: ${how === "detached" ? "detached from" : "session ended:"} ${name}]\r\n`,
        );
        resolveAttach();
      };
      const onInput = (chunk: Buffer | string) => {
        const step = matcher.feed(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
        if (step.forward.length > 0) stream.socket.write(step.forward);
        if (step.detach) finish("detached");
      };
      const onOutput = (chunk: Buffer) => output.write(chunk);
      const onResize = () => {
        const s = size();
        if (s.cols === undefined || s.rows === undefined) return;
        holderRequest(
          p.socket,
          { op: "resize", cols: s.cols, rows: s.rows },
          { timeoutMs: STATUS_TIMEOUT_MS, expect },
        ).catch(() => undefined);
      };
      const onAbort = () => finish("detached");
      stream.socket.on("data", onOutput);
      stream.socket.on("error", () => finish("ended"));
      stream.socket.on("close", () => finish("ended"));
      output.on("resize", onResize);
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      output.write(`\x1b]2;gc: ${name} (detach: ${describeDetachKeys(keys)})\x07`);
      if (stream.initial.length > 0) output.write(stream.initial);
      input.setRawMode(true);
      input.on("data", onInput);
      input.resume();
      stream.socket.resume();
    });
  }
}

/**
 * Takes lock file `path` under provider root `root` (exclusive create, recording
 * `<pid> <start time>`). A lock whose owner pid is dead (or that stayed empty) is moved aside
 * and retaken once. @returns its release, or `undefined` when a live process holds it.
 */
/** This process's start time (clock ticks since boot), for lock files; read once. */
let ownStart: number | "" | undefined;

async function tryLock(root: string, path: string): Promise<(() => Promise<void>) | undefined> {
  ensurePrivateDir(root);
  ensurePrivateDir(dirname(path));
  // The lock appears with its owner already in it (written aside, then hard-linked into
  // place): a starter killed at any moment never leaves an empty lock behind.
  const mine = `${path}.new-${process.pid}-${Math.random().toString(36).slice(2)}`;
  ownStart ??= procStartTime(process.pid) ?? "";
  await writeFile(mine, `${process.pid} ${ownStart}\n`, { mode: 0o600, flag: "wx" });
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await link(mine, path);
        return () => rm(path, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      const owner = await lockOwner(path);
      if (owner === "live") return undefined;
      // Stale: move it aside; if what we moved was not the stale lock we judged, put it back.
      const aside = `${path}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
      try {
        await rename(path, aside);
      } catch {
        continue; // someone else moved it first
      }
      if ((await lockOwner(aside)) === "live") {
        await link(aside, path).catch(() => undefined);
        await rm(aside, { force: true });
        return undefined;
      }
      await rm(aside, { force: true });
    }
    return undefined;
  } finally {
    await rm(mine, { force: true });
  }
}

/**
 * `live` when the process recorded in lock file `path` (`<pid> <start time>`) still runs, or
 * the file was created so recently that its owner may still be writing it; else `stale`
 * (dead owner, reused pid, long-empty file) or `none` (no lock).
 */
async function lockOwner(path: string): Promise<"live" | "stale" | "none"> {
  let text: string;
  let mtimeMs: number;
  try {
    text = await readFile(path, "utf8");
    mtimeMs = (await stat(path)).mtimeMs;
  } catch {
    return "none";
  }
  const [pidText = "", startText = ""] = text.trim().split(" ");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0)
    return Date.now() - mtimeMs < EMPTY_LOCK_STALE_MS ? "live" : "stale";
  if (!(await pidAlive(pid))) return "stale";
  // A live pid that started at another time is a reused pid, not the starter.
  const started = procStartTime(pid);
  return startText === "" || started === null || String(started) === startText ? "live" : "stale";
}

/** Copies `src` to `relDst` under `workDir`. Resolves when `src` is missing. */
async function copyInto(src: string, workDir: string, relDst: string): Promise<void> {
  const base = resolve(workDir);
  const dst = relDst ? resolve(base, relDst) : base;
  if (dst !== base && !dst.startsWith(base + sep)) {
    throw new InvalidNameError("copy destination", relDst, "must stay inside the work dir");
  }
  let srcStat: Awaited<ReturnType<typeof stat>>;
  try {
    srcStat = await stat(src);
  } catch {
    return;
  }
  let target = dst;
  if (srcStat.isFile()) {
    const dstStat = await stat(dst).catch(() => undefined);
    if (dstStat?.isDirectory()) target = join(dst, basename(src));
  }
  if (resolve(src) === target) return;
  await mkdir(dirname(target), { recursive: true });
  await cp(src, target, { recursive: true, force: true });
}

function signalNumber(sig: NodeJS.Signals | null): number {
  return sig ? (osConstants.signals[sig] ?? 0) : 0;
}
