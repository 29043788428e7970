/**
 * K8sProvider: one pod per gc session, the session's program under tmux inside the pod, every
 * live operation a command run over the exec WebSocket (never kubectl). Pods and Secrets
 * carry the city's ownership and the session's identity as labels; metadata lives in pod
 * annotations (merge-patched). The start is split into separate steps — create, stage
 * files, run in the pod, read the screen, type, check liveness — so the shared start
 * lifecycle can drive them.
 */
import { randomUUID } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { basename, posix, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type * as K8s from "@kubernetes/client-node";
import {
  InvalidNameError,
  isGcError,
  NudgeNotDeliveredError,
  OperationTimeoutError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
  SessionInitializingError,
  SessionNotFoundError,
  UnsupportedError,
} from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import type { RunResult } from "../../proc/run.js";
import { terminalText } from "../delivery.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { ownerKey } from "../identity.js";
import { hookDirOf, SHELL } from "../launch.js";
import {
  type CommandOptions,
  DEFAULT_STARTUP_TIMEOUT_MS,
  execKillable,
  limitsFor,
  planStart,
  runHookCommands,
  runStart,
  type StartBackend,
  type StartLimits,
  type StartPlan,
  StartsInProgress,
} from "../lifecycle/index.js";
import { RUN_STDIN } from "../lifecycle/target-scripts.js";
import { outputTail } from "../pane-text.js";
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
import { tarOfPath } from "../tar.js";
import { type Channel, ChannelPool } from "../tmux/channels.js";
import { remoteGate } from "../tmux/gate.js";
import { isGone, NudgeQueue, type PaneState, validateKeys } from "../tmux/pane.js";
import { apiFailure, apiMessage, connect, type ExecResult, httpStatus, type KubeApi } from "./api.js";
import { k8sTransport } from "./channel.js";
import { CityLease, holderOf } from "./lease.js";
import { ANNOTATIONS, metaAnnotation, podName, selector } from "./names.js";
import { ensureCityObject } from "./owner.js";
import { CAT, IN_DIR, PROCESS_ALIVE, UNTAR, UNTAR_FILE } from "./scripts.js";
import { type K8sSettings, resolveSettings } from "./settings.js";
import {
  buildPod,
  buildSecret,
  CONTAINER,
  cityLabels,
  IMAGE_CHECK,
  IMAGE_CHECK_EXIT,
  type PodState,
  type PodView,
  podState,
  podWorkDir,
  type SessionIdentity,
  sessionOf,
  splitEnv,
  TMUX_SESSION,
  tmuxSocket,
} from "./spec.js";
import { type CachedPod, PodWatch, rvAtLeast } from "./watch.js";

/** How long a start step's failed exec waits for the pod's status to say the pod ended. */
const ENDED_GRACE_MS = 3_000;
const POLL_MS = 100;
const EXEC_TIMEOUT_MS = 30_000;
/** Seconds a booted pod waits for gc to create its tmux session before giving up. */
const BOOT_GRACE_S = 300;
/** How long a new pod's tmux server may take to listen. */
const SERVER_WAIT_MS = 20_000;
const CONFIRM_MS = 1_500;
/** Annotation holding the pod's work dir. */
const WORK_DIR_ANNOTATION = "gc.dev/work-dir";
/** Annotation holding the session's ready prompt prefix (idle detection). */
const PREFIX_ANNOTATION = "gc.dev/ready-prefix";

/** Options of {@link K8sProvider}. */
export interface K8sProviderOptions extends ProviderFactoryOptions {
  /** An already connected API (tests); default: {@link connect} with the settings. */
  readonly api?: KubeApi | undefined;
  /** Duration of the city's Lease (tests shorten it); default 30 s. */
  readonly leaseDurationMs?: number | undefined;
}

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
  private readonly cityDir: string;
  private apiPromise: Promise<KubeApi> | undefined;
  private readonly nudges = new NudgeQueue();
  private readonly starts = new StartsInProgress();
  /** One long-lived tmux control stream per pod (by pod name). */
  private readonly channels: ChannelPool;
  /** The one watch on the city's pods: start and deletion waits, observation. */
  private readonly pods: PodWatch;
  /** The city's Lease: one checkout acts on the fleet. */
  readonly lease: CityLease;

  constructor(opts: K8sProviderOptions) {
    this.settings = resolveSettings(opts.settings);
    this.owner = ownerKey(opts.city, opts.cityId);
    this.cityDir = opts.cityDir;
    if (opts.api) {
      this.namespace = this.settings.namespace ?? opts.api.contextNamespace() ?? "default";
      this.apiPromise = Promise.resolve(opts.api);
    }
    this.pods = new PodWatch({
      api: () => this.api(),
      namespace: () => this.ns,
      labelSelector: selector(cityLabels(this.owner)),
    });
    this.lease = new CityLease({
      api: () => this.api(),
      namespace: () => this.ns,
      owner: this.owner,
      holder: holderOf(opts.cityDir),
      durationMs: opts.leaseDurationMs,
    });
    this.channels = new ChannelPool((pod) => ({
      transport: k8sTransport(() => this.api(), this.ns, pod),
      socket: { path: tmuxSocket(pod) },
      attach: TMUX_SESSION,
      commandTimeoutMs: EXEC_TIMEOUT_MS,
      gate: remoteGate(`k8s:${this.ns}/${pod}`),
    }));
  }

  /** The control channel into pod `pod` (made on first use, kept until the pod is deleted). */
  channel(pod: string): Channel {
    return this.channels.get(pod);
  }

  /** The API connection, made on first use. */
  api(): Promise<KubeApi> {
    if (!this.apiPromise) {
      const p = connect({ kubeconfig: this.settings.kubeconfig, context: this.settings.context }).then(
        (api) => {
          this.namespace = this.settings.namespace ?? api.contextNamespace() ?? "default";
          return api;
        },
      );
      this.apiPromise = p;
      p.catch(() => {
        if (this.apiPromise === p) this.apiPromise = undefined;
      });
    }
    return this.apiPromise;
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
    return { owner: this.owner, name, pod: podName(this.owner, name) };
  }

  /** The session namespace: `session.k8s.namespace`, else the kubeconfig context's, else `default`. */
  private namespace: string | undefined;

  /** {@link K8sProvider.namespace}; known once {@link K8sProvider.api} resolved, which every caller awaits first. */
  private get ns(): string {
    if (this.namespace === undefined)
      throw new ProviderError("k8s", "the namespace is read before connecting");
    return this.namespace;
  }

  // ---- pods ---------------------------------------------------------------------------------

  /** The pod of `name` when it exists and is ours, else `undefined`. */
  private async getPod(name: string, signal?: AbortSignal): Promise<K8s.V1Pod | undefined> {
    const api = await this.api();
    const pod = this.identity(name).pod;
    try {
      const p = await api.call((c) => c.readNamespacedPod({ name: pod, namespace: this.ns }), signal);
      return sessionOf(p as PodView, this.owner) === name ? p : undefined;
    } catch (e) {
      if (httpStatus(e) === 404) return undefined;
      throw this.apiError(`reading pod ${pod}`, e);
    }
  }

  /** A failed API call as a ProviderError, with its fault (infrastructure, configuration) when known. */
  private apiError(what: string, e: unknown): ProviderError {
    return apiFailure(what, e);
  }

  /**
   * The running pod of `name`.
   * @throws SessionNotFoundError when missing or ended; SessionInitializingError while it boots.
   */
  private async runningPod(name: string, signal?: AbortSignal): Promise<K8s.V1Pod> {
    const p = await this.getPod(name, signal);
    if (!p) throw new SessionNotFoundError(name);
    const st = podState(p as PodView);
    if (st.kind === "pending")
      throw new SessionInitializingError(name, `pod ${p.metadata?.name}: ${st.reason}`);
    if (st.kind !== "running") throw new SessionNotFoundError(name, `pod ${st.kind}`);
    return p;
  }

  /**
   * Deletes the pod (with `grace_period`: the program gets SIGHUP through tmux and the grace
   * period before SIGKILL) and the Secret of `name`, and waits until the pod is gone — only
   * then may a pod of the same name start.
   */
  private async deletePod(name: string, uid: string | undefined, signal?: AbortSignal): Promise<void> {
    const api = await this.api();
    const { pod } = this.identity(name);
    await this.channels.drop(pod);
    let after: string | undefined;
    try {
      const answer = await api.call(
        (c) =>
          c.deleteNamespacedPod({
            name: pod,
            namespace: this.ns,
            gracePeriodSeconds: this.settings.gracePeriodSeconds,
            ...(uid ? { body: { preconditions: { uid } } } : {}),
          }),
        signal,
      );
      after = answer?.metadata?.resourceVersion;
    } catch (e) {
      const code = httpStatus(e);
      if (code !== 404 && code !== 409) throw this.apiError(`deleting pod ${pod}`, e);
    }
    await this.deleteSecret(name, signal);
    // Gone means absent, or a pod with another uid (a new start already replaced it), as the
    // city's pod watch sees it once it has caught up with the delete.
    await this.pods.until(
      (pods) => {
        const p = pods.get(pod);
        const gone =
          !p ||
          (uid !== undefined && p.metadata?.uid !== uid) ||
          sessionOf(p as PodView, this.owner) !== name;
        return gone ? true : undefined;
      },
      { after, signal },
    );
  }

  private async deleteSecret(name: string, signal?: AbortSignal): Promise<void> {
    const api = await this.api();
    const { pod } = this.identity(name);
    try {
      const sec = await api.call((c) => c.readNamespacedSecret({ name: pod, namespace: this.ns }), signal);
      if (sessionOf(sec as PodView, this.owner) !== name) return;
      await api.call((c) => c.deleteNamespacedSecret({ name: pod, namespace: this.ns }), signal);
    } catch (e) {
      if (httpStatus(e) !== 404) throw this.apiError(`deleting secret ${pod}`, e);
    }
  }

  /**
   * The first part of a start's `create`: the session's Secret (secret env values only) and
   * its pod (env, work dir from `plan`), then waits until the pod runs. A retried create
   * that finds a pod carrying this start's token counts as created (no duplicates after a
   * 5xx whose request did land). Leaves nothing behind when it rejects.
   * @throws SessionExistsError when another start owns the pod; OperationTimeoutError with the
   * pod's reason (ImagePullBackOff, CrashLoopBackOff, Unschedulable…) at `start_timeout`.
   */
  private async createPod(plan: StartPlan, signal: AbortSignal): Promise<{ pod: string; uid: string }> {
    const { name, workDir, env } = plan;
    const api = await this.api();
    const id = this.identity(name);
    const image = this.settings.image;
    if (!image) throw new ProviderError("k8s", "session.k8s.image is required to start a session");
    // A channel left from an earlier pod of this name (deleted behind gc's back) must not
    // serve the new one: its reconnects would race the new pod's boot.
    await this.channels.drop(id.pod);
    const startId = randomUUID();
    // Every pod and Secret is owned by the city object: deleting it removes the fleet.
    const ownerRef = await ensureCityObject(api, this.ns, this.owner, signal);
    const manifest = buildPod({
      id,
      settings: this.settings,
      image,
      workDir,
      env,
      startId,
      bootGraceSeconds: BOOT_GRACE_S,
      ownerRef,
    });
    manifest.metadata.annotations[WORK_DIR_ANNOTATION] = workDir;
    if (plan.config.readyPromptPrefix?.trim())
      manifest.metadata.annotations[PREFIX_ANNOTATION] = plan.config.readyPromptPrefix;
    const secret = buildSecret(id, this.ns, env, ownerRef);
    if (secret) {
      try {
        await api.call(
          (c) => c.createNamespacedSecret({ namespace: this.ns, body: secret as K8s.V1Secret }),
          signal,
        );
      } catch (e) {
        if (httpStatus(e) !== 409) throw this.apiError(`creating secret ${id.pod}`, e);
        // Left by a start that died: replace its values.
        await api.call(
          (c) =>
            c.replaceNamespacedSecret({ name: id.pod, namespace: this.ns, body: secret as K8s.V1Secret }),
          signal,
        );
      }
    }
    let created: K8s.V1Pod;
    try {
      created = await api.call(
        (c) => c.createNamespacedPod({ namespace: this.ns, body: manifest as unknown as K8s.V1Pod }),
        signal,
      );
    } catch (e) {
      if (httpStatus(e) === 409) {
        const p = await this.getPod(name, signal).catch(() => undefined);
        if (p?.metadata?.annotations?.[ANNOTATIONS.startId] !== startId) {
          throw new SessionExistsError(name, { cause: e });
        }
        created = p;
      } else {
        if (secret) await this.deleteSecret(name).catch(() => undefined);
        throw this.apiError(`creating pod ${id.pod}`, e);
      }
    }
    const uid = created.metadata?.uid ?? "";
    try {
      await this.awaitRunning(name, uid, created.metadata?.resourceVersion, signal);
    } catch (e) {
      await this.deletePod(name, uid).catch(() => undefined);
      throw e;
    }
    return { pod: id.pod, uid };
  }

  /**
   * Waits until the pod `uid` of `name` runs.
   * @throws SessionDiedDuringStartupError when it ends or is deleted; OperationTimeoutError
   * with the pod's reason at `start_timeout`; when `signal` aborts (the start's own deadline,
   * a cancel), a ProviderError saying what the pod still waits for, caused by the abort.
   */
  private async awaitRunning(
    name: string,
    uid: string,
    createdRv: string | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const { pod } = this.identity(name);
    let reason = "Pending";
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.settings.startTimeoutMs);
    try {
      // Every change of the pod comes from the city's watch: no request per unit of time.
      const st = await this.pods.until(
        (pods): PodState | "deleted" | undefined => {
          const p = pods.get(pod);
          if (!p || p.metadata?.uid !== uid) return "deleted";
          const now = podState(p as PodView);
          if (now.kind === "pending") {
            reason = now.reason;
            return undefined;
          }
          return now;
        },
        { after: createdRv, signal: AbortSignal.any([signal, deadline.signal]) },
      );
      if (st === "deleted") throw new SessionDiedDuringStartupError(name, `pod ${pod} was deleted`);
      if (st.kind === "running") return;
      if (st.kind === "ended") throw await this.endedEarly(name, pod, st, signal);
      throw new SessionDiedDuringStartupError(name, `pod ${pod} is being deleted`);
    } catch (e) {
      if (signal.aborted)
        throw new ProviderError("k8s", `pod ${pod} still ${pendingText(reason)}`, { cause: e });
      if (deadline.signal.aborted) {
        throw new OperationTimeoutError(
          `start ${name}: pod ${pod} still ${pendingText(reason)}`,
          this.settings.startTimeoutMs,
        );
      }
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The state of pod `pod` (uid `uid`) once it has ended, as the city's watch sees it, waiting
   * at most `ms`; `undefined` when it runs on, was replaced or deleted, or cannot be watched.
   */
  private async endsWithin(
    pod: string,
    uid: string,
    ms: number,
  ): Promise<Extract<PodState, { kind: "ended" }> | undefined> {
    try {
      const st = await this.pods.until(
        (pods): Extract<PodState, { kind: "ended" }> | "other" | undefined => {
          const p = pods.get(pod);
          if (!p || p.metadata?.uid !== uid) return "other";
          const now = podState(p as PodView);
          return now.kind === "ended" ? now : undefined;
        },
        { signal: AbortSignal.timeout(ms) },
      );
      return st === "other" ? undefined : st;
    } catch {
      return undefined;
    }
  }

  /**
   * The report of a pod that ended before gc's session existed (the boot script, the image):
   * its end and its last log lines, read now because they go with the pod.
   */
  private async endedEarly(
    name: string,
    pod: string,
    st: Extract<PodState, { kind: "ended" }>,
    signal?: AbortSignal,
  ): Promise<SessionDiedDuringStartupError> {
    const logs = await this.logTail(pod, signal);
    const code = st.exitCode === null ? "" : ` (exit code ${st.exitCode})`;
    // No /bin/sh: the container could not even start, and the runtime's message says so.
    const sh = /"?\/bin\/sh"?: .*(no such file|not found)/i.test(st.message ?? "")
      ? "; gc: the image lacks: sh (/bin/sh)"
      : "";
    const message = st.message ? `: ${st.message}` : "";
    return new SessionDiedDuringStartupError(
      name,
      `pod ${pod} ended: ${st.reason}${code}${message}${sh}${logs ? `; its last log lines: ${logs}` : ""}`,
    );
  }

  /** The pod's last 20 log lines, one line (` | ` between them); empty when unreadable. */
  private async logTail(pod: string, signal?: AbortSignal): Promise<string> {
    const api = await this.api();
    const text = await api
      .call(
        (c) => c.readNamespacedPodLog({ name: pod, namespace: this.ns, container: CONTAINER, tailLines: 20 }),
        signal,
      )
      .catch(() => "");
    return String(text)
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .join(" | ")
      .slice(-2000);
  }

  /** Runs `argv` in the pod of `name` (no shell). */
  async runInPod(
    pod: string,
    argv: readonly string[],
    opts: {
      stdin?: string | Buffer | NodeJS.ReadableStream | undefined;
      signal?: AbortSignal | undefined;
      timeoutMs?: number | undefined;
      /** On a deadline or abort, hang the output received on the error (`capturedOutputOf`). */
      keepOutputOnCut?: boolean | undefined;
    } = {},
  ): Promise<ExecResult> {
    const api = await this.api();
    try {
      return await api.exec(this.ns, pod, argv, {
        stdin: opts.stdin as never,
        signal: opts.signal,
        timeoutMs: opts.timeoutMs ?? EXEC_TIMEOUT_MS,
        keepOutputOnCut: opts.keepOutputOnCut,
      });
    } catch (e) {
      if (e instanceof ProviderError || e instanceof OperationTimeoutError || opts.signal?.aborted) throw e;
      throw new ProviderError("k8s", `exec in pod ${pod}: ${apiMessage(e)}`, { cause: e });
    }
  }

  private tmux(pod: string, ...args: string[]): string[] {
    return ["tmux", "-S", tmuxSocket(pod), ...args];
  }

  /**
   * {@link StartBackend.runCommand} in a pod: `argv` (a hook's `/bin/sh -c CMD`) runs in
   * `opts.cwd` in the pod with the plain values of `opts.env` (secret ones are already in the
   * container's environment, from the Secret; they never travel as argv). A local script
   * (`session_setup_script`: `[path]` or `[sh, path]`, `path` under `hookDir` in the pod,
   * i.e. under `localHookDir` here) is streamed over stdin and run by {@link RUN_STDIN}.
   * @throws OperationTimeoutError past `opts.timeoutMs`; the signal's reason on abort.
   */
  private async podCommand(
    pod: string,
    hookDir: string,
    localHookDir: string,
    argv: readonly string[],
    opts: CommandOptions,
  ): Promise<RunResult> {
    const env = envArgv(splitEnv(opts.env).plain);
    const hook = argv.length === 3 && argv[0] === SHELL && argv[1] === "-c";
    let r: ExecResult;
    if (hook) {
      r = await this.runInPod(pod, [...env, "/bin/sh", "-c", IN_DIR, "gc-hook", opts.cwd, ...argv], {
        signal: opts.signal,
        timeoutMs: opts.timeoutMs,
      });
    } else {
      const path = argv[argv.length - 1]!;
      const rel = posix.relative(hookDir, path);
      const local = rel.startsWith("..") || posix.isAbsolute(rel) ? path : resolve(localHookDir, rel);
      r = await this.runInPod(pod, [...env, "/bin/sh", "-c", RUN_STDIN, "gc-script", opts.cwd], {
        stdin: await readFile(local),
        signal: opts.signal,
        timeoutMs: opts.timeoutMs,
      });
    }
    return {
      exitCode: r.exitCode,
      signal: null,
      stdout: r.stdout.toString("utf8"),
      stderr: r.stderr.toString("utf8"),
    };
  }

  /** Unpacks a {@link pack}ed archive under the pod's `workDir`. */
  private async unpack(pod: string, workDir: string, item: Packed, signal?: AbortSignal): Promise<void> {
    const dst = posix.join(workDir, item.relDst || ".");
    const untar = item.file
      ? ["/bin/sh", "-c", UNTAR_FILE, "gc-untar", posix.dirname(dst), item.name, posix.basename(dst)]
      : ["/bin/sh", "-c", UNTAR, "gc-untar", dst];
    const r = await this.runInPod(pod, untar, { stdin: item.archive, signal });
    if (r.exitCode !== 0) {
      throw new ProviderError(
        "k8s",
        `unpacking ${item.src} in pod ${pod}: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`,
      );
    }
  }

  /** Current pane of the pod's session (over its control channel), or `undefined` when there is none. */
  readScreen(pod: string, signal?: AbortSignal): Promise<PaneState | undefined> {
    return this.channel(pod).read(signal);
  }

  /** Types `text` into the pod's session and confirms it was submitted (tmux/pane.ts `deliver`). */
  type(
    name: string,
    pod: string,
    text: string,
    signal?: AbortSignal,
    multiline?: "paste" | "lines" | undefined,
  ): Promise<void> {
    return this.channel(pod).deliver(name, text, CONFIRM_MS, signal, multiline);
  }

  /** Liveness: the pane exists and its program has not exited. */
  async alive(pod: string, signal?: AbortSignal): Promise<boolean> {
    try {
      const st = await this.readScreen(pod, signal);
      return st !== undefined && !st.dead;
    } catch (e) {
      // The API server refuses an exec into a pod whose container has ended (HTTP 400): a
      // program that exited at once ends its pod, and that is "not alive", not an API error.
      if (signal?.aborted || !(await this.podEnded(pod, signal))) throw e;
      return false;
    }
  }

  /** True when pod `pod` is gone, ended or being deleted. @throws ProviderError when unreadable. */
  private async podEnded(pod: string, signal?: AbortSignal): Promise<boolean> {
    const api = await this.api();
    try {
      const p = await api.call((c) => c.readNamespacedPod({ name: pod, namespace: this.ns }), signal);
      const kind = podState(p as PodView).kind;
      return kind !== "running" && kind !== "pending";
    } catch (e) {
      if (httpStatus(e) === 404) return true;
      throw this.apiError(`reading pod ${pod}`, e);
    }
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
    return this.starts.run(name, () => this.doStart(name, cfg, opts.signal));
  }

  private async doStart(
    name: string,
    cfg: StartConfig,
    signal: AbortSignal | undefined,
  ): Promise<StartReport> {
    await this.lease.claim(signal);
    const existing = await this.getPod(name, signal);
    if (existing) {
      const st = podState(existing as PodView);
      if (st.kind === "running" || st.kind === "pending") throw new SessionExistsError(name);
      await this.deletePod(name, existing.metadata?.uid, signal); // ended: its exit status has had its day
    }
    const { plan, limits, localHookDir } = this.planFor(name, cfg);
    return runStart(this.startBackend(plan, limits, localHookDir), plan, limits, signal);
  }

  /**
   * The start plan of `name` with the pod's paths (work and hook dir under `work_root`), the
   * image's environment as the base (never this host's), and the limits: `startup_timeout`
   * defaults to `start_timeout` (scheduling, image pull) plus the usual start deadline.
   */
  private planFor(
    name: string,
    cfg: StartConfig,
  ): { plan: StartPlan; limits: StartLimits; localHookDir: string } {
    const localHookDir = resolve(this.cityDir, hookDirOf(cfg));
    const config: StartConfig = {
      ...cfg,
      workDir: podWorkDir(this.settings.workRoot, this.cityDir, cfg.workDir),
      hookDir: podWorkDir(this.settings.workRoot, this.cityDir, hookDirOf(cfg)),
    };
    const plan = planStart(name, this.owner, config, { baseEnv: {}, sourceDir: this.cityDir });
    const limits = limitsFor(config, {
      startupTimeoutMs: this.settings.startTimeoutMs + DEFAULT_STARTUP_TIMEOUT_MS,
      setupTimeoutMs: this.settings.hookTimeoutMs,
      readyTimeoutMs: this.settings.readyTimeoutMs,
    });
    return { plan, limits, localHookDir };
  }

  /**
   * The lifecycle's view of one pod being started. The pod does not exist before `create`,
   * so `stage` only packs the files (tar, here) and `create` runs `pre_start` in the pod
   * before unpacking them: the lifecycle's order (pre_start → stage → create) holds.
   */
  private startBackend(plan: StartPlan, limits: StartLimits, localHookDir: string): StartBackend {
    let made: { pod: string; uid: string } | undefined;
    let packed: readonly Packed[] = [];
    const need = (): string => {
      if (!made) throw new ProviderError("k8s", "the pod does not exist yet");
      return made.pod;
    };
    const backend: StartBackend = {
      provider: "k8s",
      delegates: new Set(["pre_start"]),
      runCommand: (argv, o) => this.podCommand(need(), plan.hookDir, localHookDir, argv, o),
      stage: async (p, signal) => {
        packed = await packStage(p, signal);
      },
      create: async (p, signal) => {
        made = await this.createPod(p, signal);
        try {
          await runHookCommands(backend, "pre_start", p.config.preStart, {
            cwd: p.hookDir,
            env: { ...p.env, ...backend.hookEnv },
            timeoutMs: limits.setupTimeoutMs,
            signal,
          });
          for (const item of packed) await this.unpack(made.pod, p.workDir, item, signal);
          signal.throwIfAborted();
          await this.newSession(made.pod, p, signal);
        } catch (e) {
          // The container may have ended under the steps (the boot script failed after it
          // ran): then its end and log lines are the story, not the step's exec error. The
          // step can fail a moment before the pod's status says so: waited for, bounded.
          const wait = isGcError(e, "GC_PROVIDER") ? ENDED_GRACE_MS : 0;
          const st = signal.aborted ? undefined : await this.endsWithin(made.pod, made.uid, wait);
          const report = st ? await this.endedEarly(p.name, made.pod, st) : undefined;
          await this.deletePod(p.name, made.uid).catch(() => undefined);
          made = undefined;
          throw report ? Object.assign(report, { cause: e }) : e;
        }
      },
      alive: (signal) => this.alive(need(), signal),
      died: () => this.died(plan.name, need()),
      screen: (signal) => this.channel(need()).screen(signal),
      sendKeys: (keys, signal) => this.channel(need()).sendKeys(keys, signal),
      nudge: (text, signal) =>
        this.nudges.run(plan.name, () => this.type(plan.name, need(), text, signal, plan.config.multiline)),
      destroy: async () => {
        if (made) await this.deletePod(plan.name, made.uid);
      },
    };
    return backend;
  }

  /**
   * Creates the tmux session in the pod's server. `-N`: never start a server here — the
   * pod's own foreground server may still be coming up, so a missing server is waited for.
   */
  private async newSession(pod: string, plan: StartPlan, signal: AbortSignal): Promise<void> {
    // The image check runs first in the same exec: a tool the image lacks is named here
    // whether or not the boot script (which checks too) has ended the pod yet.
    const argv = [
      "/bin/sh",
      "-c",
      `${IMAGE_CHECK}\nexec "$@"`,
      "gc-check",
      "tmux",
      "-N",
      "-S",
      tmuxSocket(pod),
      "new-session",
      "-d",
      "-s",
      TMUX_SESSION,
      "-x",
      String(this.settings.cols),
      "-y",
      String(this.settings.rows),
      "--",
      "/bin/sh",
      "-c",
      IN_DIR,
      "gc-session",
      plan.workDir,
      ...plan.argv,
    ];
    const deadline = Date.now() + SERVER_WAIT_MS;
    for (;;) {
      const r = await this.runInPod(pod, argv, { signal });
      if (r.exitCode === 0) return;
      const why = r.stderr.toString("utf8").trim();
      if (r.exitCode === IMAGE_CHECK_EXIT)
        throw new SessionDiedDuringStartupError(plan.name, `pod ${pod}: ${why}`);
      if (!/no server running|error connecting|No such file/i.test(why) || Date.now() > deadline) {
        throw new ProviderError(
          "k8s",
          `creating the tmux session in pod ${pod}: ${why || `exit ${r.exitCode}`}`,
        );
      }
      await sleep(POLL_MS, undefined, { signal });
    }
  }

  private async died(name: string, pod: string): Promise<SessionDiedDuringStartupError> {
    const st = await this.readScreen(pod).catch(() => undefined);
    const tail = outputTail((st?.rows ?? []).join("\n"));
    const how = st?.exitStatus !== undefined ? `exit status ${st.exitStatus}` : "the session is gone";
    return new SessionDiedDuringStartupError(name, `${how}${tail ? `; last output: ${tail}` : ""}`);
  }

  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    this.nudges.forget(name);
    await this.lease.claim(opts.signal);
    const p = await this.getPod(name, opts.signal);
    if (p) await this.deletePod(name, p.metadata?.uid, opts.signal);
    else await this.deleteSecret(name, opts.signal);
  }

  async interrupt(name: string, opts: OpOptions = {}): Promise<void> {
    await this.sendKeys(name, ["C-c"], opts);
  }

  async isRunning(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const p = await this.getPod(name, opts.signal);
    return p !== undefined && podState(p as PodView).kind === "running";
  }

  /** One labelled list of this city's pods; running ones whose name starts with `prefix`. */
  async listRunning(prefix: string, opts: OpOptions = {}): Promise<string[]> {
    return (await this.snapshot(prefix, opts)).filter((s) => s.running).map((s) => s.name);
  }

  /** Every pod of this city (one labelled list), running or not, whose name starts with `prefix`. */
  async snapshot(prefix: string, opts: OpOptions = {}): Promise<SessionSnapshot[]> {
    const api = await this.api();
    await this.lease.claim(opts.signal);
    let pods: readonly CachedPod[] | undefined = await this.pods.current();
    if (!pods) {
      // The watch is re-connecting: one labelled LIST answers instead.
      try {
        pods = (
          await api.call(
            (c) =>
              c.listNamespacedPod({ namespace: this.ns, labelSelector: selector(cityLabels(this.owner)) }),
            opts.signal,
          )
        ).items;
      } catch (e) {
        throw this.apiError("listing pods", e);
      }
    }
    const out: SessionSnapshot[] = [];
    for (const p of pods) {
      const name = sessionOf(p as PodView, this.owner);
      if (name === undefined || !name.startsWith(prefix)) continue;
      out.push({ name, running: podState(p as PodView).kind === "running" });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async processAlive(name: string, names: readonly string[], opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.runningPod(name, signal);
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
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.getPod(name, signal);
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
      throw this.apiError(`annotating pod ${p.metadata?.name}`, e);
    }
  }

  async getLastActivity(name: string, opts: OpOptions = {}): Promise<Date | undefined> {
    validateSessionName(name);
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    try {
      await this.channel(p.metadata!.name!).clearHistory(opts.signal);
    } catch (e) {
      if (!isGone(e)) throw e;
    }
  }

  async copyTo(name: string, src: string, relDst: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const p = await this.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    const exists = await stat(src).then(
      () => true,
      () => false,
    );
    if (!exists) return;
    const item = await pack(src, relDst, opts.signal);
    await this.unpack(p.metadata!.name!, this.workDirOf(p), item, opts.signal);
  }

  private workDirOf(p: K8s.V1Pod): string {
    return p.metadata?.annotations?.[WORK_DIR_ANNOTATION] ?? this.settings.workRoot;
  }

  /** Runs `config.sessionLive` in the running pod of `name` (hook dir, session env). */
  async runLive(name: string, config: StartConfig, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (!config.sessionLive?.length) return;
    const p = await this.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return;
    const pod = p.metadata!.name!;
    const { plan, limits, localHookDir } = this.planFor(name, config);
    await runHookCommands(
      { runCommand: (argv, o) => this.podCommand(pod, plan.hookDir, localHookDir, argv, o) },
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
    const p = await this.runningPod(name, opts.signal);
    const pod = p.metadata!.name!;
    const api = await this.api();
    await api.execTty(this.ns, pod, this.tmux(pod, "attach-session", "-t", TMUX_SESSION), opts.signal);
  }

  async isAttached(name: string, opts: OpOptions = {}): Promise<boolean> {
    validateSessionName(name);
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.getPod(name, opts.signal);
    if (!p || podState(p as PodView).kind !== "running") return undefined;
    return this.channel(p.metadata!.name!).output(opts.signal);
  }

  async waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    validateSessionName(name);
    const p = await this.getPod(name, opts.signal);
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
    const p = await this.runningPod(name, opts.signal);
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
    const p = await this.getPod(name, opts.signal);
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
   * Deletes every pod and Secret of this city (by label, each checked for ownership), then
   * waits until the pods are gone, observing with one labelled list per poll.
   */
  async shutdown(opts: OpOptions = {}): Promise<void> {
    const api = await this.api();
    const signal = opts.signal;
    await this.lease.claim(signal);
    const labelSelector = selector(cityLabels(this.owner));
    const listPods = async () =>
      (
        await api.call((c) => c.listNamespacedPod({ namespace: this.ns, labelSelector }), signal)
      ).items.filter((p) => sessionOf(p as PodView, this.owner) !== undefined);
    const pods = await listPods();
    let after: string | undefined;
    await eachLimited(pods, 16, async (p) => {
      try {
        const answer = await api.call(
          (c) =>
            c.deleteNamespacedPod({
              name: p.metadata!.name!,
              namespace: this.ns,
              gracePeriodSeconds: this.settings.gracePeriodSeconds,
            }),
          signal,
        );
        const rv = answer?.metadata?.resourceVersion;
        if (rv !== undefined && (after === undefined || rvAtLeast(rv, after))) after = rv;
      } catch (e) {
        if (httpStatus(e) !== 404) throw this.apiError(`deleting pod ${p.metadata?.name}`, e);
      }
    });
    const secrets = await api.call(
      (c) => c.listNamespacedSecret({ namespace: this.ns, labelSelector }),
      signal,
    );
    await eachLimited(
      secrets.items.filter((x) => sessionOf(x as PodView, this.owner) !== undefined),
      16,
      async (x) => {
        try {
          await api.call(
            (c) => c.deleteNamespacedSecret({ name: x.metadata!.name!, namespace: this.ns }),
            signal,
          );
        } catch (e) {
          if (httpStatus(e) !== 404) throw this.apiError(`deleting secret ${x.metadata?.name}`, e);
        }
      },
    );
    // Gone as the city's pod watch sees it, once caught up with the last delete.
    await this.pods.until(
      (all) =>
        [...all.values()].some((p) => sessionOf(p as PodView, this.owner) !== undefined) ? undefined : true,
      { after, signal },
    );
    // The fleet is stopped: another checkout of the city may run it from now on.
    await this.lease.release(signal);
  }

  async close(): Promise<void> {
    this.nudges.clear();
    this.pods.close();
    this.lease.close();
    await this.channels.closeAll();
  }
}

/** Runs `fn` over `items`, at most `limit` at a time; rejects with the first failure. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** `env K=V…` argv prefix (values travel as argv elements, never through a shell). */
function envArgv(env: Readonly<Record<string, string>>): string[] {
  const pairs = Object.entries(env).filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  return pairs.length ? ["env", ...pairs.map(([k, v]) => `${k}=${v}`)] : [];
}

/** A local file or tree packed as a tar archive, and where under a work dir it goes. */
interface Packed {
  /** The local source (for errors). */
  readonly src: string;
  readonly archive: Buffer;
  /** Destination relative to the work dir ("" = the work dir, or the file's own name). */
  readonly relDst: string;
  /** A single file (its name in the archive is `name`), else a directory's contents. */
  readonly file: boolean;
  readonly name: string;
}

/**
 * Packs local `src` (file or directory) for `relDst` under a work dir. A file with an empty
 * `relDst` keeps its name.
 * @throws InvalidNameError when `relDst` leaves the work dir; the fs error when `src` cannot be read.
 */
async function pack(src: string, relDst: string, signal?: AbortSignal): Promise<Packed> {
  const inside = posix.normalize(posix.join("/w", relDst || "."));
  if (inside !== "/w" && !inside.startsWith("/w/")) {
    throw new InvalidNameError("copy destination", relDst, "must stay inside the work dir");
  }
  const file = !(await stat(src)).isDirectory();
  signal?.throwIfAborted();
  // Owned like the local files, as the host's `tar -c` recorded them (tar.ts, no spawn).
  const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const archive = await tarOfPath(src, file ? basename(src) : ".", owner);
  return { src, archive, relDst: file && !relDst ? basename(src) : relDst, file, name: basename(src) };
}

/**
 * The lifecycle's `stage` for pods: packs `overlay_dir` (its contents into the work dir) and
 * each `copy_files` entry, in that order, before the pod exists; `create` unpacks them.
 */
async function packStage(plan: StartPlan, signal: AbortSignal): Promise<Packed[]> {
  const out: Packed[] = [];
  const { overlayDir, copyFiles } = plan.config;
  if (overlayDir) out.push(await pack(resolve(plan.sourceDir, overlayDir), "", signal));
  for (const e of copyFiles ?? []) out.push(await pack(resolve(plan.sourceDir, e.src), e.relDst, signal));
  return out;
}

/** `Pending`, with the scheduler's or kubelet's reason when there is one beyond the phase. */
function pendingText(reason: string): string {
  return reason === "Pending" ? "Pending" : `Pending (${reason})`;
}
