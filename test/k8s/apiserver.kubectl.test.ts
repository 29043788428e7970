/**
 * Fidelity of the loopback API server proven with the real kubectl 1.32: discovery, OpenAPI for
 * `apply` (client- and server-side), `get -o json`, `wait --for=condition=Ready`, `exec -i`
 * (stdin, exit codes), `logs`, `delete` (graceful, with its watch), Status errors, bearer tokens.
 */
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it, onTestFinished } from "vitest";
import { startApiServer } from "./apiserver/index.js";
import { kubectl, useApiServer } from "./support.js";

const fx = useApiServer();

const manifest = (labels: string, image = "busybox:1.36") => `apiVersion: v1
kind: Pod
metadata:
  name: kc-a
  labels: {${labels}}
spec:
  containers:
  - name: main
    image: ${image}
    command: ["sh", "-c", "echo started $(POD_NAME); exec sleep 1000"]
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
`;

describe("kubectl against the loopback server", () => {
  it("applies (create, then strategic-merge patch), waits for Ready, gets JSON, execs, reads logs, deletes", async () => {
    const created = await kubectl(fx.server, ["apply", "-f", "-"], manifest("app: kc"));
    expect(created).toEqual({ code: 0, stdout: "pod/kc-a created\n", stderr: "" });
    // validation used the served OpenAPI: no --validate=false needed, and no /openapi/v2 fallback error
    expect(fx.server.requestLog.count({ path: "/openapi/v3/api/v1" })).toBeGreaterThan(0);

    const ready = await kubectl(fx.server, ["wait", "--for=condition=Ready", "pod/kc-a", "--timeout=20s"]);
    expect(ready).toMatchObject({ code: 0, stdout: "pod/kc-a condition met\n" });

    const updated = await kubectl(
      fx.server,
      ["apply", "-f", "-"],
      manifest("app: kc, extra: z", "busybox:1.37"),
    );
    expect(updated).toMatchObject({ code: 0, stdout: "pod/kc-a configured\n" });
    expect(fx.server.requestLog.count({ verb: "patch", name: "kc-a" })).toBe(1);

    const ssa = await kubectl(
      fx.server,
      ["apply", "--server-side", "-f", "-"],
      manifest("app: kc, extra: z, ssa: s1", "busybox:1.37"),
    );
    expect(ssa).toMatchObject({ code: 0, stdout: "pod/kc-a serverside-applied\n" });

    const got = await kubectl(fx.server, ["get", "pod", "kc-a", "-o", "json"]);
    expect(got.code).toBe(0);
    const pod = JSON.parse(got.stdout);
    expect(pod).toMatchObject({
      kind: "Pod",
      metadata: { name: "kc-a", namespace: "default", labels: { app: "kc", extra: "z", ssa: "s1" } },
      spec: { containers: [{ name: "main", image: "busybox:1.37" }], nodeName: "loopback-node" },
      status: { phase: "Running" },
    });

    const listed = await kubectl(fx.server, ["get", "pods", "-l", "extra=z"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
    expect(listed.stdout).toMatch(/\nkc-a\s+1\/1\s+Running\s+0\s+/);
    const none = await kubectl(fx.server, ["get", "pods", "-l", "extra=nope", "-o", "name"]);
    expect(none).toMatchObject({ code: 0, stdout: "" });

    const echoed = await kubectl(
      fx.server,
      ["exec", "-i", "kc-a", "--", "sh", "-c", "cat; echo to-stderr >&2"],
      "line one\nline two\n",
    );
    expect(echoed).toMatchObject({ code: 0, stdout: "line one\nline two\n", stderr: "to-stderr\n" });
    const failed = await kubectl(fx.server, ["exec", "kc-a", "--", "sh", "-c", "exit 7"]);
    expect(failed.code).toBe(7);
    expect(failed.stderr).toContain("command terminated with exit code 7");

    const logs = await kubectl(fx.server, ["logs", "kc-a"]);
    expect(logs).toMatchObject({ code: 0, stdout: "started kc-a\n" });

    const deleted = await kubectl(fx.server, ["delete", "pod", "kc-a", "--timeout=30s"]);
    expect(deleted).toMatchObject({ code: 0, stdout: 'pod "kc-a" deleted\n' });
    const gone = await kubectl(fx.server, ["get", "pod", "kc-a"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('Error from server (NotFound): pods "kc-a" not found');
  }, 120_000);

  it("retries a 500 burst that carries Retry-After, and prints Status errors", async () => {
    fx.server.faults.failNext(2, {
      code: 500,
      retryAfterSeconds: 1,
      method: "GET",
      path: "/api/v1/namespaces/default/pods",
    });
    const r = await kubectl(fx.server, ["get", "pods", "-o", "name"]);
    expect(r.code).toBe(0);
    expect(fx.server.requestLog.count({ path: "/api/v1/namespaces/default/pods", status: 500 })).toBe(2);

    const invalid = await kubectl(
      fx.server,
      ["apply", "-f", "-"],
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: main\n    image: x\n",
    );
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('The Pod "Bad_Name" is invalid');
  }, 60_000);

  it("requires the bearer token when asked to (client-node sends it; kubectl omits it over plain HTTP)", async () => {
    const server = await startApiServer({ requireToken: true });
    onTestFinished(() => server.stop());
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const list = await kc.makeApiClient(k8s.CoreV1Api).listNamespace();
    expect(list.items.map((n) => n.metadata?.name)).toContain("default");
    const res = await fetch(`${server.url}/api/v1/namespaces/default/pods`, {
      headers: { Authorization: "Bearer wrong" },
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ kind: "Status", reason: "Unauthorized" });
  });
});
