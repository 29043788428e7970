/**
 * Starting a session in a new pod through the shared start lifecycle (lifecycle/start.ts):
 * the plan with the pod's paths and the image's environment, and the lifecycle's view of one
 * pod being started — files packed before the pod exists, then Secret and pod, `pre_start`
 * in the pod, the files unpacked, the tmux session created, readiness, typing — each step
 * run in the pod. A failed step reports an ended pod's own story and deletes what it made.
 */
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  isGcError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
} from "../../base/errors.js";
import { hookDirOf } from "../launch.js";
import {
  DEFAULT_STARTUP_TIMEOUT_MS,
  limitsFor,
  planStart,
  runHookCommands,
  runStart,
  type StartBackend,
  type StartLimits,
  type StartPlan,
} from "../lifecycle/index.js";
import { outputTail } from "../pane-text.js";
import type { StartConfig, StartReport } from "../provider.js";
import type { NudgeQueue } from "../tmux/pane.js";
import type { K8sCity } from "./city.js";
import { type Packed, packStage, podCommand, readScreen, runInPod, typeInto, unpack } from "./pod-exec.js";
import type { CityPods } from "./pods.js";
import { IN_DIR } from "./scripts.js";
import {
  IMAGE_CHECK,
  IMAGE_CHECK_EXIT,
  type PodView,
  podState,
  podWorkDir,
  TMUX_SESSION,
  tmuxSocket,
} from "./spec.js";

/** How long a start step's failed exec waits for the pod's status to say the pod ended. */
const ENDED_GRACE_MS = 3_000;
const POLL_MS = 100;
/** How long a new pod's tmux server may take to listen. */
const SERVER_WAIT_MS = 20_000;

/** The starts of one city's sessions. */
export class PodStarts {
  private readonly city: K8sCity;
  private readonly pods: CityPods;
  /** The provider's nudge queue: the start's nudge takes its turn with the others. */
  private readonly nudges: NudgeQueue;

  constructor(city: K8sCity, pods: CityPods, nudges: NudgeQueue) {
    this.city = city;
    this.pods = pods;
    this.nudges = nudges;
  }

  /** Starts `name` (see K8sProvider.start), after deleting an ended pod of this name. */
  async start(name: string, cfg: StartConfig, signal: AbortSignal | undefined): Promise<StartReport> {
    await this.city.lease.claim(signal);
    const existing = await this.pods.getPod(name, signal);
    if (existing) {
      const st = podState(existing as PodView);
      if (st.kind === "running" || st.kind === "pending") throw new SessionExistsError(name);
      await this.pods.deletePod(name, existing.metadata?.uid, signal); // ended: its exit status has had its day
    }
    const { plan, limits, localHookDir } = this.planFor(name, cfg);
    return runStart(this.startBackend(plan, limits, localHookDir), plan, limits, signal);
  }

  /**
   * The start plan of `name` with the pod's paths (work and hook dir under `work_root`), the
   * image's environment as the base (never this host's), and the limits: `startup_timeout`
   * defaults to `start_timeout` (scheduling, image pull) plus the usual start deadline.
   */
  planFor(name: string, cfg: StartConfig): { plan: StartPlan; limits: StartLimits; localHookDir: string } {
    const localHookDir = resolve(this.city.cityDir, hookDirOf(cfg));
    const config: StartConfig = {
      ...cfg,
      workDir: podWorkDir(this.city.settings.workRoot, this.city.cityDir, cfg.workDir),
      hookDir: podWorkDir(this.city.settings.workRoot, this.city.cityDir, hookDirOf(cfg)),
    };
    const plan = planStart(name, this.city.owner, config, { baseEnv: {}, sourceDir: this.city.cityDir });
    const limits = limitsFor(config, {
      startupTimeoutMs: this.city.settings.startTimeoutMs + DEFAULT_STARTUP_TIMEOUT_MS,
      setupTimeoutMs: this.city.settings.hookTimeoutMs,
      readyTimeoutMs: this.city.settings.readyTimeoutMs,
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
      runCommand: (argv, o) => podCommand(this.city, need(), plan.hookDir, localHookDir, argv, o),
      stage: async (p, signal) => {
        packed = await packStage(p, signal);
      },
      create: async (p, signal) => {
        made = await this.pods.createPod(p, signal);
        try {
          await runHookCommands(backend, "pre_start", p.config.preStart, {
            cwd: p.hookDir,
            env: { ...p.env, ...backend.hookEnv },
            timeoutMs: limits.setupTimeoutMs,
            signal,
          });
          for (const item of packed) await unpack(this.city, made.pod, p.workDir, item, signal);
          signal.throwIfAborted();
          await this.newSession(made.pod, p, signal);
        } catch (e) {
          // The container may have ended under the steps (the boot script failed after it
          // ran): then its end and log lines are the story, not the step's exec error. The
          // step can fail a moment before the pod's status says so: waited for, bounded.
          const wait = isGcError(e, "GC_PROVIDER") ? ENDED_GRACE_MS : 0;
          const st = signal.aborted ? undefined : await this.pods.endsWithin(made.pod, made.uid, wait);
          const report = st ? await this.pods.endedEarly(p.name, made.pod, st) : undefined;
          await this.pods.deletePod(p.name, made.uid).catch(() => undefined);
          made = undefined;
          throw report ? Object.assign(report, { cause: e }) : e;
        }
      },
      alive: (signal) => this.pods.alive(need(), signal),
      died: () => this.died(plan.name, need()),
      screen: (signal) => this.city.channel(need()).screen(signal),
      sendKeys: (keys, signal) => this.city.channel(need()).sendKeys(keys, signal),
      nudge: (text, signal) =>
        this.nudges.run(plan.name, () =>
          typeInto(this.city, plan.name, need(), text, signal, plan.config.multiline),
        ),
      destroy: async () => {
        if (made) await this.pods.deletePod(plan.name, made.uid);
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
      String(this.city.settings.cols),
      "-y",
      String(this.city.settings.rows),
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
      const r = await runInPod(this.city, pod, argv, { signal });
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
    const st = await readScreen(this.city, pod).catch(() => undefined);
    const tail = outputTail((st?.rows ?? []).join("\n"));
    const how = st?.exitStatus !== undefined ? `exit status ${st.exitStatus}` : "the session is gone";
    return new SessionDiedDuringStartupError(name, `${how}${tail ? `; last output: ${tail}` : ""}`);
  }
}
