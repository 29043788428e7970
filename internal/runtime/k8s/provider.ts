/**
 * K8sProvider: one pod per gc session, the session's program under tmux inside the pod, every
 * live operation a command run over the exec WebSocket (never kubectl). Pods and Secrets
 * carry the city's ownership and the session's identity as labels; metadata lives in pod
 * annotations (merge-patched). The start is split into separate steps — create, stage
 * files, run in the pod, read the screen, type, check liveness — so the shared start
 * lifecycle can drive them. This module is the Provider surface; its parts: city.ts (the
 * connection, watch, Lease, channels), pods.ts (pods and Secrets on the API server),
 * pod-exec.ts (work inside a pod), start.ts (the start lifecycle's backend).
 */
import { stat } from "node:fs/promises";
import { posix } from "node:path";
import type * as K8s from "@kubernetes/client-node";
import {
  NudgeNotDeliveredError,
  ProviderError,
  SessionInitializingError,
  SessionNotFoundError,
  UnsupportedError,
} from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import { execKillable, runHookCommands, StartsInProgress } from "../lifecycle/index.js";
import {
  type BackendShutdownProvider,
  type CommandProvider,
  type ExecCommandOptions,
  type ExecCommandResult,
  type ExitStatus,
  type ExitStatusProvider,
  flattenContent,
  type IdleResult,
  type IdleWaitProvider,
  type NudgeContent,
  type NudgeOptions,
  type OpOptions,
  type OutputWatchProvider,
  type Provider,
  type ProviderCapabilities,
  type SessionOutputWatch,
  type SessionSnapshot,
  type SnapshotProvider,
  type StartConfig,
  type StartReport,
} from "../provider.js";
import { terminalText } from "../screen/delivery.js";
import type { Channel } from "../tmux/channels.js";
import { isGone, NudgeQueue, type PaneState, validateKeys } from "../tmux/pane.js";
import { apiFailure, type ExecResult, httpStatus, type KubeApi } from "./api.js";
import { K8sCity, type K8sProviderOptions } from "./city.js";
import type { CityLease } from "./lease.js";
import { metaAnnotation } from "./names.js";
import { envArgv, pack, podCommand, readScreen, runInPod, tmuxIn, typeInto, unpack } from "./pod-exec.js";
import { CityPods, PREFIX_ANNOTATION, WORK_DIR_ANNOTATION } from "./pods.js";
import { CAT, IN_DIR, PROCESS_ALIVE } from "./scripts.js";
import type { K8sSettings } from "./settings.js";
import { type PodView, podState, type SessionIdentity, sessionOf, TMUX_SESSION, tmuxSocket } from "./spec.js";
import { PodStarts } from "./start.js";

export type { K8sProviderOptions } from "./city.js";

/**
 * The k8s {@link Provider}. Safe for concurrent use; a concurrent start of one name lets
 * exactly one win (the API server's `AlreadyExists`). Pods of other cities (other ownership
 * labels) are never listed, read, written or deleted.
 */
export class K8sProvider
  implements
    Provider,
    IdleWaitProvider,
    OutputWatchProvider,
    ExitStatusProvider,
    CommandProvider,
    SnapshotProvider,
    BackendShutdownProvider
{
  readonly name = "k8s";
  readonly settings: K8sSettings;
  /** Ownership value: the city's identity. */
  readonly owner: string;
  /** The city's Lease: one checkout acts on the fleet. */
  readonly lease: CityLease;
  /** Connection, pod watch, Lease and control channels, shared by the parts below. */
  private readonly city: K8sCity;
  /** The city's pods and Secrets. */
  private readonly pods: CityPods;
  private readonly startsOf: PodStarts;
  private readonly nudges = new NudgeQueue();
  private readonly starts = new StartsInProgress();
  /** Per channel: its last attached answer (see {@link attachedOf}). */
  private readonly attachedSeen = new WeakMap<
    Channel,
    { epoch: number; value: { gen: number; attached: boolean } | undefined }
  >();

  /** @throws ProviderError for invalid settings. */
  constructor(opts: K8sProviderOptions) {
    this.city = new K8sCity(opts);
    this.settings = this.city.settings;
    this.owner = this.city.owner;
    this.lease = this.city.lease;
    this.pods = new CityPods(this.city);
    this.startsOf = new PodStarts(this.city, this.pods, this.nudges);
  }

  /** The control channel into pod `pod` (made on first use, kept until the pod is deleted). */
  channel(pod: string): Channel {
    return this.city.channel(pod);
  }

  /** The API connection, made on first use. */
  api(): Promise<KubeApi> {
    return this.city.api();
  }

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
      exitStatus: true,
      exec: true,
    };
  }

  /** Pod name and identity of session `name`. */
  identity(name: string): SessionIdentity {
    return this.city.identity(name);
  }

  /** The session namespace (see {@link K8sCity.ns}). */
  private get ns(): string {
    return this.city.ns;
  }

  /** Runs `argv` in pod `pod` (no shell). */
  runInPod(
    pod: string,
    argv: readonly string[],
    opts: Parameters<typeof runInPod>[3] = {},
  ): Promise<ExecResult> {
    return runInPod(this.city, pod, argv, opts);
  }

  /** Current pane of the pod's session (over its control channel), or `undefined` when there is none. */
  readScreen(pod: string, signal?: AbortSignal): Promise<PaneState | undefined> {
    return readScreen(this.city, pod, signal);
  }

  /** Types `text` into the pod's session and confirms it was submitted (tmux/pane.ts `deliver`). */
  type(
    name: string,
    pod: string,
    text: string,
    signal?: AbortSignal,
    multiline?: "paste" | "lines" | undefined,
  ): Promise<void> {
    return typeInto(this.city, name, pod, text, signal, multiline);
  }

  /** Liveness: the pane exists and its program has not exited. */
  alive(pod: string, signal?: AbortSignal): Promise<boolean> {
    return this.pods.alive(pod, signal);
  }

  // ---- Provider -------------------------------------------------------------------------------

  /**
   * Starts `name` in a new pod through the shared start lifecycle (lifecycle/start.ts):
   * sources checked, files packed (stage), then `create` — Secret and pod, wait for Running
   * (`start_timeout`), `pre_start` in the pod, the packed files unpacked in its work dir, the
   * tmux session created — then readiness with startup dialogs, `session_setup` (+ script),
   * the nudge and `session_live`, all in the pod, bounded by `startup_timeout`. An ended pod
   * of this name is deleted first.
   * @throws SessionExistsError when the pod runs or boots, or another start of it runs here.
   * Any rejection deletes the pod and Secret it made.
   */
  async start(name: string, cfg: StartConfig, opts: OpOptions = {}): Promise<StartReport> {
    validateSessionName(name);
    opts.signal?.throwIfAborted();
    return this.starts.run(name, () => this.startsOf.start(name, cfg, opts.signal));
  }

  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    this.nudges.forget(name);
    await this.lease.claim(opts.signal);
    const p = await this.pods.getPod(name, opts.signal);
    if (p) await this.pods.deletePod(name, p.metadata?.uid, opts.signal);
    else await this.pods.deleteSecret(name, opts.signal);
  }

  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    await this.sendKeys(name, ["C-c"], opts);
  }

  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    return p !== undefined && podState(p as PodView).kind === "running";
  }

  /** One labelled list of this city's pods; running ones whose name starts with `prefix`. */
  async listRunning(prefix: string, opts: OpOptions = {}): Promise<string[]> {
    return (await this.listed(prefix, opts)).filter((s) => s.running).map((s) => s.name);
  }

  /**
   * Every pod of this city (one labelled list, or the watch's cache), running or not, whose
   * name starts with `prefix`. A running pod whose control channel has connected (a start or
   * an earlier look made it) comes with its attached state and last activity, read over that
   * channel: no API request; `list-clients` only when a client came or went since the last
   * look ({@link attachedOf}), the activity from the channel's output notifications once read. A channel that cannot tell reads as not attached with no
   * known activity (as {@link isAttached} and {@link getLastActivity} answer). Pods without a
   * connected channel carry no details (the snapshot opens no exec stream): the caller asks
   * those one by one.
   */
  async snapshot(prefix: string, opts: OpOptions = {}): Promise<SessionSnapshot[]> {
    const signal = opts.signal;
    return Promise.all(
      (await this.listed(prefix, opts)).map(async ({ pod, ...s }): Promise<SessionSnapshot> => {
        if (!s.running) return s;
        const ch = this.channel(pod); // made, not connected, when new
        if (ch.client.generation === 0) return s;
        const [attached, lastActivity] = await Promise.all([
          this.attachedOf(ch, signal).catch(() => false),
          ch.lastActivity(signal).catch(() => undefined),
        ]);
        return { ...s, attached, lastActivity };
      }),
    );
  }

  /**
   * Whether a terminal is attached to the channel's session ({@link Channel.attached}), as last
   * read over this channel connection: tmux tells every control client when another client
   * attaches (`%client-session-changed`) or detaches (`%client-detached`), and the answer is
   * read again only then (or after a reconnect). So a steady status costs no round trip.
   */
  private async attachedOf(ch: Channel, signal?: AbortSignal): Promise<boolean> {
    let seen = this.attachedSeen.get(ch);
    if (!seen) {
      const entry = { epoch: 0, value: undefined as { gen: number; attached: boolean } | undefined };
      ch.client.onNotification((n) => {
        if (n.name === "client-session-changed" || n.name === "client-detached") {
          entry.epoch++;
          entry.value = undefined;
        }
      });
      this.attachedSeen.set(ch, entry);
      seen = entry;
    }
    const gen = ch.client.generation;
    if (seen.value?.gen === gen) return seen.value.attached;
    const epoch = seen.epoch;
    const attached = await ch.attached(signal);
    // A client came or went while it was read: the next look reads again.
    if (seen.epoch === epoch && ch.client.generation === gen) seen.value = { gen, attached };
    return attached;
  }

  /** The sessions of this city's pods (one labelled list, or the watch's cache), by name. */
  private async listed(
    prefix: string,
    opts: OpOptions,
  ): Promise<{ name: string; running: boolean; pod: string }[]> {
    await this.api();
    await this.lease.claim(opts.signal);
    const pods = await this.pods.list(opts.signal);
    const out: { name: string; running: boolean; pod: string }[] = [];
    for (const p of pods) {
      const name = sessionOf(p as PodView, this.owner);
      if (name === undefined || !name.startsWith(prefix)) continue;
      out.push({ name, running: podState(p as PodView).kind === "running", pod: p.metadata!.name! });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async processAlive(name: string, names: readonly string[], opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return false;
    const pod = p.metadata!.name!;
    if (names.length === 0) return true;
    const r = await this.runInPod(
      pod,
      ["/bin/sh", "-c", PROCESS_ALIVE, "gc-alive", tmuxSocket(pod), ...names],
      {
        signal: opts.signal,
      },
    );
    return r.exitCode === 0;
  }

  async lastExit(name: string, opts: OpOptions = {}): Promise<ExitStatus | undefined> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p) return undefined;
    const st = podState(p as PodView);
    if (st.kind !== "ended") return undefined;
    return {
      code: st.exitCode,
      signal: st.signal === null ? null : `signal ${st.signal}`,
      at: st.at ?? new Date(),
    };
  }

  async nudge(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const text = terminalText(flattenContent(content), opts);
    if (text.includes("\0")) throw new NudgeNotDeliveredError(name, "the text contains NUL");
    const p = await this.pods.getPod(name, opts.signal);
    if (!p) return;
    const st = podState(p as PodView);
    if (st.kind === "pending") throw new SessionInitializingError(name, st.reason);
    if (st.kind !== "running" || text === "") return;
    const pod = p.metadata!.name!;
    await this.nudges.run(name, () => this.type(name, pod, text, opts.signal, opts.multiline));
  }

  async sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateKeys(keys);
    if (keys.length === 0) return;
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    try {
      await this.channel(p.metadata!.name!).sendKeys(keys, opts.signal);
    } catch (e) {
      if (!isGone(e)) throw e;
    }
  }

  async peek(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, false, opts.signal);
  }

  /** {@link peek} with the screen's colours and attributes kept as SGR escapes (`capture-pane -e` in the pod). */
  async peekStyled(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, true, opts.signal);
  }

  private async screenText(name: string, lines: number, styled: boolean, signal?: AbortSignal) {
    validateSessionName(name);
    const p = await this.pods.runningPod(name, signal);
    try {
      return await this.channel(p.metadata!.name!).capture(lines, styled, signal);
    } catch (e) {
      if (isGone(e)) throw new SessionInitializingError(name, "the tmux session is not up yet");
      throw e;
    }
  }

  async setMeta(name: string, key: string, value: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.patchAnnotation(name, metaAnnotation(key), value, opts.signal);
  }

  async getMeta(name: string, key: string, opts: OpOptions = {}): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || p.metadata?.deletionTimestamp) throw new SessionNotFoundError(name);
    return p.metadata?.annotations?.[metaAnnotation(key)];
  }

  async removeMeta(name: string, key: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.patchAnnotation(name, metaAnnotation(key), null, opts.signal);
  }

  private async patchAnnotation(name: string, key: string, value: string | null, signal?: AbortSignal) {
    const api = await this.api();
    await this.lease.claim(signal);
    const p = await this.pods.getPod(name, signal);
    if (!p || p.metadata?.deletionTimestamp) throw new SessionNotFoundError(name);
    // The uid precondition keeps a patch from landing on a pod that replaced this one.
    const body = { metadata: { uid: p.metadata?.uid, annotations: { [key]: value } } };
    try {
      await api.call(
        (c) => c.patchNamespacedPod({ name: p.metadata!.name!, namespace: this.ns, body }, api.mergePatch()),
        signal,
      );
    } catch (e) {
      // 422 is what a real server answers when the uid guard fails (metadata.uid is immutable)
      const code = httpStatus(e);
      if (code === 404 || code === 409 || code === 422)
        throw new SessionNotFoundError(name, undefined, { cause: e });
      throw apiFailure(`annotating pod ${p.metadata?.name}`, e);
    }
  }

  async getLastActivity(name: string, opts: OpOptions = {}): Promise<Date | undefined> {
    validateSessionName(name);
    const p = await this.pods.seenPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return undefined;
    try {
      return await this.channel(p.metadata!.name!).lastActivity(opts.signal);
    } catch (e) {
      if (isGone(e)) return undefined;
      throw e;
    }
  }

  async clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    try {
      await this.channel(p.metadata!.name!).clearHistory(opts.signal);
    } catch (e) {
      if (!isGone(e)) throw e;
    }
  }

  async copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    const exists = await stat(src).then(
      () => true,
      () => false,
    );
    if (!exists) return;
    const item = await pack(src, relDst, opts.signal);
    await unpack(this.city, p.metadata!.name!, this.workDirOf(p), item, opts.signal);
  }

  private workDirOf(p: K8s.V1Pod): string {
    return p.metadata?.annotations?.[WORK_DIR_ANNOTATION] ?? this.settings.workRoot;
  }

  /** Runs `config.sessionLive` in the running pod of `name` (hook dir, session env). */
  async runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (!config.sessionLive?.length) return;
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    const pod = p.metadata!.name!;
    const { plan, limits, localHookDir } = this.startsOf.planFor(name, config);
    await runHookCommands(
      { runCommand: (argv, o) => podCommand(this.city, pod, plan.hookDir, localHookDir, argv, o) },
      "session_live",
      config.sessionLive,
      {
        cwd: plan.hookDir,
        env: plan.env,
        timeoutMs: limits.setupTimeoutMs,
        signal: opts.signal ?? new AbortController().signal,
      },
    );
  }

  /** Attaches the caller's terminal to the pod's tmux session (exec with a TTY, raw mode); resolves on detach. */
  async attach(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (!process.stdin.isTTY) throw new UnsupportedError("attach needs a terminal on stdin");
    const p = await this.pods.runningPod(name, opts.signal);
    const pod = p.metadata!.name!;
    const api = await this.api();
    await api.execTty(this.ns, pod, tmuxIn(pod, "attach-session", "-t", TMUX_SESSION), opts.signal);
  }

  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const p = await this.pods.seenPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return false;
    try {
      return await this.channel(p.metadata!.name!).attached(opts.signal);
    } catch (e) {
      if (isGone(e)) return false;
      throw e;
    }
  }

  /** The session's output from its channel's notifications; `undefined` when missing or not running. */
  async watchOutput(name: string, opts: OpOptions = {}): Promise<SessionOutputWatch | undefined> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return undefined;
    return this.channel(p.metadata!.name!).output(opts.signal);
  }

  async waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    validateSessionName(name);
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return "gone";
    return this.channel(p.metadata!.name!)
      .waitIdle(timeoutMs, {
        readyPrefix: p.metadata?.annotations?.[PREFIX_ANNOTATION],
        quietMs: this.settings.idleQuietMs,
        signal: opts.signal,
      })
      .catch((e: unknown) => {
        if (isGone(e)) return "gone" as const;
        throw e;
      });
  }

  /**
   * Runs `argv` (no shell around it) in the session's pod, in its work dir (or `opts.cwd`
   * relative to it) with the pod's plain env values plus `opts.env`. Past `opts.timeoutMs`
   * (else `hook_timeout`) or on abort, the command and every process it started are killed
   * (see {@link execKillable}) before the call rejects with OperationTimeoutError or the
   * signal's reason. @throws SessionNotFoundError when the pod is missing or not running.
   */
  async execCommand(
    name: string,
    argv: readonly string[],
    opts: ExecCommandOptions = {},
  ): Promise<ExecCommandResult> {
    validateSessionName(name);
    if (argv.length === 0) throw new ProviderError("k8s", "execCommand: empty argv");
    const p = await this.pods.runningPod(name, opts.signal);
    const workDir = this.workDirOf(p);
    const dir = opts.cwd ? posix.resolve(workDir, opts.cwd) : workDir;
    const declared: Record<string, string> = {};
    for (const e of p.spec?.containers?.[0]?.env ?? []) {
      if (e.value !== undefined && !e.valueFrom) declared[e.name] = e.value;
    }
    const pod = p.metadata!.name!;
    const command = [...envArgv({ ...declared, ...opts.env }), "/bin/sh", "-c", IN_DIR, "gc-exec", dir];
    const r = await execKillable([...command, ...argv], {
      dir: "",
      signal: opts.signal,
      run: (wrapped) =>
        this.runInPod(pod, wrapped, {
          stdin: opts.stdin,
          signal: opts.signal,
          timeoutMs: opts.timeoutMs ?? this.settings.hookTimeoutMs,
          keepOutputOnCut: true,
        }),
      runKill: (kill, timeoutMs) => this.runInPod(pod, kill, { timeoutMs }),
    });
    return { exitCode: r.exitCode, stdout: r.stdout.toString("utf8"), stderr: r.stderr.toString("utf8") };
  }

  /** Reads a file under the session's work dir in its pod; `undefined` when absent. */
  async readSessionFile(name: string, rel: string, opts: OpOptions = {}): Promise<string | undefined> {
    const p = await this.pods.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return undefined;
    const r = await this.runInPod(
      p.metadata!.name!,
      ["/bin/sh", "-c", CAT, "gc-cat", posix.join(this.workDirOf(p), rel)],
      {
        signal: opts.signal,
      },
    );
    return r.exitCode === 0 ? r.stdout.toString("utf8") : undefined;
  }

  /**
   * Deletes every pod and Secret of this city (by label, each checked for ownership), waits
   * until the pods are gone, then releases the city's Lease.
   */
  async shutdown(opts: OpOptions = {}): Promise<void> {
    await this.api();
    const signal = opts.signal;
    await this.lease.claim(signal);
    await this.pods.deleteAll(signal);
    // The fleet is stopped: another checkout of the city may run it from now on.
    await this.lease.release(signal);
  }

  async close(): Promise<void> {
    this.nudges.clear();
    this.city.watch.close();
    this.lease.close();
    await this.city.channels.closeAll();
  }
}
