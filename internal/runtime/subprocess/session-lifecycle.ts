/**
 * Making and removing the held sessions of a subprocess provider root: the start sequence
 * (the shared start lifecycle run with this provider's backend) under the start lock of a
 * name, reaping a previous session of that name (or refusing a live one), asking the holder
 * process to create a session (its spec built from the provider's options), listing the
 * city's sessions, and teardown — the holder stops the session, survivors are killed, its
 * files removed — also of sessions whose holder stopped answering. Never touches another
 * city's session.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, rm } from "node:fs/promises";
import { dirname } from "node:path";
import {
  describeError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
} from "../../base/errors.js";
import { nameProblem } from "../../base/names.js";
import { commandViaEnv, launchArgv } from "../launch.js";
import {
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
  type StartsInProgress,
  stageLocal,
} from "../lifecycle/index.js";
import type { SessionSnapshot, StartConfig, StartReport } from "../provider.js";
import type { ScreenIO } from "../screen/keys.js";
import { HolderOpError, HolderUnavailableError, holderRequest } from "./client.js";
import type { HolderControl } from "./holder-control.js";
import {
  ensurePrivateDir,
  ensurePrivateDirOnce,
  makePrivateDir,
  pathAbsent,
  sessionPaths,
  sessionsDir,
} from "./layout.js";
import { deliverNudge } from "./nudge-delivery.js";
import {
  CREATE_READY_WAIT_MS,
  DEFAULT_COLS,
  DEFAULT_LOG_MAX_BYTES,
  DEFAULT_RING_BYTES,
  DEFAULT_ROWS,
  DEFAULT_SCROLLBACK,
  DIALOG_TIMEOUT_MS,
  HOLDER_START_TIMEOUT_MS,
  PTY_ENV,
  READY_TIMEOUT_MS,
  SHUTDOWN_TIMEOUT_MS,
  STATUS_TIMEOUT_MS,
  type SubprocessProviderOptions,
} from "./options.js";
import { type HolderRecord, type HolderResults, type HolderSpec, PROTOCOL_VERSION } from "./protocol.js";
import type { SessionCalls } from "./session-calls.js";
import { lockOwner, tryLock } from "./start-lock.js";
import { killSession } from "./tree.js";

/** What a status request to a socket that does not exist finds. */
const MISSING = { ok: false, why: "missing" } as const;

/** Reads a holder record; `undefined` when absent or unreadable. */
function readRecord(path: string): HolderRecord | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as HolderRecord;
  } catch {
    return undefined;
  }
}

/**
 * What the holder's last reply during a start showed of the session — its screen and, after a
 * wait for the prompt, whether the program ran — for the start's next look, each used once.
 * Whether it runs is only answered before that screen is used: a decision taken from a screen
 * is always confirmed by a look after it.
 */
class LastSeen {
  private screen: string | undefined;
  private running = false;

  /** What a reply showed (`screen` undefined: nothing, as from a holder without these fields). */
  set(screen: string | undefined, running: boolean): void {
    this.screen = screen;
    this.running = screen !== undefined && running;
  }

  /** Forgets it: the session was acted on (or looked at) since. */
  clear(): void {
    this.set(undefined, false);
  }

  /** True once when the reply saw the program running (and its screen is not yet used). */
  takeRunning(): boolean {
    const was = this.running;
    this.running = false;
    return was;
  }

  /** The screen the reply showed, once; `undefined` when there is none to use. */
  takeScreen(): string | undefined {
    const shown = this.screen;
    this.clear();
    return shown;
  }
}

/** The held sessions of one provider root. Safe for concurrent use. */
export class HeldSessions {
  private readonly root: string;
  private readonly city: string;
  private readonly owner: string;
  private readonly opts: SubprocessProviderOptions;
  private readonly calls: SessionCalls;
  private readonly holder: HolderControl;
  private readonly starts: StartsInProgress;
  /** Creates in flight in this process: the n-th concurrent one asks holder slot n mod slots. */
  private creating = 0;
  /** Starts in this process whose create has not begun. */
  private preparing = 0;
  /** Slots whose holder a start started ahead of its create, and that no create asked since. */
  private readonly prepared = new Set<number>();

  constructor(deps: {
    readonly city: string;
    readonly opts: SubprocessProviderOptions;
    readonly calls: SessionCalls;
    readonly holder: HolderControl;
    readonly starts: StartsInProgress;
  }) {
    this.root = deps.holder.root;
    this.city = deps.city;
    this.owner = deps.holder.owner;
    this.opts = deps.opts;
    this.calls = deps.calls;
    this.holder = deps.holder;
    this.starts = deps.starts;
  }

  /**
   * The start sequence of `SubprocessProvider.start` (provider.ts) under the start lock
   * (the caller registered the start in progress): reaps a previous session, plans and runs
   * the shared start lifecycle with this provider's backend; `screenIO` is the session's
   * screen and keyboard for readiness and startup dialogs.
   * @throws as `SubprocessProvider.start` (provider.ts); the abort reason when `signal` aborted.
   */
  async start(
    name: string,
    config: StartConfig,
    signal: AbortSignal | undefined,
    screenIO: (name: string, signal: AbortSignal | undefined) => ScreenIO,
  ): Promise<StartReport> {
    let release: (() => Promise<void>) | undefined;
    // The holder this start's create will most likely ask: when none serves it, it starts now,
    // beside the start's own steps up to create (a burst's many locks and files), unless a
    // pre_start hook (which may fail, and leave it idle) comes first.
    let preparing = true;
    this.preparing++;
    try {
      const slot = (this.creating + this.preparing - 1) % this.holder.slots;
      if (!config.preStart?.length && this.holder.prepare(slot)) this.prepared.add(slot);
      release = await this.lock(name);
      await this.clearPrevious(name);
      signal?.throwIfAborted();
      const plan = planStart(name, { name: this.city, owner: this.owner }, config, {
        baseEnv: this.opts.baseEnv ?? process.env,
        terminal: PTY_ENV,
      });
      await mkdir(plan.hookDir, { recursive: true });
      const limits = limitsFor(config, {
        readyTimeoutMs: this.opts.readyTimeoutMs ?? READY_TIMEOUT_MS,
        dialogTimeoutMs: this.opts.dialogTimeoutMs ?? DIALOG_TIMEOUT_MS,
      });
      // A pty session with a prompt to wait for: its create replies once the prompt shows (at
      // most the start's first wait for it), so a program that is quick to show it is ready
      // after one request, not a create, a look and a wait.
      const readyWaitMs =
        !this.opts.mode && config.readyPromptPrefix?.trim()
          ? Math.min(CREATE_READY_WAIT_MS, limits.readyTimeoutMs)
          : 0;
      // The holder's replies to create and to a wait for the prompt carry what the start asks
      // next (the screen; after a wait, whether the program runs): each answers that next
      // question once, instead of a request of its own.
      const seen = new LastSeen();
      const destroy = async () => {
        seen.clear();
        await this.teardown(name, true).catch(() => undefined);
      };
      const backend: StartBackend = {
        provider: "subprocess",
        runCommand: (argv, o) => {
          seen.clear();
          return runLocalCommand(argv, o);
        },
        stage: (p) => stageLocal("subprocess", p),
        create: (p, sig) => {
          if (preparing) this.preparing--;
          preparing = false;
          return this.createSession(name, p.config, p.env, sig, readyWaitMs)
            .then(async (made) => {
              seen.set(made.screen, false);
              await this.opts.mode?.afterCreate?.(name, sig);
            })
            .catch(async (e: unknown) => {
              await destroy();
              throw e;
            });
        },
        alive: async (sig) => {
          sig.throwIfAborted();
          if (seen.takeRunning()) return true;
          const st = await this.calls.patientStatus(name, sig);
          return st.ok && st.value.running;
        },
        died: () => {
          seen.clear();
          return this.calls.requireAlive(name, undefined).then(
            () => new SessionDiedDuringStartupError(name),
            (e) => e,
          );
        },
        screen: (sig) => {
          sig.throwIfAborted();
          const shown = seen.takeScreen();
          return shown === undefined ? screenIO(name, sig).screen() : Promise.resolve(shown);
        },
        sendKeys: (keys, sig) => {
          seen.clear();
          return screenIO(name, sig).sendKeys(keys);
        },
        waitForPrompt: async (prefix, ms, sig) => {
          seen.clear();
          const r = await this.calls.call(
            name,
            { op: "waitReady", prefix, timeoutMs: ms },
            ms + STATUS_TIMEOUT_MS,
            sig,
          );
          if (r.ok) seen.set(r.value.screen, r.value.running === true);
        },
        nudge: (text, sig) => {
          seen.clear();
          return deliverNudge(this.calls, name, text, sig, true, config.multiline);
        },
        destroy,
      };
      return await runStart(backend, plan, limits, signal);
    } catch (e) {
      // Whatever step noticed the abort (a hook, a wait, a dialog), the caller gets its reason.
      if (signal?.aborted) throw signal.reason;
      throw e;
    } finally {
      if (preparing) {
        this.preparing--;
        // Ended before its create (aborted, refused, failed): a holder started ahead for it (or
        // for others that ended so too) is let go, unless a start here may still ask it.
        if (this.preparing === 0 && this.creating === 0 && this.prepared.size > 0) {
          const slots = [...this.prepared];
          this.prepared.clear();
          await Promise.all(slots.map((s) => this.holder.dismiss(s)));
        }
      }
      await release?.();
    }
  }

  /**
   * Takes the start lock `<root>/locks/<name>.lock`.
   * @throws SessionExistsError when another live starter holds it.
   */
  async lock(name: string): Promise<() => Promise<void>> {
    const release = await tryLock(this.root, sessionPaths(this.root, name).lock);
    if (!release) throw new SessionExistsError(name);
    return release;
  }

  /**
   * Under the start lock: refuses a live session, reaps an exited one, clears stale files.
   * @throws SessionExistsError when the name is live, unresponsive, or owned by another city.
   */
  async clearPrevious(name: string): Promise<void> {
    const p = sessionPaths(this.root, name);
    // No socket file (a fresh name, usually): what a connect would find, without one.
    const st = pathAbsent(p.socket) ? MISSING : await this.calls.statusOf(name);
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
    if (rec && !(await this.holder.letGo(rec))) {
      throw new SessionExistsError(name, { cause: new Error(`holder ${rec.holderPid} is not answering`) });
    }
    // No socket answering and no record (a fresh name): only stray files can be left.
    if (!rec && st.why === "missing") await this.removeFiles(name);
    else await this.teardown(name, true);
  }

  /**
   * Asks one of the root's holder processes to create the session (spawning it first when
   * none serves its slot), and resolves once the session's socket serves and its program runs
   * — with `readyWaitMs` > 0, once its `readyPromptPrefix` shows (or that many ms passed), so
   * the reply's screen is the start's first look and first wait for the prompt in one request.
   * Not abortable once the holder is asked (the caller's `destroy` removes what was made).
   * @throws SessionDiedDuringStartupError when the program cannot be started.
   */
  async createSession(
    name: string,
    config: StartConfig,
    env: Record<string, string>,
    signal: AbortSignal | undefined,
    readyWaitMs = 0,
  ): Promise<HolderResults["create"]> {
    if (!existsSync(this.holder.holderPath)) {
      throw new ProviderError(
        "subprocess",
        `holder not found at ${this.holder.holderPath}: run \`npm run build\``,
      );
    }
    signal?.throwIfAborted();
    const p = sessionPaths(this.root, name);
    const fresh = makePrivateDir(p.dir);
    // The holder makes it again should it be removed while it runs (holder-output.ts).
    ensurePrivateDirOnce(dirname(p.log));
    const socketDir = dirname(p.socket);
    if (socketDir !== p.dir) ensurePrivateDir(socketDir);
    // A new session dir holds no old socket.
    if (!fresh || socketDir !== p.dir) await rm(p.socket, { force: true });
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
    // Concurrent starts (a whole city at once) are spread over the root's holder processes,
    // each forking and serving its share in parallel; a lone start goes to the first.
    const slot = this.creating++ % this.holder.slots;
    this.prepared.delete(slot);
    try {
      return await this.createIn(slot, name, spec, readyWaitMs);
    } finally {
      this.creating--;
    }
  }

  /**
   * Asks holder `slot` to create the session from `spec`, spawning it first when none serves.
   * @throws as {@link createSession}.
   */
  private async createIn(
    slot: number,
    name: string,
    spec: HolderSpec,
    readyWaitMs: number,
  ): Promise<HolderResults["create"]> {
    const control = this.holder.socketOf(slot);
    // Asked straight away: a holder usually serves already. None answering (or one exiting:
    // its last session just stopped, it refuses with `shutting_down` or has closed its
    // socket) makes sure one does, then asks again.
    for (let attempt = 0; ; attempt++) {
      // A holder this process is starting (ahead, for a burst) is waited for, not asked early.
      if (attempt > 0) await this.holder.ensure(slot);
      else await this.holder.starting(slot)?.catch(() => undefined);
      try {
        const made = await holderRequest(
          control,
          { op: "create", spec, ...(readyWaitMs > 0 ? { readyWaitMs } : {}) },
          { timeoutMs: HOLDER_START_TIMEOUT_MS },
        );
        void this.holder.watch(slot);
        return made;
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

  /** Whether a start of `name` is in progress here or in another live process. */
  async startInProgress(name: string): Promise<boolean> {
    return this.starts.has(name) || (await lockOwner(sessionPaths(this.root, name).lock)) === "live";
  }

  /**
   * Has the holder stop the session (never the shared holder process itself), kills whatever
   * of the session survives, and removes its files. When that was the holder's last session,
   * waits for the holder process to exit, so nothing of the root is left running.
   * `force` (the caller holds the start lock) removes files even while a start is in progress.
   */
  async teardown(name: string, force: boolean): Promise<void> {
    const p = sessionPaths(this.root, name);
    const rec = readRecord(p.record);
    if (rec && rec.city !== this.owner) return;
    let pids: Pick<HolderRecord, "holderPid" | "control" | "childPid" | "childStart"> | undefined = rec;
    const st = await this.calls.statusOf(name);
    if (!st.ok && st.why === "foreign") return;
    /** The holder stopped the session: its `shutdown` resolves once every process of it is gone. */
    let stopped = false;
    if (st.ok) {
      pids = st.value;
      try {
        await holderRequest(
          p.socket,
          { op: "shutdown" },
          { timeoutMs: SHUTDOWN_TIMEOUT_MS, expect: { city: this.owner, name } },
        );
        stopped = true;
      } catch {
        // killed below
      }
    } else if (rec) {
      await this.holder.letGo(rec);
    }
    if (pids) {
      // Left to kill (a /proc scan) only when the holder did not stop it.
      if (!stopped) await killSession(pids.childPid, { startTime: pids.childStart });
      await this.holder.awaitIdleExit(pids.holderPid, this.holder.controlOf(pids));
    }
    if (!force && (await this.startInProgress(name))) return;
    await this.removeFiles(name);
  }

  /** Removes session `name`'s directory and socket. */
  async removeFiles(name: string): Promise<void> {
    const p = sessionPaths(this.root, name);
    await rm(p.dir, { recursive: true, force: true });
    if (dirname(p.socket) !== p.dir) await rm(p.socket, { force: true });
  }

  /**
   * Every session of this city whose name starts with `prefix`, running or exited but not
   * reaped, as `SubprocessProvider.snapshot` (provider.ts) describes; sessions whose holder
   * no longer answers are cleaned up unless a start is in progress.
   * @throws ProviderError when the state dir cannot be read.
   */
  async snapshot(prefix: string, signal?: AbortSignal): Promise<SessionSnapshot[]> {
    signal?.throwIfAborted();
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
        const st = await this.calls.statusOf(name, signal);
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
  async cleanStale(name: string): Promise<void> {
    const p = sessionPaths(this.root, name);
    if (await this.startInProgress(name)) return;
    const rec = readRecord(p.record);
    if (rec && rec.city !== this.owner) return;
    if (rec && !(await this.holder.letGo(rec))) return;
    await this.teardown(name, false);
  }
}
