/**
 * One owner per city: every pod and Secret gc creates names the city object (ConfigMap
 * `gc-city-<hash>`) in its ownerReferences, two providers of one city share it, and deleting
 * it with kubectl has the garbage collector remove every pod and Secret of the city — and
 * nothing of another city.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type KubeApi } from "../../../internal/runtime/k8s/api.js";
import { cityObjectName, K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { selector } from "../../../internal/runtime/k8s/names.js";
import { cityLabels } from "../../../internal/runtime/k8s/spec.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";
import { kubectl } from "../../k8s/support.js";

let server: ApiServer;
let root: string;
let api: KubeApi;

beforeAll(async () => {
  server = await startApiServer({});
  root = await mkdtemp(join(tmpdir(), "gc-k8s-owner-"));
  api = await connect({ kubeconfig: server.kubeconfigPath });
});

afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

function provider(city: string): K8sProvider {
  return new K8sProvider({
    city,
    cityDir: root,
    stateDir: root,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
  });
}

async function workDir(name: string): Promise<string> {
  const d = join(root, name);
  await mkdir(d, { recursive: true });
  return d;
}

const ofCity = async (owner: string) => {
  const labelSelector = selector(cityLabels(owner));
  const [pods, secrets] = await Promise.all([
    api.call((c) => c.listNamespacedPod({ namespace: "default", labelSelector })),
    api.call((c) => c.listNamespacedSecret({ namespace: "default", labelSelector })),
  ]);
  return { pods: pods.items, secrets: secrets.items };
};

describe("the city object owns the fleet", { timeout: 120_000 }, () => {
  it("pods and Secrets reference it; deleting it (kubectl) removes every pod and Secret of the city only", async () => {
    const a = provider(`own-${process.pid}`);
    const a2 = provider(`own-${process.pid}`);
    const other = provider(`other-${process.pid}`);
    try {
      await a.start("one", {
        command: "exec sleep 300",
        workDir: await workDir("one"),
        env: { API_KEY: "k1" },
      });
      await a2.start("two", { command: "exec sleep 300", workDir: await workDir("two"), env: {} });
      await other.start("one", {
        command: "exec sleep 300",
        workDir: await workDir("o1"),
        env: { API_KEY: "k2" },
      });
      const cm = cityObjectName(a.owner);
      const cms = server.store
        .list("configmaps", "default")
        .filter((o) => o.metadata.name?.startsWith("gc-city-"));
      expect(cms.map((o) => o.metadata.name).sort()).toEqual([cm, cityObjectName(other.owner)].sort());
      const uid = server.store.get("configmaps", "default", cm)!.metadata.uid;
      const mine = await ofCity(a.owner);
      expect(mine.pods).toHaveLength(2);
      expect(mine.secrets).toHaveLength(1);
      for (const o of [...mine.pods, ...mine.secrets]) {
        expect(o.metadata?.ownerReferences).toEqual([{ apiVersion: "v1", kind: "ConfigMap", name: cm, uid }]);
      }

      const del = await kubectl(server, ["delete", "configmap", cm]);
      expect(del.code).toBe(0);
      await expect
        .poll(
          async () => {
            const left = await ofCity(a.owner);
            return left.pods.length + left.secrets.length;
          },
          { timeout: 30_000 },
        )
        .toBe(0);
      expect(await a.isRunning("one")).toBe(false);
      const theirs = await ofCity(other.owner);
      expect([theirs.pods.length, theirs.secrets.length]).toEqual([1, 1]);
      expect(await other.isRunning("one")).toBe(true);

      // the next start makes a new city object and runs again
      await a.start("one", { command: "exec sleep 300", workDir: await workDir("one"), env: {} });
      expect(await a.isRunning("one")).toBe(true);
      expect(server.store.get("configmaps", "default", cm)!.metadata.uid).not.toBe(uid);
    } finally {
      await a.shutdown().catch(() => undefined);
      await other.shutdown().catch(() => undefined);
    }
  });
});
