/**
 * Pods that pass PodSecurity `restricted`: the loopback server enforces it (403 with the
 * violated fields, as kube-apiserver) on a labelled namespace; gc's pods are admitted by
 * default and run; each security setting (`run_as_user`, `run_as_group`, `fs_group`,
 * `run_as_non_root`, `read_only_root_filesystem`) and `grace_period` reaches the pod and its
 * deletion.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type KubeApi } from "../../../internal/runtime/k8s/api.js";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { resolveSettings } from "../../../internal/runtime/k8s/settings.js";
import { buildPod } from "../../../internal/runtime/k8s/spec.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";
import { podSecurityViolations } from "../../k8s/apiserver/podsecurity.js";

const NS = "strict";
let server: ApiServer;
let root: string;
let api: KubeApi;

beforeAll(async () => {
  server = await startApiServer({ namespaces: [NS] });
  root = await mkdtemp(join(tmpdir(), "gc-k8s-sec-"));
  api = await connect({ kubeconfig: server.kubeconfigPath });
  await api.call((c) =>
    c.patchNamespace(
      { name: NS, body: { metadata: { labels: { "pod-security.kubernetes.io/enforce": "restricted" } } } },
      api.mergePatch(),
    ),
  );
});

afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

function provider(city: string, extra: Record<string, unknown> = {}): K8sProvider {
  return new K8sProvider({
    city,
    cityDir: root,
    stateDir: root,
    settings: {
      image: "gc-test/agent:1",
      kubeconfig: server.kubeconfigPath,
      namespace: NS,
      work_root: root,
      ...extra,
    },
  });
}

const pod = (settings: Record<string, unknown>) =>
  buildPod({
    id: { owner: "c", name: "s", pod: "s-0123456789" },
    settings: resolveSettings({ image: "img:1", ...settings }),
    image: "img:1",
    workDir: "/workspace/x",
    env: {},
    startId: "t",
    bootGraceSeconds: 5,
  });

describe("pod security", { timeout: 120_000 }, () => {
  it("the default pod passes restricted; the settings reach the security context and volumes", () => {
    const d = pod({});
    expect(podSecurityViolations(d as never, "restricted")).toEqual([]);
    expect(d.spec).toMatchObject({
      terminationGracePeriodSeconds: 10,
      securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
      volumes: [
        { name: "gc-tmp", emptyDir: {} },
        { name: "gc-work", emptyDir: {} },
      ],
      containers: [
        {
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
          volumeMounts: [
            { name: "gc-tmp", mountPath: "/tmp" },
            { name: "gc-work", mountPath: "/workspace" },
          ],
        },
      ],
    });
    const sc = (d.spec.securityContext ?? {}) as Record<string, unknown>;
    expect(sc.runAsUser).toBeUndefined();
    const set = pod({
      run_as_user: 1000,
      run_as_group: 2000,
      fs_group: 3000,
      read_only_root_filesystem: true,
      grace_period: 7_000,
      work_root: "/tmp/w",
    });
    expect(podSecurityViolations(set as never, "restricted")).toEqual([]);
    expect(set.spec).toMatchObject({
      terminationGracePeriodSeconds: 7,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 2000, fsGroup: 3000 },
      volumes: [{ name: "gc-tmp", emptyDir: {} }], // work_root under /tmp needs no volume of its own
      containers: [{ securityContext: { readOnlyRootFilesystem: true } }],
    });
    expect(podSecurityViolations(pod({ run_as_non_root: false }) as never, "restricted")).toEqual([
      "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)",
    ]);
    expect(() => resolveSettings({ run_as_user: -1 })).toThrow(/run_as_user/);
    expect(() => resolveSettings({ read_only_root_filesystem: "yes" })).toThrow(/read_only_root_filesystem/);
  });

  it("a session starts in a namespace enforcing restricted, and its stop deletes with the grace period", async () => {
    const p = provider(`sec-${process.pid}`, {
      run_as_user: 1000,
      run_as_group: 1000,
      fs_group: 1000,
      read_only_root_filesystem: true,
      grace_period: 7_000,
    });
    const workDir = join(root, "w1");
    await mkdir(workDir, { recursive: true });
    try {
      await p.start("agent", { command: "exec sleep 300", workDir, env: {} });
      expect(await p.isRunning("agent")).toBe(true);
      const name = p.identity("agent").pod;
      const created = server.store.get("pods", NS, name)!;
      expect(created.spec).toMatchObject({
        terminationGracePeriodSeconds: 7,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
        containers: [{ securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false } }],
      });
      await p.stop("agent");
      expect(server.store.get("pods", NS, name)).toBeUndefined();
      const deletes = server.requestLog.entries.filter((r) => r.verb === "delete" && r.name === name);
      expect(deletes.length).toBeGreaterThan(0);
      expect(deletes.every((r) => new URLSearchParams(r.query).get("gracePeriodSeconds") === "7")).toBe(true);
    } finally {
      await p.shutdown().catch(() => undefined);
      await p.close();
    }
  });

  it("without session.k8s.namespace the kubeconfig context's namespace is used", async () => {
    const kubeconfig = join(root, "ctx-kubeconfig");
    const text = await readFile(server.kubeconfigPath, "utf8");
    expect(text).toContain("    namespace: default\n");
    await writeFile(kubeconfig, text.replace("    namespace: default\n", `    namespace: ${NS}\n`));
    expect(resolveSettings({}).namespace).toBeUndefined();
    const p = new K8sProvider({
      city: `ctx-${process.pid}`,
      cityDir: root,
      stateDir: root,
      settings: { image: "gc-test/agent:1", kubeconfig, work_root: root },
    });
    const workDir = join(root, "w2");
    await mkdir(workDir, { recursive: true });
    try {
      await p.start("agent", { command: "exec sleep 300", workDir, env: {} });
      const name = p.identity("agent").pod;
      expect(server.store.get("pods", NS, name)).toBeDefined();
      expect(server.store.get("pods", "default", name)).toBeUndefined();
      expect(await p.isRunning("agent")).toBe(true);
    } finally {
      await p.shutdown().catch(() => undefined);
      await p.close();
    }
  });
});
