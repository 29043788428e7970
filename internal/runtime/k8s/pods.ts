/**
 * The city's pods and Secrets on the API server: reading a session's pod (ours only),
 * creating a session's Secret and pod and waiting until it runs, reporting a pod that ended
 * early (its end and last log lines), deleting one session's or the whole fleet's objects and
 * waiting until the city's pod watch sees them gone, and whether a pod's session is alive.
 * Every wait follows the city's one pod watch (watch.ts): no request per unit of time.
 */
import { randomUUID } from "node:crypto";
import type * as K8s from "@kubernetes/client-node";
import {
  OperationTimeoutError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
  SessionInitializingError,
  SessionNotFoundError,
} from "../../base/errors.js";
import type { StartPlan } from "../lifecycle/index.js";
import { apiFailure, httpStatus } from "./api.js";
import type { K8sCity } from "./city.js";
import { ANNOTATIONS, selector } from "./names.js";
import { ensureCityObject } from "./owner.js";
import {
  buildPod,
  buildSecret,
  CONTAINER,
  cityLabels,
  type PodState,
  type PodView,
  podState,
  sessionOf,
} from "./spec.js";
import { type CachedPod, rvAtLeast } from "./watch.js";

/** Seconds a booted pod waits for gc to create its tmux session before giving up. */
const BOOT_GRACE_S = 300;
/** Annotation holding the pod's work dir. */
export const WORK_DIR_ANNOTATION = "gc.dev/work-dir";
/** Annotation holding the session's ready prompt prefix (idle detection). */
export const PREFIX_ANNOTATION = "gc.dev/ready-prefix";

/** The city's pods and Secrets (see the module's doc). */
export class CityPods {
  private readonly city: K8sCity;

  constructor(city: K8sCity) {
    this.city = city;
  }

  /** The pod of `name` when it exists and is ours, else `undefined`. */
  async getPod(name: string, signal?: AbortSignal): Promise<K8s.V1Pod | undefined> {
    const api = await this.city.api();
    const pod = this.city.identity(name).pod;
    try {
      const p = await api.call((c) => c.readNamespacedPod({ name: pod, namespace: this.city.ns }), signal);
      return sessionOf(p as PodView, this.city.owner) === name ? p : undefined;
    } catch (e) {
      if (httpStatus(e) === 404) return undefined;
      throw this.apiError(`reading pod ${pod}`, e);
    }
  }

  /**
   * {@link getPod} for observations: the city's pod watch's copy while it is live (no
   * request), else one read.
   */
  async seenPod(name: string, signal?: AbortSignal): Promise<K8s.V1Pod | undefined> {
    const c = this.city.watch.cached(this.city.identity(name).pod);
    if (c === undefined) return this.getPod(name, signal);
    return c && sessionOf(c as PodView, this.city.owner) === name ? c : undefined;
  }

  /** A failed API call as a ProviderError, with its fault (infrastructure, configuration) when known. */
  private apiError(what: string, e: unknown): ProviderError {
    return apiFailure(what, e);
  }

  /**
   * The running pod of `name`.
   * @throws SessionNotFoundError when missing or ended; SessionInitializingError while it boots.
   */
  async runningPod(name: string, signal?: AbortSignal): Promise<K8s.V1Pod> {
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
  async deletePod(name: string, uid: string | undefined, signal?: AbortSignal): Promise<void> {
    const api = await this.city.api();
    const { pod } = this.city.identity(name);
    await this.city.channels.drop(pod);
    let after: string | undefined;
    try {
      const answer = await api.call(
        (c) =>
          c.deleteNamespacedPod({
            name: pod,
            namespace: this.city.ns,
            gracePeriodSeconds: this.city.settings.gracePeriodSeconds,
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
    await this.city.watch.until(
      (pods) => {
        const p = pods.get(pod);
        const gone =
          !p ||
          (uid !== undefined && p.metadata?.uid !== uid) ||
          sessionOf(p as PodView, this.city.owner) !== name;
        return gone ? true : undefined;
      },
      { after, signal },
    );
  }

  async deleteSecret(name: string, signal?: AbortSignal): Promise<void> {
    const api = await this.city.api();
    const { pod } = this.city.identity(name);
    try {
      const sec = await api.call(
        (c) => c.readNamespacedSecret({ name: pod, namespace: this.city.ns }),
        signal,
      );
      if (sessionOf(sec as PodView, this.city.owner) !== name) return;
      await api.call((c) => c.deleteNamespacedSecret({ name: pod, namespace: this.city.ns }), signal);
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
  async createPod(plan: StartPlan, signal: AbortSignal): Promise<{ pod: string; uid: string }> {
    const { name, workDir, env } = plan;
    const api = await this.city.api();
    const id = this.city.identity(name);
    const image = this.city.settings.image;
    if (!image) throw new ProviderError("k8s", "session.k8s.image is required to start a session");
    // A channel left from an earlier pod of this name (deleted behind gc's back) must not
    // serve the new one: its reconnects would race the new pod's boot.
    await this.city.channels.drop(id.pod);
    const startId = randomUUID();
    // Every pod and Secret is owned by the city object: deleting it removes the fleet.
    const ownerRef = await ensureCityObject(api, this.city.ns, this.city.owner, signal);
    const manifest = buildPod({
      id,
      settings: this.city.settings,
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
    const secret = buildSecret(id, this.city.ns, env, ownerRef);
    if (secret) {
      try {
        await api.call(
          (c) => c.createNamespacedSecret({ namespace: this.city.ns, body: secret as K8s.V1Secret }),
          signal,
        );
      } catch (e) {
        if (httpStatus(e) !== 409) throw this.apiError(`creating secret ${id.pod}`, e);
        // Left by a start that died: replace its values.
        await api.call(
          (c) =>
            c.replaceNamespacedSecret({
              name: id.pod,
              namespace: this.city.ns,
              body: secret as K8s.V1Secret,
            }),
          signal,
        );
      }
    }
    let created: K8s.V1Pod;
    try {
      created = await api.call(
        (c) => c.createNamespacedPod({ namespace: this.city.ns, body: manifest as unknown as K8s.V1Pod }),
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
    const { pod } = this.city.identity(name);
    let reason = "Pending";
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.city.settings.startTimeoutMs);
    try {
      // Every change of the pod comes from the city's watch: no request per unit of time.
      const st = await this.city.watch.until(
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
          this.city.settings.startTimeoutMs,
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
  async endsWithin(
    pod: string,
    uid: string,
    ms: number,
  ): Promise<Extract<PodState, { kind: "ended" }> | undefined> {
    try {
      const st = await this.city.watch.until(
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
  async endedEarly(
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
    const api = await this.city.api();
    const text = await api
      .call(
        (c) =>
          c.readNamespacedPodLog({ name: pod, namespace: this.city.ns, container: CONTAINER, tailLines: 20 }),
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

  /** True when pod `pod` is gone, ended or being deleted. @throws ProviderError when unreadable. */
  async podEnded(pod: string, signal?: AbortSignal): Promise<boolean> {
    const api = await this.city.api();
    try {
      const p = await api.call((c) => c.readNamespacedPod({ name: pod, namespace: this.city.ns }), signal);
      const kind = podState(p as PodView).kind;
      return kind !== "running" && kind !== "pending";
    } catch (e) {
      if (httpStatus(e) === 404) return true;
      throw this.apiError(`reading pod ${pod}`, e);
    }
  }

  /** Liveness: the pane exists and its program has not exited. */
  async alive(pod: string, signal?: AbortSignal): Promise<boolean> {
    try {
      const st = await this.city.channel(pod).read(signal);
      return st !== undefined && !st.dead;
    } catch (e) {
      // The API server refuses an exec into a pod whose container has ended (HTTP 400): a
      // program that exited at once ends its pod, and that is "not alive", not an API error.
      if (signal?.aborted || !(await this.podEnded(pod, signal))) throw e;
      return false;
    }
  }

  /** This city's pods: the watch's cache, or one labelled LIST while the watch re-connects. */
  async list(signal: AbortSignal | undefined): Promise<readonly CachedPod[]> {
    const api = await this.city.api();
    const cached = await this.city.watch.current();
    if (cached) return cached;
    try {
      return (
        await api.call(
          (c) =>
            c.listNamespacedPod({
              namespace: this.city.ns,
              labelSelector: selector(cityLabels(this.city.owner)),
            }),
          signal,
        )
      ).items;
    } catch (e) {
      throw this.apiError("listing pods", e);
    }
  }

  /**
   * Deletes every pod and Secret of this city (by label, each checked for ownership), then
   * waits until the city's pod watch sees the pods gone. The caller holds the Lease.
   */
  async deleteAll(signal: AbortSignal | undefined): Promise<void> {
    const api = await this.city.api();
    const labelSelector = selector(cityLabels(this.city.owner));
    const listPods = async () =>
      (
        await api.call((c) => c.listNamespacedPod({ namespace: this.city.ns, labelSelector }), signal)
      ).items.filter((p) => sessionOf(p as PodView, this.city.owner) !== undefined);
    const pods = await listPods();
    let after: string | undefined;
    await eachLimited(pods, 16, async (p) => {
      try {
        const answer = await api.call(
          (c) =>
            c.deleteNamespacedPod({
              name: p.metadata!.name!,
              namespace: this.city.ns,
              gracePeriodSeconds: this.city.settings.gracePeriodSeconds,
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
      (c) => c.listNamespacedSecret({ namespace: this.city.ns, labelSelector }),
      signal,
    );
    await eachLimited(
      secrets.items.filter((x) => sessionOf(x as PodView, this.city.owner) !== undefined),
      16,
      async (x) => {
        try {
          await api.call(
            (c) => c.deleteNamespacedSecret({ name: x.metadata!.name!, namespace: this.city.ns }),
            signal,
          );
        } catch (e) {
          if (httpStatus(e) !== 404) throw this.apiError(`deleting secret ${x.metadata?.name}`, e);
        }
      },
    );
    // Gone as the city's pod watch sees it, once caught up with the last delete.
    await this.city.watch.until(
      (all) =>
        [...all.values()].some((p) => sessionOf(p as PodView, this.city.owner) !== undefined)
          ? undefined
          : true,
      { after, signal },
    );
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

/** `Pending`, with the scheduler's or kubelet's reason when there is one beyond the phase. */
function pendingText(reason: string): string {
  return reason === "Pending" ? "Pending" : `Pending (${reason})`;
}
