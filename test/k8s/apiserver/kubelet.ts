/**
 * A simulated node: every pod the store holds is "run" as local process trees under the pod's own
 * directory (`<rootDir>/<uid8>/fs` stands for the container's `/`), moving through the phases a
 * kubelet reports: Pending (unscheduled) → Pending/ContainerCreating → Running → Succeeded/Failed,
 * with container restarts (CrashLoopBackOff) under restartPolicy Always/OnFailure, image pull
 * failures, CreateContainerConfigError for missing Secrets, graceful deletion (SIGTERM, then
 * SIGKILL at the grace deadline) and exec/attach/log access.
 *
 * Pods are not isolated from the host's filesystem: an absolute path outside the pod's
 * directory is the host's. The one such path a gc session pod owns is its tmux socket
 * (`GC_TMUX_SOCKET`, `/tmp/gc-tmux-<pod>`) with `<socket>.conf` beside it (and tmux's
 * `<socket>.lock` when a server start was cut short); in a real cluster they vanish with the
 * container, so here the node removes them when the pod goes, and a pod of the same name
 * starts its containers only after that.
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Faults } from "./faults.js";
import { type ExitInfo, killTagged, type Proc, startProc } from "./proc.js";
import { now } from "./resources.js";
import type { KObject } from "./selectors.js";
import { type ApiError, badRequest } from "./status.js";
import type { Store, StoreEvent } from "./store.js";

/** Env marker naming the server every process belongs to. */
export const SERVER_MARKER = "GC_LOOPBACK_SERVER";
/** Env marker naming the pod (uid). */
export const POD_MARKER = "GC_LOOPBACK_POD";
/** Env marker naming the container instance (containerID without scheme). */
export const CONTAINER_MARKER = "GC_LOOPBACK_CONTAINER";
/** Container env var naming the pod's tmux socket on the (shared) host filesystem. */
export const TMUX_SOCKET_ENV = "GC_TMUX_SOCKET";

/**
 * The host files a pod owns outside its directory: for each container whose env sets
 * {@link TMUX_SOCKET_ENV} to an absolute path, that socket, its `.conf` (gc's boot script) and
 * its `.lock` (tmux's, left when a client starting the server is killed). Pure.
 */
export function podHostFiles(pod: KObject): string[] {
  const spec = pod.spec as { containers?: ContainerSpec[]; initContainers?: ContainerSpec[] } | undefined;
  const out = new Set<string>();
  for (const c of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]) {
    for (const e of c.env ?? []) {
      if (e.name === TMUX_SOCKET_ENV && e.value?.startsWith("/") && e.value.length > 1) {
        out.add(e.value);
        out.add(`${e.value}.conf`);
        out.add(`${e.value}.lock`);
      }
    }
  }
  return [...out];
}

/** Node simulation timings. */
export interface KubeletOptions {
  /** Directory holding one subdirectory per pod. */
  readonly rootDir: string;
  /** Tag for every process started, so stop() finds them all. */
  readonly serverId: string;
  /** Pending (unscheduled) → scheduled/ContainerCreating. */
  readonly scheduleDelayMs: number;
  /** ContainerCreating → Running. */
  readonly startDelayMs: number;
  /** First CrashLoopBackOff delay; doubles per restart, capped at 32×. */
  readonly restartBackoffMs: number;
  /** Default entrypoint when a container has neither command nor args (the "image's"). */
  readonly defaultEntrypoint: readonly string[];
  /**
   * Whether a pod's main container processes really run (default: all), asked per main
   * container. `false`: the container goes Running with no process behind it (exec still
   * works, in the container's directory and environment; logs are empty; attach is refused).
   * An argv: the container runs that instead of its command and args — a stand-in, in the
   * container's directory and environment (taken as is: no `$(VAR)` expansion), whose end ends the container
   * as its own would. For scale tests, where spawning hundreds of processes (or running each
   * one's own periodic work) would only measure fork().
   */
  readonly runProcesses?: (pod: KObject, container: string) => boolean | readonly string[];
  readonly nodeName: string;
}

type Json = Record<string, unknown>;
type ContainerSpec = Json & {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: Json[];
  tty?: boolean;
  stdin?: boolean;
  stdinOnce?: boolean;
};
type EnvVar = { name: string; value?: string; valueFrom?: Json };

/** Output of one container instance, with timestamps (for `timestamps`/`sinceSeconds`). */
export class LogBuffer extends EventEmitter {
  readonly chunks: { ts: number; data: Buffer }[] = [];
  ended = false;
  private bytes = 0;
  append(data: Buffer): void {
    this.chunks.push({ ts: Date.now(), data });
    this.bytes += data.length;
    while (this.bytes > 8 * 1024 * 1024 && this.chunks.length > 1)
      this.bytes -= this.chunks.shift()!.data.length;
    this.emit("data", data);
  }
  end(): void {
    this.ended = true;
    this.emit("end");
  }
}

type CState =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | {
      terminated: {
        exitCode: number;
        signal?: number;
        reason: string;
        startedAt: string;
        finishedAt: string;
        containerID: string;
        message?: string;
      };
    };

interface ContainerRun {
  readonly spec: ContainerSpec;
  readonly init: boolean;
  state: CState;
  lastState: CState | Record<string, never>;
  restartCount: number;
  containerId?: string;
  proc?: Proc | undefined;
  log: LogBuffer;
  prevLog?: LogBuffer;
  env?: Record<string, string>;
  cwd?: string;
  /** Attach listeners for the main process. */
  readonly attachers: Set<(stream: 1 | 2, d: Buffer) => void>;
}

interface PodRun {
  readonly uid: string;
  readonly ns: string;
  readonly name: string;
  readonly dir: string;
  scheduled: boolean;
  unschedulable: boolean;
  initialized: boolean;
  phase: "Pending" | "Running" | "Succeeded" | "Failed";
  readonly containers: ContainerRun[];
  readonly transitions: Map<string, { status: string; at: string }>;
  startTime?: string;
  podIP?: string;
  terminating: boolean;
  gone: boolean;
  readonly timers: Set<NodeJS.Timeout>;
  /** Host files of the pod ({@link podHostFiles}), removed when it goes. */
  readonly hostFiles: readonly string[];
  /** Whether its containers were started (it may have created its host files). */
  started: boolean;
}

/** A terminal's size message (kubectl `{"Width":…}`, client-node `{"width":…}`). */
export function parseResize(payload: Buffer): { cols: number; rows: number } | undefined {
  try {
    const o = JSON.parse(payload.toString("utf8")) as Record<string, unknown>;
    const get = (k: string) => Object.entries(o).find(([key]) => key.toLowerCase() === k)?.[1];
    const cols = Number(get("width"));
    const rows = Number(get("height"));
    return Number.isFinite(cols) && Number.isFinite(rows) ? { cols, rows } : undefined;
  } catch {
    return undefined;
  }
}

/** Expands `$(VAR)` references as the kubelet does (`$$` escapes; unknown stay verbatim). */
export function expandRefs(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
    m === "$$" ? "$" : name !== undefined && Object.hasOwn(env, name) ? env[name]! : m,
  );
}

/** The simulated node. */
export class Kubelet {
  private readonly runs = new Map<string, PodRun>();
  /** Host file → the removal of a gone pod's copy; a pod naming it starts after that. */
  private readonly releasing = new Map<string, Promise<void>>();
  private unsubscribe: () => void;
  private ipSeq = 2;

  private readonly store: Store;
  private readonly opts: KubeletOptions;
  private readonly faults: Faults;

  constructor(store: Store, opts: KubeletOptions, faults: Faults) {
    this.store = store;
    this.opts = opts;
    this.faults = faults;
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
    mkdirSync(opts.rootDir, { recursive: true });
  }

  private onEvent(e: StoreEvent): void {
    if (e.resource !== "pods") return;
    const uid = e.object.metadata.uid!;
    if (e.type === "ADDED") this.admit(e.object);
    const run = this.runs.get(uid);
    if (!run) return;
    if (e.type === "MODIFIED" && e.object.metadata.deletionTimestamp && !run.terminating) {
      const grace = Number(e.object.metadata.deletionGracePeriodSeconds ?? 30);
      void this.terminate(run, grace * 1000);
    }
    if (e.type === "DELETED" && !run.gone) void this.destroy(run);
  }

  /** Adopts pods already in the store (after a restart that kept state). */
  adoptExisting(): void {
    for (const pod of this.store.list("pods")) if (!this.runs.has(pod.metadata.uid!)) this.admit(pod);
  }

  private admit(pod: KObject): void {
    const spec = pod.spec as { containers: ContainerSpec[]; initContainers?: ContainerSpec[] };
    const uid = pod.metadata.uid!;
    const dir = join(this.opts.rootDir, uid.slice(0, 8));
    const mk = (c: ContainerSpec, init: boolean): ContainerRun => ({
      spec: c,
      init,
      state: { waiting: { reason: "ContainerCreating" } },
      lastState: {},
      restartCount: 0,
      log: new LogBuffer(),
      attachers: new Set(),
    });
    const run: PodRun = {
      uid,
      ns: pod.metadata.namespace!,
      name: pod.metadata.name!,
      dir,
      scheduled: false,
      unschedulable: false,
      initialized: !(spec.initContainers?.length ?? 0),
      phase: "Pending",
      containers: [
        ...(spec.initContainers ?? []).map((c) => mk(c, true)),
        ...spec.containers.map((c) => mk(c, false)),
      ],
      transitions: new Map(),
      terminating: false,
      gone: false,
      timers: new Set(),
      hostFiles: podHostFiles(pod),
      started: false,
    };
    for (const c of run.containers) {
      if (!c.init && !run.initialized) c.state = { waiting: { reason: "PodInitializing" } };
    }
    this.runs.set(uid, run);
    this.later(run, this.opts.scheduleDelayMs, () => this.schedule(run));
  }

  private later(run: PodRun, ms: number, fn: () => void | Promise<void>): void {
    const t = setTimeout(() => {
      run.timers.delete(t);
      if (!run.gone && !run.terminating) void fn();
    }, ms);
    run.timers.add(t);
  }

  private current(run: PodRun): KObject | undefined {
    const pod = this.store.get("pods", run.ns, run.name);
    return pod && pod.metadata.uid === run.uid ? pod : undefined;
  }

  private schedule(run: PodRun): void {
    const pod = this.current(run);
    if (!pod) return;
    if (this.faults.isStuckPending(pod)) {
      run.unschedulable = true;
      this.sync(run);
      return;
    }
    run.scheduled = true;
    run.startTime = now();
    run.podIP = `10.1.${Math.floor(this.ipSeq / 250)}.${(this.ipSeq++ % 250) + 2}`;
    this.store.put("pods", { ...pod, spec: { ...(pod.spec as Json), nodeName: this.opts.nodeName } });
    this.sync(run);
    this.later(run, this.opts.startDelayMs, () => this.pullAndStart(run));
  }

  private pullAndStart(run: PodRun): void {
    const failing = run.containers.filter((c) => this.faults.isImagePullFailure(c.spec.image));
    if (failing.length > 0) {
      for (const c of failing) {
        c.state = {
          waiting: {
            reason: "ErrImagePull",
            message: `failed to pull and unpack image "${c.spec.image}": failed to resolve reference "${c.spec.image}": not found`,
          },
        };
      }
      this.sync(run);
      this.later(run, Math.max(50, this.opts.startDelayMs), () => {
        for (const c of failing) {
          c.state = {
            waiting: { reason: "ImagePullBackOff", message: `Back-off pulling image "${c.spec.image}"` },
          };
        }
        this.sync(run);
      });
      return;
    }
    const prior = run.hostFiles.map((f) => this.releasing.get(f)).filter((p) => p !== undefined);
    if (prior.length > 0) {
      // A gone pod of the same name is still being cleaned up: its host files are removed first.
      void Promise.all(prior).then(() => this.later(run, 0, () => this.pullAndStart(run)));
      return;
    }
    run.started = true;
    mkdirSync(join(run.dir, "fs", "tmp"), { recursive: true });
    mkdirSync(join(run.dir, "fs", "root"), { recursive: true });
    const first = run.containers.find((c) => c.init);
    if (first) this.startContainer(run, first);
    else for (const c of run.containers) this.startContainer(run, c);
  }

  /** Environment of `c`, or a CreateContainerConfigError message. */
  private resolveEnv(run: PodRun, pod: KObject, c: ContainerSpec): Record<string, string> | string {
    const fs = join(run.dir, "fs");
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOSTNAME: run.name,
      HOME: join(fs, "root"),
      TMPDIR: join(fs, "tmp"),
      TMUX_TMPDIR: join(fs, "tmp"),
      KUBERNETES_SERVICE_HOST: "127.0.0.1",
    };
    if (process.env.LANG) env.LANG = process.env.LANG;
    if (c.tty) env.TERM = "xterm";
    const lookup = (
      kind: "secrets" | "configmaps",
      name: string,
      key: string | undefined,
      optional: boolean,
    ) => {
      const obj = this.store.get(kind, run.ns, name);
      const label = kind === "secrets" ? "secret" : "configmap";
      if (!obj) return optional ? undefined : new Error(`${label} "${name}" not found`);
      const data = (obj.data ?? {}) as Record<string, string>;
      if (key === undefined) return data;
      if (!Object.hasOwn(data, key)) {
        return optional
          ? undefined
          : new Error(
              `couldn't find key ${key} in ${kind === "secrets" ? "Secret" : "ConfigMap"} ${run.ns}/${name}`,
            );
      }
      return kind === "secrets" ? Buffer.from(data[key]!, "base64").toString("utf8") : data[key]!;
    };
    for (const from of c.envFrom ?? []) {
      const ref = (from.secretRef ?? from.configMapRef) as { name: string; optional?: boolean } | undefined;
      if (!ref) continue;
      const kind = from.secretRef ? "secrets" : "configmaps";
      const data = lookup(kind, ref.name, undefined, ref.optional === true);
      if (data instanceof Error) return data.message;
      for (const [k, v] of Object.entries((data ?? {}) as Record<string, string>)) {
        env[`${(from.prefix as string | undefined) ?? ""}${k}`] =
          kind === "secrets" ? Buffer.from(v, "base64").toString("utf8") : v;
      }
    }
    for (const e of c.env ?? []) {
      if (e.valueFrom) {
        const vf = e.valueFrom as Record<
          string,
          { name: string; key: string; optional?: boolean; fieldPath?: string }
        >;
        let v: string | Error | undefined;
        if (vf.secretKeyRef)
          v = lookup(
            "secrets",
            vf.secretKeyRef.name,
            vf.secretKeyRef.key,
            vf.secretKeyRef.optional === true,
          ) as string | Error | undefined;
        else if (vf.configMapKeyRef)
          v = lookup(
            "configmaps",
            vf.configMapKeyRef.name,
            vf.configMapKeyRef.key,
            vf.configMapKeyRef.optional === true,
          ) as string | Error | undefined;
        else if (vf.fieldRef) v = fieldRef(pod, String(vf.fieldRef.fieldPath));
        if (v instanceof Error) return v.message;
        if (v !== undefined) env[e.name] = v;
      } else {
        env[e.name] = expandRefs(e.value ?? "", env);
      }
    }
    env[SERVER_MARKER] = this.opts.serverId;
    env[POD_MARKER] = run.uid;
    return env;
  }

  private startContainer(run: PodRun, c: ContainerRun): void {
    const pod = this.current(run);
    if (!pod || run.gone || run.terminating) return;
    const env = this.resolveEnv(run, pod, c.spec);
    if (typeof env === "string") {
      c.state = { waiting: { reason: "CreateContainerConfigError", message: env } };
      this.sync(run);
      this.later(run, Math.max(200, this.opts.restartBackoffMs), () => this.startContainer(run, c));
      return;
    }
    const id = randomBytes(16).toString("hex");
    env[CONTAINER_MARKER] = id;
    const cwd = join(run.dir, "fs", c.spec.workingDir ?? "/");
    mkdirSync(cwd, { recursive: true });
    const argv = [
      ...(c.spec.command ?? (c.spec.args ? [] : this.opts.defaultEntrypoint)),
      ...(c.spec.args ?? []),
    ].map((a) => expandRefs(a, env));
    if (!c.spec.command && c.spec.args && argv.length === 0) argv.push(...this.opts.defaultEntrypoint);
    c.containerId = id;
    c.env = env;
    c.cwd = cwd;
    if (c.restartCount > 0 || c.log.chunks.length > 0) {
      c.prevLog = c.log;
      c.log = new LogBuffer();
    }
    const startedAt = now();
    const choice = c.init || !this.opts.runProcesses ? true : this.opts.runProcesses(pod, c.spec.name);
    if (choice === false) {
      c.state = { running: { startedAt } };
      run.phase = "Running";
      this.sync(run);
      return;
    }
    if (choice !== true) argv.splice(0, argv.length, ...choice);
    let proc: Proc;
    try {
      proc = startProc(argv, { cwd, env, tty: c.spec.tty === true });
    } catch (e) {
      c.state = {
        terminated: {
          exitCode: 128,
          reason: "StartError",
          message: `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: ${(e as Error).message}: unknown`,
          startedAt: "1970-01-01T00:00:00Z",
          finishedAt: now(),
          containerID: `containerd://${id}`,
        },
      };
      this.afterExit(run, c, { code: 128 });
      return;
    }
    c.proc = proc;
    if (!(c.spec.stdin === true)) proc.endStdin();
    proc.on("output", (stream, data) => {
      c.log.append(data);
      for (const a of c.attachers) a(stream, data);
    });
    c.state = { running: { startedAt } };
    if (!c.init) run.phase = "Running";
    this.sync(run);
    void proc.exited.then(async (exit) => {
      c.proc = undefined;
      await killTagged(CONTAINER_MARKER, id, { signal: "SIGKILL" });
      c.log.end();
      const reason =
        exit.code === 0 ? "Completed" : exit.signal === "SIGKILL" && !run.terminating ? "OOMKilled" : "Error";
      c.state = {
        terminated: {
          exitCode: exit.code,
          reason: exit.signal === "SIGKILL" && !run.terminating ? "Error" : reason,
          startedAt,
          finishedAt: now(),
          containerID: `containerd://${id}`,
        },
      };
      if (exit.signal) (c.state.terminated as { signal?: number }).signal = exit.code - 128;
      this.afterExit(run, c, exit);
    });
  }

  private afterExit(run: PodRun, c: ContainerRun, exit: ExitInfo): void {
    if (run.gone) return;
    if (run.terminating) {
      this.sync(run);
      return;
    }
    const pod = this.current(run);
    const policy = String((pod?.spec as Json | undefined)?.restartPolicy ?? "Always");
    const restart = policy === "Always" || (policy === "OnFailure" && exit.code !== 0);
    if (c.init && exit.code === 0) {
      const next = run.containers[run.containers.indexOf(c) + 1];
      if (next?.init) this.startContainer(run, next);
      else {
        run.initialized = true;
        for (const m of run.containers) if (!m.init) this.startContainer(run, m);
      }
      this.sync(run);
      return;
    }
    if (restart) {
      const backoff = Math.min(
        this.opts.restartBackoffMs * 2 ** c.restartCount,
        this.opts.restartBackoffMs * 32,
      );
      c.lastState = c.state;
      c.restartCount++;
      c.state = {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off ${Math.ceil(backoff / 1000)}s restarting failed container=${c.spec.name} pod=${run.name}_${run.ns}(${run.uid})`,
        },
      };
      this.sync(run);
      this.later(run, backoff, () => this.startContainer(run, c));
      return;
    }
    if (c.init) {
      run.phase = "Failed";
    } else {
      const mains = run.containers.filter((m) => !m.init);
      if (mains.every((m) => "terminated" in m.state)) {
        run.phase = mains.every((m) => "terminated" in m.state && m.state.terminated.exitCode === 0)
          ? "Succeeded"
          : "Failed";
      }
    }
    this.sync(run);
  }

  /** Writes the pod's status as a kubelet would report it (only when it changed). */
  private sync(run: PodRun): void {
    const pod = this.current(run);
    if (!pod || run.gone) return;
    const status = this.renderStatus(run, pod);
    if (JSON.stringify(status) === JSON.stringify(pod.status)) return;
    this.store.put("pods", { ...pod, status });
  }

  private condition(run: PodRun, type: string, value: boolean, reason?: string, message?: string): Json {
    const status = value ? "True" : "False";
    let t = run.transitions.get(type);
    if (!t || t.status !== status) {
      t = { status, at: now() };
      run.transitions.set(type, t);
    }
    const c: Json = { type, status, lastProbeTime: null, lastTransitionTime: t.at };
    if (reason) c.reason = reason;
    if (message) c.message = message;
    return c;
  }

  private renderStatus(run: PodRun, pod: KObject): Json {
    const old = (pod.status ?? {}) as Json;
    const base: Json = { phase: run.phase, qosClass: old.qosClass ?? "BestEffort" };
    if (run.unschedulable) {
      base.conditions = [
        this.condition(
          run,
          "PodScheduled",
          false,
          "Unschedulable",
          "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
      ];
      return base;
    }
    if (!run.scheduled) return base;
    const mains = run.containers.filter((c) => !c.init);
    const inits = run.containers.filter((c) => c.init);
    const ready = (c: ContainerRun) => "running" in c.state;
    const unready = mains.filter((c) => !ready(c)).map((c) => c.spec.name);
    const done = run.phase === "Succeeded" || run.phase === "Failed";
    const uninit = inits
      .filter((c) => !("terminated" in c.state && c.state.terminated.exitCode === 0))
      .map((c) => c.spec.name);
    const sandbox = run.containers.some((c) => c.containerId !== undefined) && !done;
    base.conditions = [
      this.condition(run, "PodReadyToStartContainers", sandbox),
      run.initialized
        ? this.condition(run, "Initialized", true)
        : this.condition(
            run,
            "Initialized",
            false,
            "ContainersNotInitialized",
            `containers with incomplete status: [${uninit.join(" ")}]`,
          ),
      unready.length === 0 && !done
        ? this.condition(run, "Ready", true)
        : this.condition(
            run,
            "Ready",
            false,
            done && run.phase === "Succeeded" ? "PodCompleted" : "ContainersNotReady",
            done && run.phase === "Succeeded"
              ? undefined
              : `containers with unready status: [${unready.join(" ")}]`,
          ),
      unready.length === 0 && !done
        ? this.condition(run, "ContainersReady", true)
        : this.condition(
            run,
            "ContainersReady",
            false,
            done && run.phase === "Succeeded" ? "PodCompleted" : "ContainersNotReady",
            done && run.phase === "Succeeded"
              ? undefined
              : `containers with unready status: [${unready.join(" ")}]`,
          ),
      this.condition(run, "PodScheduled", true),
    ];
    base.hostIP = "127.0.0.1";
    base.hostIPs = [{ ip: "127.0.0.1" }];
    base.podIP = run.podIP;
    base.podIPs = [{ ip: run.podIP }];
    base.startTime = run.startTime;
    const render = (c: ContainerRun): Json => {
      const s: Json = {
        name: c.spec.name,
        image: c.spec.image,
        imageID: c.containerId ? `docker.io/library/${c.spec.image}@sha256:${"0".repeat(64)}` : "",
        ready: ready(c),
        started: ready(c),
        restartCount: c.restartCount,
        state: c.state,
        lastState: c.lastState,
      };
      if (c.containerId) s.containerID = `containerd://${c.containerId}`;
      return s;
    };
    if (inits.length > 0) base.initContainerStatuses = inits.map(render);
    base.containerStatuses = mains.map(render);
    return base;
  }

  /** Graceful deletion: SIGTERM everything, SIGKILL at the deadline, then remove the object. */
  private async terminate(run: PodRun, graceMs: number): Promise<void> {
    run.terminating = true;
    for (const t of run.timers) clearTimeout(t);
    run.timers.clear();
    for (const c of run.containers) if (!c.proc && "waiting" in c.state) c.log.end();
    await killTagged(POD_MARKER, run.uid, { graceMs });
    await Promise.all(run.containers.map((c) => c.proc?.exited));
    const pod = this.current(run);
    if (pod) this.store.remove("pods", run.ns, run.name);
    await this.destroy(run);
  }

  /** Kills whatever is left of the pod and removes its directory and host files. */
  private async destroy(run: PodRun): Promise<void> {
    if (run.gone) return;
    run.gone = true;
    for (const t of run.timers) clearTimeout(t);
    run.timers.clear();
    const done = (async () => {
      await killTagged(POD_MARKER, run.uid, { signal: "SIGKILL" });
      await Promise.all(run.containers.map((c) => c.proc?.exited));
      for (const c of run.containers) if (!c.log.ended) c.log.end();
      this.runs.delete(run.uid);
      rmSync(run.dir, { recursive: true, force: true });
      this.removeHostFiles([run]);
    })();
    const held = run.hostFiles.filter((f) => !this.releasing.has(f));
    for (const f of held)
      this.releasing.set(
        f,
        done.catch(() => undefined),
      );
    try {
      await done;
    } finally {
      for (const f of held) this.releasing.delete(f);
    }
  }

  /**
   * Removes the host files of `gone` pods (their processes are dead, so is the tmux server on
   * the socket), except those a started pod still running names too (same pod name in
   * another namespace).
   */
  private removeHostFiles(gone: readonly PodRun[]): void {
    const inUse = new Set(
      [...this.runs.values()].filter((r) => r.started && !r.gone).flatMap((r) => r.hostFiles),
    );
    for (const run of gone) {
      for (const f of run.hostFiles) if (!inUse.has(f)) rmSync(f, { force: true });
    }
  }

  private runFor(pod: KObject): PodRun | undefined {
    return this.runs.get(pod.metadata.uid!);
  }

  /** The container to use: the named one, else the default-container annotation, else the first. */
  private pickContainer(pod: KObject, run: PodRun, name: string | undefined): ContainerRun {
    const wanted =
      name ||
      pod.metadata.annotations?.["kubectl.kubernetes.io/default-container"] ||
      run.containers.find((c) => !c.init)?.spec.name;
    const c = run.containers.find((x) => x.spec.name === wanted);
    if (!c) throw badRequest(`container ${wanted} is not valid for pod ${run.name}`);
    return c;
  }

  /** The running container for exec/attach, or the 400 a real server gives. */
  runningContainer(pod: KObject, name: string | undefined): ContainerRun {
    const run = this.runFor(pod);
    if (!run || !(pod.spec as Json).nodeName)
      throw badRequest(`pod ${pod.metadata.name} does not have a host assigned`);
    const c = this.pickContainer(pod, run, name);
    if (!("running" in c.state) || !c.env || !c.cwd) {
      throw badRequest(`unable to upgrade connection: container not found ("${c.spec.name}")`);
    }
    return c;
  }

  /** Starts `argv` inside a running container (exec). Throws ApiError (400) when it cannot run. */
  exec(pod: KObject, container: string | undefined, argv: string[], tty: boolean): Proc {
    const c = this.runningContainer(pod, container);
    const env = { ...c.env! };
    if (tty) env.TERM = env.TERM ?? "xterm";
    return startProc(argv, { cwd: c.cwd!, env, tty });
  }

  /** The log buffer for `logs`, or the 400 of a container that never started. */
  logBuffer(pod: KObject, container: string | undefined, previous: boolean): LogBuffer {
    const run = this.runFor(pod);
    if (!run)
      throw badRequest(
        `container "${container ?? ""}" in pod "${pod.metadata.name}" is waiting to start: ContainerCreating`,
      );
    const c = this.pickContainer(pod, run, container);
    if (previous) {
      if (!c.prevLog) {
        throw badRequest(`previous terminated container "${c.spec.name}" in pod "${run.name}" not found`);
      }
      return c.prevLog;
    }
    if (!c.containerId) {
      const reason = "waiting" in c.state ? c.state.waiting.reason : "ContainerCreating";
      throw badRequest(`container "${c.spec.name}" in pod "${run.name}" is waiting to start: ${reason}`);
    }
    return c.log;
  }

  /** Main process of a running container for attach. */
  attachTarget(pod: KObject, container: string | undefined): ContainerRun & { proc: Proc } {
    const c = this.runningContainer(pod, container);
    if (!c.proc) throw badRequest(`unable to upgrade connection: container not found ("${c.spec.name}")`);
    return c as ContainerRun & { proc: Proc };
  }

  /** Kills every process this node started and forgets every pod (pods stay in the store). */
  async stop(): Promise<void> {
    this.unsubscribe();
    const runs = [...this.runs.values()];
    for (const run of runs) {
      run.gone = true;
      for (const t of run.timers) clearTimeout(t);
      run.timers.clear();
    }
    // one sweep for every process of this server (two /proc scans in all, not two per pod)
    await killTagged(SERVER_MARKER, this.opts.serverId, { signal: "SIGKILL" });
    await Promise.all(runs.flatMap((r) => r.containers.map((c) => c.proc?.exited)));
    for (const run of runs) {
      for (const c of run.containers) if (!c.log.ended) c.log.end();
      this.runs.delete(run.uid);
      rmSync(run.dir, { recursive: true, force: true });
    }
    this.removeHostFiles(runs.filter((r) => r.started));
    // A destroy still in flight (its pod deleted just before) removes its own files.
    await Promise.all(this.releasing.values());
  }

  /** Kills every pod's processes (a state-dropping restart). */
  async dropAll(): Promise<void> {
    await this.stop();
    this.unsubscribe = this.store.subscribe((e) => this.onEvent(e));
  }
}

function fieldRef(pod: KObject, path: string): string | undefined {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return pod.metadata[m[1] as "labels" | "annotations"]?.[m[2]!];
  const spec = pod.spec as Json;
  const status = (pod.status ?? {}) as Json;
  const table: Record<string, unknown> = {
    "metadata.name": pod.metadata.name,
    "metadata.namespace": pod.metadata.namespace,
    "metadata.uid": pod.metadata.uid,
    "spec.nodeName": spec.nodeName,
    "spec.serviceAccountName": spec.serviceAccountName,
    "status.podIP": status.podIP,
    "status.hostIP": "127.0.0.1",
  };
  const v = table[path];
  return v === undefined ? undefined : String(v);
}

export type { ApiError };
