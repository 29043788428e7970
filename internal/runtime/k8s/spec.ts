/**
 * What the k8s provider asks the API server for, and how it reads the answers: the pod and
 * Secret of a session, the pod's boot script (a foreground tmux server that ends the pod
 * when the session's program exits, with its exit code), where work dirs live in the pod,
 * and the classification of a pod's status. Pure.
 */
import { isAbsolute, posix, relative } from "node:path";
import { isSecretKey } from "../secrets.js";
import { ANNOTATIONS, LABELS, labelValue, MANAGED_BY, secretDataKey } from "./names.js";
import type { K8sSettings } from "./settings.js";

/** The one container of a session pod. */
export const CONTAINER = "agent";
/** The tmux session inside every pod. */
export const TMUX_SESSION = "main";
/** tmux target of the session's pane. */
export const TMUX_TARGET = `${TMUX_SESSION}:`;

/**
 * tmux socket of a pod. Per pod (not a fixed path) so pods sharing a filesystem, as the
 * loopback test server's do, never share a tmux server.
 */
export function tmuxSocket(pod: string): string {
  return `/tmp/gc-tmux-${pod}`;
}

/** Exit code of a pod whose image lacks a tool gc needs ({@link IMAGE_CHECK}). */
export const IMAGE_CHECK_EXIT = 124;

/**
 * The image check the boot script runs first: every tool gc runs in the pod is on `PATH`, and
 * tmux is at least 3.2 (`-D`, `new-session -N`); otherwise it prints one line naming every
 * missing one (`gc: the image lacks: tmux ≥ 3.2 (it has 3.0a), tar`) to the container log and
 * exits {@link IMAGE_CHECK_EXIT}, which the start reports with the log line. `sh` itself is
 * the script's interpreter: without it the container cannot start (the kubelet's StartError).
 */
export const IMAGE_CHECK = [
  "gc_m=",
  'for t in tmux tar env mktemp mv cat mkdir sleep; do command -v "$t" >/dev/null 2>&1 || gc_m="$gc_m, $t"; done',
  "if command -v tmux >/dev/null 2>&1; then",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: POSIX sh parameter expansion
  '  v=$(tmux -V 2>/dev/null); v=${v#tmux }; d=${v#"${v%%[0-9]*}"}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: POSIX sh parameter expansion
  "  maj=${d%%.*}; min=${d#*.}; min=${min%%[!0-9]*}",
  '  case "$maj$min" in',
  "    ''|*[!0-9]*) ;;",
  '    *) if [ "$maj" -lt 3 ] || { [ "$maj" -eq 3 ] && [ "$min" -lt 2 ]; }; then gc_m="$gc_m, tmux ≥ 3.2 (it has $v)"; fi;;',
  "  esac",
  "fi",
  `[ -z "$gc_m" ] || { echo "gc: the image lacks: \${gc_m#, }" >&2; exit ${IMAGE_CHECK_EXIT}; }`,
].join("\n");

/**
 * The pod's entrypoint (run by `/bin/sh -c`, reading only its environment): creates the work
 * dir, runs a tmux server in the foreground (so it belongs to the container's process tree),
 * waits for gc to create the session (else exits 125 after `GC_BOOT_GRACE` seconds), then
 * watches the session's pane; when the program exits the pane stays (remain-on-exit) so its
 * exit status can be read, the server is killed and the container exits with that status
 * (128 + n for a program killed by signal n; 137 when the status cannot be read at all).
 * On SIGTERM (a graceful pod deletion; the script is the container's PID 1, which has no
 * default handler) it kills the tmux server, so the program gets SIGHUP, and exits 143.
 *
 * tmux marks a pane dead when its pty reaches EOF, which can happen before the server has
 * reaped the program: `pane_dead` is then 1 while `pane_dead_status` and `pane_dead_signal`
 * are still empty. Under load the foreground server (tmux 3.3a, `-D`) was seen to miss the
 * SIGCHLD altogether, leaving the program a zombie and the status empty for good — the pod
 * then reported 137 instead of the program's code. So while the pane is dead without a
 * status the watch sends the server SIGCHLD (its handler only reaps children) and reads
 * again, for up to ~10 s; one query reads all three fields, so they always agree.
 */
export const BOOT_SCRIPT = [
  IMAGE_CHECK,
  'S="$GC_TMUX_SOCKET"',
  'mkdir -p "$GC_WORK_DIR" || exit 126',
  'printf "set -g remain-on-exit on\\nset -g history-limit 50000\\n" > "$S.conf" || exit 126',
  'rm -f "$S"; tmux -S "$S" -f "$S.conf" -D & srv=$!',
  `trap 'tmux -S "$S" kill-server 2>/dev/null; wait "$srv"; rm -f "$S.conf" "$S"; exit 143' TERM`,
  "i=0",
  `until tmux -S "$S" has-session -t ${TMUX_SESSION} 2>/dev/null; do`,
  '  i=$((i+1)); if [ "$i" -gt $((${GC_BOOT_GRACE:-300}*5)) ] || ! kill -0 "$srv" 2>/dev/null; then kill "$srv" 2>/dev/null; exit 125; fi',
  "  sleep 0.2",
  "done",
  "i=0",
  "while :; do",
  `  st=$(tmux -S "$S" display-message -p -t ${TMUX_TARGET} '#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}' 2>/dev/null) || { st=; break; }`,
  '  case "$st" in',
  "    0\\|*) sleep 0.5;;",
  '    1\\|\\|) i=$((i+1)); [ "$i" -gt 100 ] && break; kill -CHLD "$srv" 2>/dev/null; sleep 0.1;;',
  "    *) break;;",
  "  esac",
  "done",
  "rest=${st#*|}; code=${rest%%|*}; sig=${rest#*|}",
  'if [ -z "$code" ]; then',
  '  case "$sig" in',
  "    [1-9]|[1-9][0-9]) code=$((128+sig));; HUP) code=129;; INT) code=130;; QUIT) code=131;; ABRT) code=134;;",
  "    KILL) code=137;; SEGV) code=139;; PIPE) code=141;; ALRM) code=142;; TERM) code=143;;",
  "  esac",
  "fi",
  'tmux -S "$S" kill-server 2>/dev/null; wait "$srv"',
  'rm -f "$S.conf" "$S"',
  'case "$code" in ""|*[!0-9]*) exit 137;; *) exit "$code";; esac',
].join("\n");

/**
 * The work dir in the pod for a local work dir: `<work_root>/<path relative to the city>`,
 * or `<work_root>/<base name>` when it lies outside the city. Pure.
 */
export function podWorkDir(workRoot: string, cityDir: string, workDir: string): string {
  const abs = isAbsolute(workDir) ? workDir : posix.join(cityDir, workDir);
  const rel = relative(cityDir, abs);
  const inside = rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  const tail = inside ? rel : posix.basename(abs);
  return tail ? posix.join(workRoot, tail) : workRoot;
}

/**
 * The pod's writable places, as `emptyDir` volumes, so a non-root user and a read-only root
 * filesystem work: `/tmp` (the tmux socket and its conf, {@link tmuxSocket}) and `work_root`
 * (the work dirs), unless `work_root` is `/` or already under `/tmp`. Pure.
 */
export function podVolumes(workRoot: string): { name: string; mountPath: string }[] {
  const out = [{ name: "gc-tmp", mountPath: "/tmp" }];
  if (workRoot !== "/" && workRoot !== "/tmp" && !workRoot.startsWith("/tmp/")) {
    out.push({ name: "gc-work", mountPath: workRoot });
  }
  return out;
}

/** Everything that identifies one session's objects. */
export interface SessionIdentity {
  /** Ownership value (the city's identity). */
  readonly owner: string;
  /** gc session name. */
  readonly name: string;
  /** Pod and Secret name. */
  readonly pod: string;
}

/** Labels of every object of `id` (ownership, session, managed-by). */
export function sessionLabels(id: Pick<SessionIdentity, "owner" | "name">): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.city]: labelValue(id.owner),
    [LABELS.session]: labelValue(id.name),
  };
}

/** Label selector for every object of the city `owner`. */
export function cityLabels(owner: string): Record<string, string> {
  return { [LABELS.managedBy]: MANAGED_BY, [LABELS.city]: labelValue(owner) };
}

/** Environment split into plain values and secret ones (by the store's secret-key rule). */
export interface SplitEnv {
  readonly plain: Readonly<Record<string, string>>;
  readonly secret: Readonly<Record<string, string>>;
}

/** Splits `env` by {@link isSecretKey}. Pure. */
export function splitEnv(env: Readonly<Record<string, string>>): SplitEnv {
  const plain: Record<string, string> = {};
  const secret: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) (isSecretKey(k) ? secret : plain)[k] = v;
  return { plain, secret };
}

/** Inputs of {@link buildPod}. */
export interface PodInputs {
  readonly id: SessionIdentity;
  readonly settings: K8sSettings;
  readonly image: string;
  /** The work dir in the pod. */
  readonly workDir: string;
  /** Session env (declared env plus GC_* identity). Secret keys become secretKeyRefs. */
  readonly env: Readonly<Record<string, string>>;
  /** Random token of this start. */
  readonly startId: string;
  /** Seconds the boot script waits for gc to create the tmux session. */
  readonly bootGraceSeconds: number;
  /** The city object owning the pod (owner.ts); none for a bare pod. */
  readonly ownerRef?: OwnerReference | undefined;
}

/** A `metadata.ownerReferences` entry (structural, keeps this module pure). */
export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** A plain-object V1Pod (the client's type is structural; this keeps the module pure). */
export type PodManifest = {
  apiVersion: "v1";
  kind: "Pod";
  metadata: {
    name: string;
    /** Absent when the namespace comes from the kubeconfig context (the request's path says it). */
    namespace?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences?: OwnerReference[];
  };
  spec: Record<string, unknown>;
};

/**
 * The pod of one session: one container running {@link BOOT_SCRIPT}, labels for ownership
 * and identity, the exact names in annotations, env with every secret value referenced from
 * the session's Secret (`secretKeyRef`), never inlined. `restartPolicy: Never`: a program
 * that ended is reported, and the reconciler decides what happens next.
 */
export function buildPod(p: PodInputs): PodManifest {
  const { plain, secret } = splitEnv(p.env);
  const env: Record<string, unknown>[] = Object.keys(plain)
    .sort()
    .map((k) => ({ name: k, value: plain[k] }));
  for (const k of Object.keys(secret).sort()) {
    env.push({ name: k, valueFrom: { secretKeyRef: { name: p.id.pod, key: secretDataKey(k) } } });
  }
  env.push(
    { name: "GC_TMUX_SOCKET", value: tmuxSocket(p.id.pod) },
    { name: "GC_WORK_DIR", value: p.workDir },
    { name: "GC_BOOT_GRACE", value: String(p.bootGraceSeconds) },
  );
  const s = p.settings;
  const sec = s.security;
  const volumes = podVolumes(s.workRoot);
  const container: Record<string, unknown> = {
    name: CONTAINER,
    image: p.image,
    command: ["/bin/sh", "-c", BOOT_SCRIPT],
    env,
    ...(s.imagePullPolicy ? { imagePullPolicy: s.imagePullPolicy } : {}),
    ...(s.resources.requests || s.resources.limits ? { resources: { ...s.resources } } : {}),
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      ...(sec.readOnlyRootFilesystem ? { readOnlyRootFilesystem: true } : {}),
    },
    volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: v.mountPath })),
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: p.id.pod,
      ...(s.namespace ? { namespace: s.namespace } : {}),
      labels: sessionLabels(p.id),
      annotations: {
        [ANNOTATIONS.session]: p.id.name,
        [ANNOTATIONS.city]: p.id.owner,
        [ANNOTATIONS.startId]: p.startId,
        "kubectl.kubernetes.io/default-container": CONTAINER,
      },
      ...(p.ownerRef ? { ownerReferences: [{ ...p.ownerRef }] } : {}),
    },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: s.gracePeriodSeconds,
      securityContext: {
        runAsNonRoot: sec.runAsNonRoot,
        ...(sec.runAsUser !== undefined ? { runAsUser: sec.runAsUser } : {}),
        ...(sec.runAsGroup !== undefined ? { runAsGroup: sec.runAsGroup } : {}),
        ...(sec.fsGroup !== undefined ? { fsGroup: sec.fsGroup } : {}),
        seccompProfile: { type: "RuntimeDefault" },
      },
      volumes: volumes.map((v) => ({ name: v.name, emptyDir: {} })),
      containers: [container],
      ...(s.serviceAccount ? { serviceAccountName: s.serviceAccount } : {}),
      ...(Object.keys(s.nodeSelector).length ? { nodeSelector: { ...s.nodeSelector } } : {}),
    },
  };
}

/** The Secret holding a session's secret env values, or `undefined` when it has none. */
export function buildSecret(
  id: SessionIdentity,
  namespace: string,
  env: Readonly<Record<string, string>>,
  ownerRef?: OwnerReference,
): Record<string, unknown> | undefined {
  const { secret } = splitEnv(env);
  const keys = Object.keys(secret);
  if (keys.length === 0) return undefined;
  const stringData: Record<string, string> = {};
  for (const k of keys) stringData[secretDataKey(k)] = secret[k]!;
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name: id.pod,
      namespace,
      labels: sessionLabels(id),
      annotations: { [ANNOTATIONS.session]: id.name, [ANNOTATIONS.city]: id.owner },
      ...(ownerRef ? { ownerReferences: [{ ...ownerRef }] } : {}),
    },
    stringData,
  };
}

/** The parts of a pod's status the provider reads (structural subset of V1Pod). */
export interface PodView {
  readonly metadata?:
    | {
        readonly name?: string | undefined;
        readonly uid?: string | undefined;
        readonly labels?: Readonly<Record<string, string>> | undefined;
        readonly annotations?: Readonly<Record<string, string>> | undefined;
        readonly deletionTimestamp?: Date | string | undefined;
        readonly creationTimestamp?: Date | string | undefined;
      }
    | undefined;
  readonly status?:
    | {
        readonly phase?: string | undefined;
        readonly reason?: string | undefined;
        readonly message?: string | undefined;
        readonly conditions?:
          | readonly { type?: string; status?: string; reason?: string; message?: string }[]
          | undefined;
        readonly containerStatuses?:
          | readonly {
              name?: string;
              state?: {
                waiting?: { reason?: string; message?: string };
                running?: { startedAt?: Date | string };
                terminated?: {
                  exitCode?: number;
                  signal?: number;
                  reason?: string;
                  finishedAt?: Date | string;
                  message?: string;
                };
              };
            }[]
          | undefined;
      }
    | undefined;
}

/** Where a pod is in its life, as the provider sees it. */
export type PodState =
  | { readonly kind: "pending"; readonly reason: string }
  | { readonly kind: "running" }
  | { readonly kind: "terminating" }
  | {
      readonly kind: "ended";
      readonly exitCode: number | null;
      readonly signal: number | null;
      readonly at: Date | undefined;
      readonly reason: string;
      /** The container runtime's message (a StartError says what could not be run). */
      readonly message?: string | undefined;
    };

/**
 * Classifies a pod. `pending` carries the most telling reason: the container's waiting
 * reason (`ContainerCreating`, `ImagePullBackOff`, `CrashLoopBackOff`…) with its message,
 * else an unschedulable condition (`Unschedulable: …`), else the phase. Pure.
 */
export function podState(pod: PodView): PodState {
  if (pod.metadata?.deletionTimestamp) return { kind: "terminating" };
  const st = pod.status ?? {};
  const cs = st.containerStatuses?.find((c) => c.name === CONTAINER) ?? st.containerStatuses?.[0];
  const term = cs?.state?.terminated;
  if (st.phase === "Succeeded" || st.phase === "Failed" || term) {
    const at = term?.finishedAt === undefined ? undefined : new Date(term.finishedAt);
    return {
      kind: "ended",
      exitCode: term?.exitCode ?? null,
      signal: term?.signal ?? null,
      at,
      reason: term?.reason ?? st.reason ?? st.phase ?? "ended",
      message: term?.message ?? undefined,
    };
  }
  if (st.phase === "Running" && cs?.state?.running) return { kind: "running" };
  const waiting = cs?.state?.waiting;
  if (waiting?.reason) {
    return {
      kind: "pending",
      reason: waiting.message ? `${waiting.reason}: ${waiting.message}` : waiting.reason,
    };
  }
  const sched = st.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
  if (sched) {
    const why = sched.reason ?? "Unschedulable";
    return { kind: "pending", reason: sched.message ? `${why}: ${sched.message}` : why };
  }
  if (st.phase === "Running") return { kind: "running" };
  return { kind: "pending", reason: st.reason ?? st.phase ?? "Pending" };
}

/** The session name a pod of this city carries, or `undefined` when it is not ours. */
export function sessionOf(pod: PodView, owner: string): string | undefined {
  const a = pod.metadata?.annotations ?? {};
  const l = pod.metadata?.labels ?? {};
  if (l[LABELS.managedBy] !== MANAGED_BY || l[LABELS.city] !== labelValue(owner)) return undefined;
  if (a[ANNOTATIONS.city] !== owner) return undefined;
  const name = a[ANNOTATIONS.session];
  if (!name || l[LABELS.session] !== labelValue(name)) return undefined;
  return name;
}
