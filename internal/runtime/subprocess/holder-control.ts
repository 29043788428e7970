/**
 * The holder processes of a subprocess provider root (holder-process.ts), seen from the
 * provider side. A root has up to `holders` of them, one per slot, each with its own control
 * socket, lock and log (layout.ts), so a burst of starts forks programs in several processes
 * at once and one holder's crash loses only the sessions it holds. Per slot: whether it
 * answers, spawning it (detached, once, under its lock, so concurrent starters here or in
 * other processes spawn one only), asking it to let a session go, waiting for it to exit and
 * watching for its loss; and the /proc census of all of them and their sessions. Never kills
 * a holder itself.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { describeError, ProviderError } from "../../base/errors.js";
import { type CensusEntry, processCensus } from "../../proc/census.js";
import { pidAlive } from "../../proc/kill.js";
import { readArgv } from "../../proc/process-table.js";
import { withoutOwnerTag } from "../launch.js";
import { holderRequest, watchHolder } from "./client.js";
import {
  ensurePrivateDir,
  holderLockPath,
  holderLogPath,
  holderSocketPath,
  pathAbsent,
  rotateIfLarge,
} from "./layout.js";
import {
  HOLDER_START_POLL_MS,
  HOLDER_START_TIMEOUT_MS,
  POLL_MS,
  SHUTDOWN_TIMEOUT_MS,
  STATUS_TIMEOUT_MS,
} from "./options.js";
import type { HolderRecord } from "./protocol.js";
import { tryLock } from "./start-lock.js";

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

/**
 * This package's holder script (ptys only): the loader of its bundle, `bundle/holder.js`
 * beside tsc's `holder.js` (scripts/bundle-holder.mjs), which starts faster.
 */
export function defaultHolderPath(): string {
  const script = holderScriptOf(import.meta.url);
  return join(dirname(script), "bundle", basename(script));
}

/** True when `pid` is the holder process of provider root `root` (guards against pid reuse). */
async function isHolderProcess(pid: number, root: string): Promise<boolean> {
  const args = await readArgv(pid);
  return args?.some((a) => a.endsWith("holder.js")) === true && args.includes(root);
}

/** The holder processes of one provider root. Safe for concurrent use. */
export class HolderControl {
  /** The provider root (`<stateDir>/subprocess`). */
  readonly root: string;
  /** Ownership tag of this city's holders (identity.ts). */
  readonly owner: string;
  /** The built holder script. */
  readonly holderPath: string;
  /** How many holder processes (slots) the root may have. */
  readonly slots: number;
  /** Node binary for the holder. */
  private readonly nodePath: string | undefined;
  /** The holder spawns in progress in this process, by slot, shared by concurrent starts. */
  private readonly holderReady = new Map<number, Promise<void>>();
  /** {@link HolderControl.onLost} subscribers. */
  private readonly lossListeners = new Set<() => void>();
  /** Stops watching a slot's holder process; set while its watch connection is open. */
  private readonly unwatch = new Map<number, () => void>();

  constructor(opts: {
    readonly root: string;
    readonly owner: string;
    readonly holderPath: string;
    readonly slots?: number | undefined;
    readonly nodePath?: string | undefined;
  }) {
    this.root = opts.root;
    this.owner = opts.owner;
    this.holderPath = opts.holderPath;
    this.slots = Math.max(1, Math.trunc(opts.slots ?? 1));
    this.nodePath = opts.nodePath;
  }

  /** Stops watching the holders (they keep running) and drops every loss subscriber. Idempotent. */
  close(): void {
    this.lossListeners.clear();
    this.stopWatching();
  }

  private stopWatching(): void {
    for (const stop of this.unwatch.values()) stop();
    this.unwatch.clear();
  }

  /**
   * Calls `fn` whenever a holder process of this root ends (it died, taking the sessions it
   * held with it, or it exited after its last session), so the controller reconciles at once.
   * Watches the running holders now and each one this provider starts later.
   * @returns the unsubscribe.
   */
  onLost(fn: () => void): () => void {
    this.lossListeners.add(fn);
    for (let slot = 0; slot < this.slots; slot++) void this.watch(slot);
    return () => {
      this.lossListeners.delete(fn);
      if (this.lossListeners.size === 0) this.stopWatching();
    };
  }

  /** Opens the watch connection of `slot`'s holder when someone listens and none is open. Never throws. */
  async watch(slot: number): Promise<void> {
    if (this.unwatch.has(slot) || this.lossListeners.size === 0) return;
    const claim = () => undefined;
    this.unwatch.set(slot, claim); // claimed while connecting
    try {
      const stop = await watchHolder(
        this.socketOf(slot),
        () => {
          this.unwatch.delete(slot);
          for (const fn of [...this.lossListeners]) fn();
        },
        STATUS_TIMEOUT_MS,
      );
      if (this.lossListeners.size === 0 || this.unwatch.get(slot) !== claim) {
        stop();
        if (this.unwatch.get(slot) === claim) this.unwatch.delete(slot);
      } else this.unwatch.set(slot, stop);
    } catch {
      // no holder in this slot now: watched once this provider starts one
      if (this.unwatch.get(slot) === claim) this.unwatch.delete(slot);
    }
  }

  /**
   * The live holder processes of this root and all their descendants, from /proc, plus the
   * city's orphans (of `sessions` only, when given; flagged `orphan`).
   */
  census(sessions: ReadonlySet<string> | undefined): Promise<CensusEntry[]> {
    const node = basename(this.nodePath ?? process.execPath);
    return processCensus(
      (p) => p.pid !== process.pid && (p.argv0 === node || p.argv0.startsWith("node")),
      (argv) => argv.some((a) => a.endsWith("holder.js")) && argv.includes(this.root),
      { owner: this.owner, sessions },
    );
  }

  /** True when `pid` is a holder process of this root (guards against pid reuse). */
  isHolder(pid: number): Promise<boolean> {
    return isHolderProcess(pid, this.root);
  }

  /** The control socket of `slot`'s holder process. */
  socketOf(slot: number): string {
    return holderSocketPath(this.root, slot);
  }

  /** The pid of the holder serving control socket `socket` when it answers, else `undefined`. */
  async pidAt(socket: string): Promise<number | undefined> {
    try {
      return (await holderRequest(socket, { op: "hello" }, { timeoutMs: STATUS_TIMEOUT_MS })).pid;
    } catch {
      return undefined;
    }
  }

  /** The pids of the holder processes that answer on their control sockets. */
  async pids(): Promise<number[]> {
    const all = await Promise.all(
      Array.from({ length: this.slots }, (_, slot) => this.pidAt(this.socketOf(slot))),
    );
    return all.filter((p): p is number => p !== undefined);
  }

  /**
   * Makes sure a holder process serves `slot`: spawns one (detached: it outlives us) under the
   * slot's lock, so concurrent starters here or in other processes spawn one only.
   * @throws ProviderError when none answers within {@link HOLDER_START_TIMEOUT_MS}.
   */
  ensure(slot: number): Promise<void> {
    let ready = this.holderReady.get(slot);
    if (!ready) {
      ready = this.spawnHolderOnce(slot).finally(() => {
        this.holderReady.delete(slot);
      });
      this.holderReady.set(slot, ready);
    }
    return ready;
  }

  /** The start-up of `slot`'s holder process in progress here, if any ({@link ensure}). */
  starting(slot: number): Promise<void> | undefined {
    return this.holderReady.get(slot);
  }

  /**
   * Starts `slot`'s holder process in the background when none serves it (no control socket)
   * and none is being started here: a start that will ask it soon does not wait for its
   * start-up then. A failure is left to the {@link ensure} of that ask. A holder that gets no
   * session exits by itself (holder-process.ts), or when {@link dismiss}ed.
   * @returns whether it started one.
   */
  prepare(slot: number): boolean {
    if (this.holderReady.has(slot) || !pathAbsent(this.socketOf(slot))) return false;
    this.ensure(slot).catch(() => undefined);
    return true;
  }

  /**
   * Once `slot`'s holder answers (its start-up in progress here awaited), has it exit if it
   * holds no session and creates none, and waits until it is gone: for a holder started by
   * {@link prepare} for starts that then ended before their create. Never throws.
   */
  async dismiss(slot: number): Promise<void> {
    await this.holderReady.get(slot)?.catch(() => undefined);
    try {
      const r = await holderRequest(
        this.socketOf(slot),
        { op: "exitIfIdle" },
        { timeoutMs: STATUS_TIMEOUT_MS },
      );
      if (r.exiting) await this.awaitExit(r.pid);
    } catch {
      // none answers (or one of an earlier gc): it exits by itself when it gets no session
    }
  }

  /** {@link dismiss} of every slot. Never throws. */
  async dismissAll(): Promise<void> {
    await Promise.all(Array.from({ length: this.slots }, (_, slot) => this.dismiss(slot)));
  }

  private async spawnHolderOnce(slot: number): Promise<void> {
    const deadline = Date.now() + HOLDER_START_TIMEOUT_MS;
    const socket = this.socketOf(slot);
    // No control socket: nothing serves it, and asking would only be a failed connect (every
    // start of a burst may be waiting for this spawn).
    const serving = async () => !pathAbsent(socket) && (await this.pidAt(socket)) !== undefined;
    for (;;) {
      if (await serving()) return;
      const release = await tryLock(this.root, holderLockPath(this.root, slot));
      if (release) {
        try {
          if (!(await serving())) await this.spawnHolder(slot, deadline);
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

  /** Spawns `slot`'s holder process and waits until its control socket answers. */
  private async spawnHolder(slot: number, deadline: number): Promise<void> {
    const sock = this.socketOf(slot);
    if (dirname(sock) !== this.root) ensurePrivateDir(dirname(sock));
    const logPath = holderLogPath(this.root, slot);
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
      const args = slot === 0 ? [this.holderPath, this.root] : [this.holderPath, this.root, String(slot)];
      child = spawn(this.nodePath ?? process.execPath, args, {
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
      // Asked only once its socket exists: until then an ask is a failed connect, for nothing.
      if (!pathAbsent(sock) && (await this.pidAt(sock)) !== undefined) return;
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
      // Every start of the city may wait on this answer: looked for often.
      await sleep(HOLDER_START_POLL_MS);
    }
  }

  /** The control socket of the holder that `rec` names (records from before slots: slot 0's). */
  controlOf(rec: Pick<HolderRecord, "control">): string {
    return rec.control ?? this.socketOf(0);
  }

  /**
   * True when the holder recorded in `rec` no longer holds the session: it is dead (or its
   * pid now names another process), or it answers on its control socket and let the session
   * go (`release`). False when it lives but answers nothing (left alone).
   */
  async letGo(rec: HolderRecord): Promise<boolean> {
    if (!(await pidAlive(rec.holderPid)) || !(await this.isHolder(rec.holderPid))) return true;
    try {
      await holderRequest(
        this.controlOf(rec),
        { op: "release", name: rec.name, city: this.owner },
        { timeoutMs: SHUTDOWN_TIMEOUT_MS },
      );
      return true;
    } catch {
      return false;
    }
  }

  /**
   * When holder `pid` (serving control socket `control`) is exiting (alive, but its control
   * socket is closed: its last session is gone), waits until it is gone (bounded by
   * {@link SHUTDOWN_TIMEOUT_MS}).
   */
  async awaitIdleExit(pid: number, control: string): Promise<void> {
    const deadline = Date.now() + SHUTDOWN_TIMEOUT_MS;
    while ((await pidAlive(pid)) && (await this.isHolder(pid))) {
      if ((await this.pidAt(control)) === pid || Date.now() > deadline) return;
      await sleep(POLL_MS);
    }
  }

  /**
   * Waits (bounded by {@link SHUTDOWN_TIMEOUT_MS}) until holder `pid` is gone: once none of
   * its sessions is left, the holder is exiting.
   */
  async awaitExit(pid: number): Promise<void> {
    const deadline = Date.now() + SHUTDOWN_TIMEOUT_MS;
    while ((await pidAlive(pid)) && (await this.isHolder(pid)) && Date.now() < deadline) {
      await sleep(POLL_MS);
    }
  }
}
