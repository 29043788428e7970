/**
 * Conformance target for the k8s provider. With `GC_TEST_KUBECONFIG` set it runs against
 * that real cluster (namespace `GC_TEST_K8S_NAMESPACE`, default `default`; image
 * `GC_TEST_K8S_IMAGE`, which needs sh, tmux ≥ 3.2 and tar). Otherwise it starts the in-repo
 * loopback API server (a dev tool under test/k8s/) whose pods run as local processes, so
 * process checks are local too, in a namespace enforcing PodSecurity `restricted`. Files are read back through exec in the pod either way.
 * `cleanup` deletes every pod and Secret of the run's city and stops the loopback server.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProviderError } from "../../internal/base/errors.js";
import { pidAlive } from "../../internal/proc/kill.js";
import { buildPod, connect, K8sProvider, podName } from "../../internal/runtime/k8s/index.js";
import { LABELS, labelValue } from "../../internal/runtime/k8s/names.js";
import type { ConformanceTarget } from "../harness.js";

/** What this target uses of the loopback server (test/k8s/apiserver). */
export interface LoopbackServer {
  readonly url: string;
  readonly kubeconfigPath: string;
  readonly kubectlEnv: { readonly KUBECONFIG: string; readonly KUBECACHEDIR: string };
  stop(): Promise<void>;
}

/** Starts the loopback API server (built beside gc under dist/test/k8s/apiserver). */
export async function startLoopback(): Promise<LoopbackServer> {
  const spec = "../../test/k8s/apiserver/index.js";
  let mod: { startApiServer(opts?: object): Promise<LoopbackServer> };
  try {
    mod = (await import(spec)) as typeof mod;
  } catch (e) {
    throw new ProviderError(
      "k8s",
      "the loopback API server is not built (test/k8s/apiserver); set GC_TEST_KUBECONFIG to test a real cluster",
      { cause: e },
    );
  }
  return mod.startApiServer({ namespaces: [LOOPBACK_NAMESPACE] });
}

/**
 * The namespace of a loopback run: it enforces PodSecurity `restricted`, as a hardened
 * cluster does, so the suite proves gc's pods are admitted there.
 */
export const LOOPBACK_NAMESPACE = "gc-conformance";

/** Labels `ns` with `pod-security.kubernetes.io/enforce: restricted` (creating it when missing). */
async function enforceRestricted(kubeconfig: string, ns: string): Promise<void> {
  const api = await connect({ kubeconfig });
  await api
    .call((c) => c.createNamespace({ body: { metadata: { name: ns } } }))
    .catch((e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
  await api.call((c) =>
    c.patchNamespace(
      { name: ns, body: { metadata: { labels: { "pod-security.kubernetes.io/enforce": "restricted" } } } },
      api.mergePatch(),
    ),
  );
}

/** A k8s target: a real cluster when `GC_TEST_KUBECONFIG` is set, else the loopback server. */
export function createTarget(): Promise<ConformanceTarget> {
  return createK8sTarget({ kubeconfig: process.env.GC_TEST_KUBECONFIG || undefined });
}

/**
 * A k8s target on the real cluster of `kubeconfig`, or (without one) on a loopback server
 * started by `startServer` (default: {@link startLoopback}).
 */
export async function createK8sTarget(
  opts: { kubeconfig?: string | undefined; startServer?: () => Promise<LoopbackServer> } = {},
): Promise<ConformanceTarget> {
  const rand = Math.random().toString(36).slice(2, 8);
  const root = await mkdtemp(join(tmpdir(), "gc-k8s-conf-"));
  const real = opts.kubeconfig;
  let server: LoopbackServer | undefined;
  try {
    if (!real) {
      server = await (opts.startServer ?? startLoopback)();
      await enforceRestricted(server.kubeconfigPath, LOOPBACK_NAMESPACE);
    }
  } catch (e) {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  const city = `conf-${process.pid}-${rand}`;
  const settings = {
    namespace: real ? process.env.GC_TEST_K8S_NAMESPACE || "default" : LOOPBACK_NAMESPACE,
    image: (real && process.env.GC_TEST_K8S_IMAGE) || "gc-loopback/agent:local",
    kubeconfig: real ?? server!.kubeconfigPath,
    // Work dirs in the pod are the same paths as the local ones the suite compares with.
    work_root: root,
    start_timeout: real ? 180_000 : 30_000,
  };
  const provider = new K8sProvider({ city, cityDir: root, stateDir: join(root, ".gc"), settings });
  let dirs = 0;
  const foreignPods: string[] = [];
  return {
    label: real ? "k8s (GC_TEST_KUBECONFIG)" : "k8s (loopback)",
    provider,
    namePrefix: `k8.${process.pid}.`,
    timeScale: real ? 4 : 2,
    async makeConfig(command, extra) {
      const workDir = join(root, `work-${++dirs}`);
      await mkdir(workDir, { recursive: true });
      return { command, workDir, env: {}, ...extra };
    },
    readFile: (name, _cfg, rel) => provider.readSessionFile(name, rel),
    ...(real ? {} : { pidAlive: async (_name: string, pid: number) => pidAlive(pid) }),
    async createForeign(name) {
      // A pod of another city carrying the same session name: never ours to list or stop.
      const api = await connect({ kubeconfig: settings.kubeconfig });
      const owner = `foreign-${rand}`;
      const pod = podName(owner, name);
      const manifest = buildPod({
        id: { owner, name, pod },
        settings: provider.settings,
        image: settings.image,
        workDir: join(root, `foreign-${++dirs}`),
        env: {},
        startId: "foreign",
        bootGraceSeconds: 300,
      });
      const [own] = manifest.spec.containers as Record<string, unknown>[];
      manifest.spec.containers = [{ ...own, command: ["sleep", "300"], env: [] }];
      if (manifest.metadata.labels[LABELS.city] !== labelValue(owner)) throw new Error("foreign labels");
      await api.call((c) =>
        c.createNamespacedPod({ namespace: settings.namespace, body: manifest as unknown as never }),
      );
      foreignPods.push(pod);
      return async () => {
        await api
          .call((c) =>
            c.deleteNamespacedPod({ name: pod, namespace: settings.namespace, gracePeriodSeconds: 0 }),
          )
          .catch(() => undefined);
      };
    },
    async cleanup() {
      await provider.shutdown().catch(() => undefined);
      await provider.close();
      await server?.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
