/**
 * The one holder process of a subprocess provider root (holder-process.ts), seen from the
 * provider side: its control socket, whether it answers, spawning it (detached, once, under
 * `<root>/holder.lock`, so concurrent starters here or in other processes spawn one only),
 * asking it to let a session go, waiting for it to exit, watching for its loss, and the
 * /proc census of it and its sessions. Never kills the holder itself.
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
  rotateIfLarge,
} from "./layout.js";
import { HOLDER_START_TIMEOUT_MS, POLL_MS, SHUTDOWN_TIMEOUT_MS, STATUS_TIMEOUT_MS } from "./options.js";
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

/** This package's holder script (ptys only). */
export function defaultHolderPath(): string {
  return holderScriptOf(import.meta.url);
}

/** True when `pid` is the holder process of provider root `root` (guards against pid reuse). */
async function isHolderProcess(pid: number, root: string): Promise<boolean> {
  const args = await readArgv(pid);
  return args?.some((a) => a.endsWith("holder.js")) === true && args.includes(root);
}

/** The holder process of one provider root. Safe for concurrent use. */
export class HolderControl {
  /** The provider root (`<stateDir>/subprocess`). */
  readonly root: string;
  /** Ownership tag of this city's holders (identity.ts). */
  readonly owner: string;
  /** The built holder script. */
  readonly holderPath: string;
  /** Node binary for the holder. */
  private readonly nodePath: string | undefined;
  /** The holder spawn in progress in this process, shared by concurrent starts. */
  private holderReady: Promise<void> | undefined;
  /** {@link HolderControl.onLost} subscribers. */
  private readonly lossListeners = new Set<() => void>();
  /** Stops watching the holder process; set while a watch connection is open. */
  private unwatch: (() => void) | undefined;

  constructor(opts: {
    readonly root: string;
    readonly owner: string;
    readonly holderPath: string;
    readonly nodePath?: string | undefined;
  }) {
    this.root = opts.root;
    this.owner = opts.owner;
    this.holderPath = opts.holderPath;
    this.nodePath = opts.nodePath;
  }

  /** Stops watching the holder (it keeps running) and drops every loss subscriber. Idempotent. */
  close(): void {
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
  onLost(fn: () => void): () => void {
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
  async watch(): Promise<void> {
    if (this.unwatch || this.lossListeners.size === 0) return;
    this.unwatch = () => undefined; // claimed while connecting
    try {
      this.unwatch = await watchHolder(
        this.socket,
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
   * The live holder process of this root and all its descendants, from /proc, plus the
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

  /** True when `pid` is this root's holder process (guards against pid reuse). */
  isHolder(pid: number): Promise<boolean> {
    return isHolderProcess(pid, this.root);
  }

  /** The holder process's control socket. */
  get socket(): string {
    return holderSocketPath(this.root);
  }

  /** The holder process's pid when it answers on its control socket, else `undefined`. */
  async pid(): Promise<number | undefined> {
    try {
      return (await holderRequest(this.socket, { op: "hello" }, { timeoutMs: STATUS_TIMEOUT_MS })).pid;
    } catch {
      return undefined;
    }
  }

  /**
   * Makes sure a holder process serves this root: spawns one (detached: it outlives us) under
   * `<root>/holder.lock`, so concurrent starters here or in other processes spawn one only.
   * @throws ProviderError when none answers within {@link HOLDER_START_TIMEOUT_MS}.
   */
  ensure(): Promise<void> {
    this.holderReady ??= this.spawnHolderOnce().finally(() => {
      this.holderReady = undefined;
    });
    return this.holderReady;
  }

  private async spawnHolderOnce(): Promise<void> {
    const deadline = Date.now() + HOLDER_START_TIMEOUT_MS;
    for (;;) {
      if ((await this.pid()) !== undefined) return;
      const release = await tryLock(this.root, holderLockPath(this.root));
      if (release) {
        try {
          if ((await this.pid()) === undefined) await this.spawnHolder(deadline);
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
    const sock = this.socket;
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
      child = spawn(this.nodePath ?? process.execPath, [this.holderPath, this.root], {
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
      if ((await this.pid()) !== undefined) return;
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

  /**
   * True when the holder recorded in `rec` no longer holds the session: it is dead (or its
   * pid now names another process), or it answers on its control socket and let the session
   * go (`release`). False when it lives but answers nothing (left alone).
   */
  async letGo(rec: HolderRecord): Promise<boolean> {
    if (!(await pidAlive(rec.holderPid)) || !(await this.isHolder(rec.holderPid))) return true;
    try {
      await holderRequest(
        this.socket,
        { op: "release", name: rec.name, city: this.owner },
        { timeoutMs: SHUTDOWN_TIMEOUT_MS },
      );
      return true;
    } catch {
      return false;
    }
  }

  /**
   * When holder `pid` is exiting (alive, but its control socket is closed: its last session
   * is gone), waits until it is gone (bounded by {@link SHUTDOWN_TIMEOUT_MS}).
   */
  async awaitIdleExit(pid: number): Promise<void> {
    const deadline = Date.now() + SHUTDOWN_TIMEOUT_MS;
    while ((await pidAlive(pid)) && (await this.isHolder(pid))) {
      if ((await this.pid()) === pid || Date.now() > deadline) return;
      await sleep(POLL_MS);
    }
  }

  /**
   * Waits (bounded by {@link SHUTDOWN_TIMEOUT_MS}) until holder `pid` is gone: once none of
   * the city's sessions is left, the holder is exiting.
   */
  async awaitExit(pid: number): Promise<void> {
    const deadline = Date.now() + SHUTDOWN_TIMEOUT_MS;
    while ((await pidAlive(pid)) && (await this.isHolder(pid)) && Date.now() < deadline) {
      await sleep(POLL_MS);
    }
  }
}
