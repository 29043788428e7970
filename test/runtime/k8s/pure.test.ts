import { describe, expect, it } from "vitest";
import { httpStatus, isTransient, withRetry } from "../../../internal/runtime/k8s/api.js";
import {
  isDnsLabel,
  isLabelValue,
  labelValue,
  metaAnnotation,
  podName,
  secretDataKey,
} from "../../../internal/runtime/k8s/names.js";
import { resolveSettings } from "../../../internal/runtime/k8s/settings.js";
import {
  buildPod,
  buildSecret,
  podState,
  podWorkDir,
  sessionOf,
} from "../../../internal/runtime/k8s/spec.js";

const NAMES = [
  "mayor",
  "Mayor",
  "a.b",
  "a_b",
  "a-b",
  "worker-1",
  "x".repeat(128),
  `${"x".repeat(127)}y`,
  `${"a".repeat(62)}.b`,
  `${"a".repeat(62)}_b`,
  "9",
  "_",
  "...",
];

describe("k8s names", () => {
  it("pod names are RFC 1123 labels ≤ 63, and distinct (city, name) pairs never collide", () => {
    const seen = new Map<string, string>();
    for (const city of ["demo", "Demo", "other city", "c".repeat(200)]) {
      for (const n of NAMES) {
        const p = podName(city, n);
        expect(isDnsLabel(p), p).toBe(true);
        expect(p.length).toBeLessThanOrEqual(63);
        const key = `${city}\0${n}`;
        expect(seen.get(p), `${p} for ${key}`).toBeUndefined();
        seen.set(p, key);
      }
    }
    // Stable: the same input always maps to the same name.
    expect(podName("demo", "mayor")).toBe(podName("demo", "mayor"));
    expect(podName("demo", "mayor")).toMatch(/^mayor-[0-9a-f]{10}$/);
  });

  it("label values are valid and collision-proof, readable when already valid", () => {
    expect(labelValue("demo")).toBe("demo");
    const inputs = [...NAMES, "a b", "a/b", "é", "", "demo-h0123456789", "x".repeat(64)];
    const out = new Set<string>();
    for (const v of inputs) {
      const l = labelValue(v);
      expect(isLabelValue(l), `${JSON.stringify(v)} → ${l}`).toBe(true);
      out.add(l);
    }
    expect(out.size).toBe(new Set(inputs).size);
    // A raw value shaped like a hashed one is hashed too, so it cannot shadow another input.
    expect(labelValue("demo-h0123456789")).not.toBe("demo-h0123456789");
  });

  it("metadata annotation keys are valid and never shared by two keys", () => {
    const keys = ["gc.core", "_x", "a.", "x--y", "k".repeat(64), "k".repeat(63), "A-b_c.d"];
    const out = keys.map(metaAnnotation);
    expect(new Set(out).size).toBe(keys.length);
    for (const k of out) {
      const [prefix, rest] = k.split("/");
      expect(prefix).toBe("meta.gc.dev");
      expect(isLabelValue(rest!)).toBe(true);
    }
    expect(metaAnnotation("gc.core")).toBe("meta.gc.dev/gc.core");
    expect(secretDataKey("API_TOKEN")).toBe("API_TOKEN");
    expect(secretDataKey("bad key")).toMatch(/^env-[0-9a-f]{16}$/);
  });
});

describe("k8s settings", () => {
  it("defaults, and every key takes effect", () => {
    const d = resolveSettings({});
    expect(d).toMatchObject({
      namespace: undefined, // the kubeconfig context's, else default (security.test.ts)
      workRoot: "/workspace",
      image: undefined,
      startTimeoutMs: 120_000,
      gracePeriodSeconds: 10,
      security: {
        runAsNonRoot: true,
        runAsUser: undefined,
        runAsGroup: undefined,
        fsGroup: undefined,
        readOnlyRootFilesystem: false,
      },
    });
    const s = resolveSettings({
      namespace: "agents",
      image: "busybox:1.36",
      image_pull_policy: "Never",
      service_account: "gc-agent",
      node_selector: { pool: "agents" },
      resources: { requests: { cpu: "250m", memory: "256Mi" }, limits: { cpu: "1", memory: "1Gi" } },
      kubeconfig: "/k/config",
      context: "kind",
      work_root: "/srv/work/",
      start_timeout: 5_000,
      grace_period: 2_500,
      run_as_non_root: false,
      run_as_user: 1000,
      run_as_group: 1001,
      fs_group: 1002,
      read_only_root_filesystem: true,
    });
    expect(s).toMatchObject({
      namespace: "agents",
      image: "busybox:1.36",
      imagePullPolicy: "Never",
      serviceAccount: "gc-agent",
      nodeSelector: { pool: "agents" },
      kubeconfig: "/k/config",
      context: "kind",
      workRoot: "/srv/work",
      startTimeoutMs: 5_000,
      gracePeriodSeconds: 3,
      security: {
        runAsNonRoot: false,
        runAsUser: 1000,
        runAsGroup: 1001,
        fsGroup: 1002,
        readOnlyRootFilesystem: true,
      },
    });
    expect(s.resources).toEqual({
      requests: { cpu: "250m", memory: "256Mi" },
      limits: { cpu: "1", memory: "1Gi" },
    });
  });

  it("bad values name the key", () => {
    expect(() => resolveSettings({ image_pull_policy: "Sometimes" })).toThrow(/image_pull_policy/);
    expect(() => resolveSettings({ resources: { requests: { gpu: "1" } } })).toThrow(
      /resources.requests.gpu/,
    );
    expect(() => resolveSettings({ work_root: "rel" })).toThrow(/work_root/);
    expect(() => resolveSettings({ node_selector: ["x"] })).toThrow(/node_selector/);
  });
});

describe("k8s pod spec", () => {
  const settings = resolveSettings({
    namespace: "agents",
    image: "img:1",
    image_pull_policy: "IfNotPresent",
    service_account: "sa",
    node_selector: { pool: "a" },
    resources: { limits: { memory: "1Gi" } },
  });
  const id = { owner: "city-1", name: "Mayor.1", pod: podName("city-1", "Mayor.1") };
  const env = { LOG_LEVEL: "info", GITHUB_TOKEN: "s3cr3t-value", "db.password": "hunter2" };
  const pod = buildPod({
    id,
    settings,
    image: "img:1",
    workDir: "/workspace/mayor",
    env,
    startId: "t",
    bootGraceSeconds: 9,
  });

  it("carries ownership and identity as labels, exact names as annotations, and the settings", () => {
    expect(pod.metadata.labels).toEqual({
      "app.kubernetes.io/managed-by": "gc",
      "gc.dev/city": "city-1",
      "gc.dev/session": "Mayor.1",
    });
    expect(pod.metadata.annotations["gc.dev/session-name"]).toBe("Mayor.1");
    expect(pod.metadata.namespace).toBe("agents");
    expect(pod.spec).toMatchObject({
      restartPolicy: "Never",
      serviceAccountName: "sa",
      nodeSelector: { pool: "a" },
    });
    const c = (pod.spec.containers as Record<string, unknown>[])[0]!;
    expect(c).toMatchObject({
      name: "agent",
      image: "img:1",
      imagePullPolicy: "IfNotPresent",
      resources: { limits: { memory: "1Gi" } },
    });
    expect(sessionOf(pod, "city-1")).toBe("Mayor.1");
    expect(sessionOf(pod, "city-2")).toBeUndefined();
  });

  it("secret values are referenced from the Secret, never in the spec or annotations", () => {
    const text = JSON.stringify(pod);
    expect(text).not.toContain("s3cr3t-value");
    expect(text).not.toContain("hunter2");
    const c = (pod.spec.containers as { env: { name: string; value?: string; valueFrom?: unknown }[] }[])[0]!;
    expect(c.env.find((e) => e.name === "LOG_LEVEL")?.value).toBe("info");
    expect(c.env.find((e) => e.name === "GITHUB_TOKEN")).toEqual({
      name: "GITHUB_TOKEN",
      valueFrom: { secretKeyRef: { name: id.pod, key: "GITHUB_TOKEN" } },
    });
    const secret = buildSecret(id, "agents", env) as {
      stringData: Record<string, string>;
      metadata: { labels: unknown };
    };
    expect(secret.stringData).toEqual({ GITHUB_TOKEN: "s3cr3t-value", "db.password": "hunter2" });
    expect(secret.metadata.labels).toEqual(pod.metadata.labels);
    expect(buildSecret(id, "agents", { A: "b" })).toBeUndefined();
  });

  it("work dirs map under work_root", () => {
    expect(podWorkDir("/workspace", "/home/u/city", "/home/u/city/mayor")).toBe("/workspace/mayor");
    expect(podWorkDir("/workspace", "/home/u/city", "/home/u/city")).toBe("/workspace");
    expect(podWorkDir("/workspace", "/home/u/city", "/tmp/elsewhere/w1")).toBe("/workspace/w1");
    expect(podWorkDir("/workspace", "/home/u/city", "rel/dir")).toBe("/workspace/rel/dir");
  });
});

describe("k8s pod state", () => {
  const cs = (state: object) => ({ containerStatuses: [{ name: "agent", state }] });
  it("classifies phases and carries the pod's reason", () => {
    expect(podState({ status: { phase: "Pending" } })).toEqual({ kind: "pending", reason: "Pending" });
    expect(
      podState({
        status: {
          phase: "Pending",
          ...cs({ waiting: { reason: "ImagePullBackOff", message: "no such image" } }),
        },
      }),
    ).toEqual({ kind: "pending", reason: "ImagePullBackOff: no such image" });
    expect(
      podState({
        status: {
          phase: "Pending",
          conditions: [
            { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/3 nodes" },
          ],
        },
      }),
    ).toEqual({ kind: "pending", reason: "Unschedulable: 0/3 nodes" });
    expect(podState({ status: { phase: "Running", ...cs({ running: {} }) } })).toEqual({ kind: "running" });
    expect(
      podState({ status: { phase: "Running", ...cs({ waiting: { reason: "CrashLoopBackOff" } }) } }),
    ).toEqual({
      kind: "pending",
      reason: "CrashLoopBackOff",
    });
    expect(
      podState({ metadata: { deletionTimestamp: "2026-01-01T00:00:00Z" }, status: { phase: "Running" } }),
    ).toEqual({
      kind: "terminating",
    });
    const ended = podState({
      status: {
        phase: "Failed",
        ...cs({ terminated: { exitCode: 3, reason: "Error", finishedAt: "2026-01-01T00:00:00Z" } }),
      },
    });
    expect(ended).toMatchObject({ kind: "ended", exitCode: 3, reason: "Error" });
  });
});

describe("k8s retries", () => {
  it("retries 429/5xx and dropped connections with backoff, not 4xx", async () => {
    expect(isTransient({ code: 429 })).toBe(true);
    expect(isTransient({ code: 500 })).toBe(true);
    expect(isTransient({ code: 404 })).toBe(false);
    expect(isTransient(new Error("Unexpected server response: 503"))).toBe(true);
    expect(isTransient({ message: "fetch failed", cause: { code: "ECONNREFUSED" } })).toBe(true);
    expect(httpStatus(new Error("Unexpected server response: 404"))).toBe(404);
    let n = 0;
    const policy = { attempts: 5, baseDelayMs: 1, maxDelayMs: 2 };
    await expect(
      withRetry(
        async () => {
          if (++n < 3) throw Object.assign(new Error("busy"), { code: 500 });
          return "ok";
        },
        { policy },
      ),
    ).resolves.toBe("ok");
    expect(n).toBe(3);
    n = 0;
    await expect(
      withRetry(
        async () => {
          n++;
          throw Object.assign(new Error("gone"), { code: 404 });
        },
        { policy },
      ),
    ).rejects.toThrow("gone");
    expect(n).toBe(1);
  });
});
