/**
 * Every `session.k8s` key of the city file reaches the k8s provider and takes effect in the
 * pod it builds (or the connection it makes).
 */
import { describe, expect, it } from "vitest";
import { connect, K8sProvider, resolveSettings } from "../../../internal/runtime/k8s/index.js";
import { buildPod } from "../../../internal/runtime/k8s/spec.js";
import { city, issues } from "../../config/helpers.js";
import { startApiServer } from "../../k8s/apiserver/index.js";

const YAML = `session:
  provider: k8s
  k8s:
    namespace: agents
    image: registry.local/agent:2
    context: loopback
    service_account: gc-agent
    image_pull_policy: Never
    node_selector: { pool: agents }
    resources:
      requests: { cpu: 250m, memory: 256Mi }
      limits: { memory: 1Gi }
    work_root: /srv/work
    start_timeout: 45s
agents:
  - name: a
    start_command: "exec sleep 1000"
`;

describe("session.k8s", () => {
  it("every key decodes and takes effect in the pod spec", () => {
    const c = city(YAML);
    const raw = c.config.session.k8s as unknown as Record<string, unknown>;
    const s = resolveSettings(raw);
    expect(s).toMatchObject({
      namespace: "agents",
      image: "registry.local/agent:2",
      context: "loopback",
      serviceAccount: "gc-agent",
      imagePullPolicy: "Never",
      nodeSelector: { pool: "agents" },
      workRoot: "/srv/work",
      startTimeoutMs: 45_000,
    });
    const p = new K8sProvider({ city: "demo", cityDir: "/home/u/city", stateDir: "/tmp", settings: raw });
    const pod = buildPod({
      id: p.identity("a"),
      settings: p.settings,
      image: p.settings.image!,
      workDir: "/srv/work/a",
      env: {},
      startId: "x",
      bootGraceSeconds: 1,
    });
    expect(pod.metadata.namespace).toBe("agents");
    expect(pod.spec).toMatchObject({
      serviceAccountName: "gc-agent",
      nodeSelector: { pool: "agents" },
      containers: [
        {
          image: "registry.local/agent:2",
          imagePullPolicy: "Never",
          resources: { requests: { cpu: "250m", memory: "256Mi" }, limits: { memory: "1Gi" } },
        },
      ],
    });
  });

  it("bad values are config errors naming the key", () => {
    expect(issues("session:\n  k8s:\n    image_pull_policy: Sometimes\n").join("\n")).toMatch(
      /session\.k8s\.image_pull_policy/,
    );
    expect(issues("session:\n  k8s:\n    start_timeout: 5\n").join("\n")).toMatch(
      /session\.k8s\.start_timeout/,
    );
  });

  it("kubeconfig and context select the cluster", async () => {
    const server = await startApiServer({});
    try {
      const api = await connect({ kubeconfig: server.kubeconfigPath, context: "loopback" });
      const list = await api.call((c) => c.listNamespacedPod({ namespace: "default" }));
      expect(list.items).toEqual([]);
      await expect(connect({ kubeconfig: server.kubeconfigPath, context: "nope" })).rejects.toThrow(
        /context/,
      );
    } finally {
      await server.stop();
    }
  });
});
