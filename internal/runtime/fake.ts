/**
 * FakeProvider: an in-memory spy and fake session backend with error injection. Used by
 * unit tests of the reconciler and CLI (`session.provider: fake`), and held to the same
 * conformance suite as real providers for every case its capabilities admit. It runs no
 * programs: `capabilities().executes` is false.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { SessionExistsError, SessionNotFoundError, UnsupportedError } from "../base/errors.js";
import { validateMetaKey, validateSessionName } from "../base/names.js";
import {
  flattenContent,
  type IdleResult,
  type IdleWaitProvider,
  type ImmediateNudgeProvider,
  type InteractionProvider,
  type InteractionResponse,
  type NudgeContent,
  type OpOptions,
  type PendingInteraction,
  type Provider,
  type ProviderCapabilities,
  type SessionSnapshot,
  type SnapshotProvider,
  type StartConfig,
  type StartReport,
} from "./provider.js";

/** One recorded call. */
export interface FakeCall {
  readonly method: string;
  readonly name: string;
  readonly args: readonly unknown[];
}

/** A fake session's state. */
export interface FakeSession {
  readonly owner: string;
  config: StartConfig;
  meta: Map<string, string>;
  nudges: string[];
  keys: string[];
  files: Map<string, Buffer>;
  liveRuns: number;
  interrupts: number;
  lastActivity: Date;
  attached: boolean;
  pending: PendingInteraction | undefined;
}

/**
 * The shared "server" behind fake providers. Several FakeProviders with different cities
 * may share one backend, which is how foreign sessions are modelled.
 */
export class FakeBackend {
  readonly sessions = new Map<string, FakeSession>();
}

/** Methods that error injection can target. */
export type FakeMethod = Exclude<keyof Provider, "name" | "capabilities" | "close">;

/** Options for {@link FakeProvider}. */
export interface FakeProviderOptions {
  /** Ownership tag; only sessions with this owner are listed. Default `fake`. */
  readonly city?: string;
  readonly backend?: FakeBackend;
  /** Every method rejects (gascity's NewFailFake). */
  readonly broken?: boolean;
}

/** Canned text returned by `peek` when nothing else was set. */
const DEFAULT_SCREEN = "";

/**
 * In-memory {@link Provider}. Every call is appended to {@link FakeProvider.calls}.
 * `failNext`/`failAlways` inject errors per method and optionally per session.
 */
export class FakeProvider
  implements Provider, IdleWaitProvider, InteractionProvider, ImmediateNudgeProvider, SnapshotProvider
{
  readonly name = "fake";
  readonly calls: FakeCall[] = [];
  readonly backend: FakeBackend;
  readonly city: string;
  /** Canned peek output per session. */
  readonly peekOutput = new Map<string, string>();
  /** Sessions reported running but whose agent process is dead. */
  readonly zombies = new Set<string>();
  private readonly broken: boolean;
  private readonly injected: { method: FakeMethod; name: string | undefined; error: Error; once: boolean }[] =
    [];

  constructor(opts: FakeProviderOptions = {}) {
    this.city = opts.city ?? "fake";
    this.backend = opts.backend ?? new FakeBackend();
    this.broken = opts.broken ?? false;
  }

  /** A provider whose every operation rejects (for failure-path tests). */
  static failing(opts: FakeProviderOptions = {}): FakeProvider {
    return new FakeProvider({ ...opts, broken: true });
  }

  /** The next call of `method` (for `name`, or any session) rejects with `error`. */
  failNext(method: FakeMethod, error: Error, name?: string): void {
    this.injected.push({ method, name, error, once: true });
  }

  /** Every call of `method` (for `name`, or any session) rejects with `error` until cleared. */
  failAlways(method: FakeMethod, error: Error, name?: string): void {
    this.injected.push({ method, name, error, once: false });
  }

  /** Removes all injected errors. */
  clearFailures(): void {
    this.injected.length = 0;
  }

  /** The session's state, if this city owns it. */
  session(name: string): FakeSession | undefined {
    const s = this.backend.sessions.get(name);
    return s && s.owner === this.city ? s : undefined;
  }

  /** Makes `name` report a pending interaction (or clears it with `undefined`). */
  setPending(name: string, p: PendingInteraction | undefined): void {
    const s = this.session(name);
    if (s) s.pending = p;
  }

  /** Simulates the session's program exiting on its own. */
  crash(name: string): void {
    if (this.session(name)) this.backend.sessions.delete(name);
  }

  capabilities(): ProviderCapabilities {
    return {
      executes: false,
      attach: false,
      attachDetect: true,
      activity: true,
      interaction: true,
      idleWait: true,
      processNames: false,
      copyTo: true,
      runLive: false,
      exitStatus: false,
      exec: false,
    };
  }

  private async record(
    method: FakeMethod | "waitForIdle" | "pending" | "respond" | "nudgeNow" | "snapshot",
    name: string,
    args: unknown[],
    signal?: AbortSignal,
  ): Promise<void> {
    this.calls.push({ method, name, args });
    signal?.throwIfAborted();
    // A real backend never answers synchronously; neither does the fake.
    await Promise.resolve();
    if (this.broken) throw new Error(`fake: ${method} ${name}: provider is broken`);
    const i = this.injected.findIndex(
      (f) => f.method === method && (f.name === undefined || f.name === name),
    );
    if (i >= 0) {
      const f = this.injected[i]!;
      if (f.once) this.injected.splice(i, 1);
      throw f.error;
    }
  }

  private must(name: string): FakeSession {
    const s = this.session(name);
    if (!s) throw new SessionNotFoundError(name);
    return s;
  }

  async start(name: string, config: StartConfig, opts?: OpOptions): Promise<StartReport> {
    validateSessionName(name);
    await this.record("start", name, [config], opts?.signal);
    if (this.backend.sessions.has(name)) throw new SessionExistsError(name);
    const s: FakeSession = {
      owner: this.city,
      config,
      meta: new Map(),
      nudges: [],
      keys: [],
      files: new Map(),
      liveRuns: 0,
      interrupts: 0,
      lastActivity: new Date(),
      attached: false,
      pending: undefined,
    };
    if (config.nudge) s.nudges.push(config.nudge);
    this.backend.sessions.set(name, s);
    return {};
  }

  async stop(name: string, opts?: OpOptions): Promise<void> {
    await this.record("stop", name, [], opts?.signal);
    if (this.session(name)) this.backend.sessions.delete(name);
    this.zombies.delete(name);
  }

  async interrupt(name: string, opts?: OpOptions): Promise<void> {
    await this.record("interrupt", name, [], opts?.signal);
    const s = this.session(name);
    if (s) s.interrupts++;
  }

  async isRunning(name: string, opts?: OpOptions): Promise<boolean> {
    await this.record("isRunning", name, [], opts?.signal);
    return this.session(name) !== undefined;
  }

  async listRunning(prefix: string, opts?: OpOptions): Promise<string[]> {
    await this.record("listRunning", prefix, [], opts?.signal);
    return [...this.backend.sessions]
      .filter(([n, s]) => s.owner === this.city && n.startsWith(prefix))
      .map(([n]) => n)
      .sort();
  }

  async snapshot(prefix: string, opts?: OpOptions): Promise<SessionSnapshot[]> {
    await this.record("snapshot", prefix, [], opts?.signal);
    return [...this.backend.sessions]
      .filter(([n, s]) => s.owner === this.city && n.startsWith(prefix))
      .map(([n, s]) => ({ name: n, running: true, attached: s.attached, lastActivity: s.lastActivity }));
  }

  async processAlive(name: string, names: readonly string[], opts?: OpOptions): Promise<boolean> {
    await this.record("processAlive", name, [names], opts?.signal);
    const s = this.session(name);
    if (!s || this.zombies.has(name)) return false;
    if (names.length === 0) return true;
    const declared = s.config.processNames ?? [];
    return names.some((n) => declared.includes(n));
  }

  async nudge(name: string, content: NudgeContent, opts?: OpOptions): Promise<void> {
    await this.record("nudge", name, [content], opts?.signal);
    const s = this.session(name);
    if (!s) return;
    s.nudges.push(flattenContent(content));
    s.lastActivity = new Date();
  }

  async nudgeNow(name: string, content: NudgeContent, opts?: OpOptions): Promise<void> {
    await this.nudge(name, content, opts);
  }

  async sendKeys(name: string, keys: readonly string[], opts?: OpOptions): Promise<void> {
    await this.record("sendKeys", name, [keys], opts?.signal);
    const s = this.session(name);
    if (!s) return;
    s.keys.push(...keys);
    if (keys.includes("C-c")) s.interrupts++;
  }

  async peek(name: string, lines: number, opts?: OpOptions): Promise<string> {
    await this.record("peek", name, [lines], opts?.signal);
    this.must(name);
    const text = this.peekOutput.get(name) ?? DEFAULT_SCREEN;
    if (lines <= 0) return text;
    return text.split("\n").slice(-lines).join("\n");
  }

  async setMeta(name: string, key: string, value: string, opts?: OpOptions): Promise<void> {
    validateMetaKey(key);
    await this.record("setMeta", name, [key, value], opts?.signal);
    this.must(name).meta.set(key, value);
  }

  async getMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    validateMetaKey(key);
    await this.record("getMeta", name, [key], opts?.signal);
    return this.must(name).meta.get(key);
  }

  async removeMeta(name: string, key: string, opts?: OpOptions): Promise<void> {
    validateMetaKey(key);
    await this.record("removeMeta", name, [key], opts?.signal);
    this.must(name).meta.delete(key);
  }

  async getLastActivity(name: string, opts?: OpOptions): Promise<Date | undefined> {
    await this.record("getLastActivity", name, [], opts?.signal);
    return this.session(name)?.lastActivity;
  }

  async clearScrollback(name: string, opts?: OpOptions): Promise<void> {
    await this.record("clearScrollback", name, [], opts?.signal);
    if (this.session(name)) this.peekOutput.delete(name);
  }

  /** Reads `src` from the local filesystem into the session's in-memory file map. */
  async copyTo(name: string, src: string, relDst: string, opts?: OpOptions): Promise<void> {
    await this.record("copyTo", name, [src, relDst], opts?.signal);
    const s = this.session(name);
    if (!s) return;
    const put = async (from: string, to: string): Promise<void> => {
      const st = await stat(from);
      if (st.isDirectory()) {
        for (const e of await readdir(from)) await put(join(from, e), to ? `${to}/${e}` : e);
      } else {
        s.files.set(to, await readFile(from));
      }
    };
    try {
      await put(src, relDst);
    } catch {
      // best-effort: a missing source is not an error
    }
  }

  async runLive(name: string, config: StartConfig, opts?: OpOptions): Promise<void> {
    await this.record("runLive", name, [config], opts?.signal);
    const s = this.session(name);
    if (!s) return;
    s.config = config;
    s.liveRuns++;
  }

  async attach(name: string, opts?: OpOptions): Promise<void> {
    await this.record("attach", name, [], opts?.signal);
    throw new UnsupportedError("fake provider cannot attach a terminal");
  }

  async isAttached(name: string, opts?: OpOptions): Promise<boolean> {
    await this.record("isAttached", name, [], opts?.signal);
    return this.session(name)?.attached ?? false;
  }

  async waitForIdle(name: string, timeoutMs: number, opts?: OpOptions): Promise<IdleResult> {
    await this.record("waitForIdle", name, [timeoutMs], opts?.signal);
    const s = this.session(name);
    if (!s) return "gone";
    return s.pending ? "timeout" : "idle";
  }

  async pending(name: string, opts?: OpOptions): Promise<PendingInteraction | undefined> {
    await this.record("pending", name, [], opts?.signal);
    return this.must(name).pending;
  }

  async respond(name: string, response: InteractionResponse, opts?: OpOptions): Promise<void> {
    await this.record("respond", name, [response], opts?.signal);
    const s = this.must(name);
    if (!s.pending) throw new Error(`fake: nothing pending for ${name}`);
    if (response.requestId && response.requestId !== s.pending.requestId) {
      throw new Error(`fake: request id ${response.requestId} does not match ${s.pending.requestId}`);
    }
    s.pending = undefined;
  }

  async close(): Promise<void> {}
}
