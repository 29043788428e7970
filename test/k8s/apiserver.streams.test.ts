/**
 * Streams and the less common paths of the loopback API server: exec under the v4 subprotocol
 * (a raw WebSocket client offering only v4), attach to a container's main process, followed
 * logs with timestamps/tailLines, init containers, namespace deletion, injected latency.
 */
import { PassThrough } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it, onTestFinished } from "vitest";
import WebSocket from "ws";
import { POD_MARKER, startApiServer } from "./apiserver/index.js";
import { pidsTagged, shellPod, useApiServer } from "./support.js";

const fx = useApiServer();
const NS = "default";

async function waitRunning(name: string, ns = NS) {
  await expect
    .poll(async () => (await fx.core.readNamespacedPod({ name, namespace: ns })).status?.phase, {
      timeout: 10_000,
    })
    .toBe("Running");
}

describe("streams", () => {
  it("speaks v4.channel.k8s.io to a client that offers only v4", async () => {
    await fx.core.createNamespacedPod({ namespace: NS, body: shellPod("v4-a", "exec sleep 1000") });
    await waitRunning("v4-a");
    const url = `${fx.server.url.replace("http", "ws")}/api/v1/namespaces/${NS}/pods/v4-a/exec?command=sh&command=-c&command=echo+v4+out%3B+exit+4&stdout=true&stderr=true`;
    const ws = new WebSocket(url, ["v4.channel.k8s.io"]);
    const frames: Buffer[] = [];
    ws.on("message", (d: Buffer) => frames.push(d));
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    expect(await closed).toBe(1000);
    expect(ws.protocol).toBe("v4.channel.k8s.io");
    expect(frames[0]).toEqual(Buffer.from([1]));
    const stdout = Buffer.concat(frames.filter((f) => f[0] === 1).map((f) => f.subarray(1))).toString();
    expect(stdout).toBe("v4 out\n");
    const status = JSON.parse(
      frames
        .find((f) => f[0] === 3)!
        .subarray(1)
        .toString(),
    );
    expect(status).toMatchObject({
      status: "Failure",
      reason: "NonZeroExitCode",
      details: { causes: [{ reason: "ExitCode", message: "4" }] },
    });
    expect(frames[frames.length - 1]![0]).toBe(3);

    const refused = new WebSocket(url, ["base64.channel.k8s.io"]);
    const err = await new Promise<Error>((resolve) => refused.on("error", resolve));
    expect(err.message).toContain("400");
  });

  it("attaches to a container's main process (stdin in, stdout out)", async () => {
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: shellPod("attach-a", "while read l; do echo got:$l; done", { stdin: true }),
    });
    await waitRunning("attach-a");
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => {
      text += d.toString();
    });
    const stdin = new PassThrough();
    const ws = await new k8s.Attach(fx.kc).attach(NS, "attach-a", "main", out, null, stdin, false);
    stdin.write("hello\n");
    await expect.poll(() => text, { timeout: 5_000 }).toBe("got:hello\n");
    ws.close();
    // the attached process outlives the attach session
    expect((await fx.core.readNamespacedPod({ name: "attach-a", namespace: NS })).status?.phase).toBe(
      "Running",
    );
  });

  it("follows logs until the container ends; tailLines and timestamps", async () => {
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        ...shellPod("log-a", "for i in 1 2 3; do echo line$i; done; read x"),
        spec: {
          restartPolicy: "Never",
          containers: [
            {
              name: "main",
              image: "busybox:1.36",
              stdin: true,
              command: ["sh", "-c", "for i in 1 2 3; do echo line$i; done; read x"],
            },
          ],
        },
      },
    });
    await waitRunning("log-a");
    await expect
      .poll(() => fx.core.readNamespacedPodLog({ name: "log-a", namespace: NS }), { timeout: 5_000 })
      .toBe("line1\nline2\nline3\n");
    expect(await fx.core.readNamespacedPodLog({ name: "log-a", namespace: NS, tailLines: 1 })).toBe(
      "line3\n",
    );
    const stamped = await fx.core.readNamespacedPodLog({ name: "log-a", namespace: NS, timestamps: true });
    expect(stamped.split("\n")[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line1$/);

    const followed = new PassThrough();
    let text = "";
    followed.on("data", (d: Buffer) => {
      text += d.toString();
    });
    let ended = false;
    followed.on("end", () => {
      ended = true;
    });
    // client-node 1.4 never calls Log's `done` callback: the end of the piped stream is the signal
    await new k8s.Log(fx.kc).log(NS, "log-a", "main", followed, { follow: true });
    await expect.poll(() => text, { timeout: 5_000 }).toBe("line1\nline2\nline3\n");
    expect(ended).toBe(false);
    // end the container: attach and send the line it waits for
    const stdin = new PassThrough();
    const ws = await new k8s.Attach(fx.kc).attach(NS, "log-a", "main", null, null, stdin, false);
    stdin.write("done\n");
    await expect.poll(() => ended, { timeout: 10_000 }).toBe(true);
    ws.close();
    await expect
      .poll(async () => (await fx.core.readNamespacedPod({ name: "log-a", namespace: NS })).status?.phase, {
        timeout: 5_000,
      })
      .toBe("Succeeded");
  });
});

describe("lifecycle extras", () => {
  it("runs init containers in order before the main container", async () => {
    await fx.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "init-a" },
        spec: {
          initContainers: [
            { name: "stage", image: "busybox:1.36", command: ["sh", "-c", "echo staged > marker"] },
          ],
          containers: [
            { name: "main", image: "busybox:1.36", command: ["sh", "-c", "cat marker; exec sleep 1000"] },
          ],
        },
      },
    });
    await waitRunning("init-a");
    const pod = await fx.core.readNamespacedPod({ name: "init-a", namespace: NS });
    expect(pod.status?.initContainerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: "Completed",
    });
    expect(pod.status?.conditions?.find((c) => c.type === "Initialized")?.status).toBe("True");
    await expect
      .poll(() => fx.core.readNamespacedPodLog({ name: "init-a", namespace: NS, container: "main" }), {
        timeout: 5_000,
      })
      .toBe("staged\n");
  });

  it("deletes a namespace with its pods and secrets", async () => {
    await fx.core.createNamespace({ body: { metadata: { name: "ns-del" } } });
    await fx.core.createNamespacedSecret({
      namespace: "ns-del",
      body: { metadata: { name: "s" }, stringData: { a: "b" } },
    });
    await fx.core.createNamespacedPod({ namespace: "ns-del", body: shellPod("p", "exec sleep 1000") });
    const deleting = await fx.core.deleteNamespace({ name: "ns-del" });
    expect((deleting as unknown as k8s.V1Namespace).status?.phase).toBe("Terminating");
    await expect
      .poll(
        () =>
          fx.core.readNamespace({ name: "ns-del" }).then(
            () => 200,
            (e: { code: number }) => e.code,
          ),
        { timeout: 5_000 },
      )
      .toBe(404);
    expect(
      (await fx.core.listPodForAllNamespaces({ fieldSelector: "metadata.namespace=ns-del" })).items,
    ).toEqual([]);
  });

  it("delays every request by the injected latency", async () => {
    fx.server.faults.latencyMs = 300;
    const t0 = performance.now();
    await fx.core.listNamespace();
    const slow = performance.now() - t0;
    fx.server.faults.latencyMs = 0;
    expect(slow).toBeGreaterThanOrEqual(300);
  });
});

describe("options", () => {
  it("runProcesses: false runs pods without main processes (exec still works); namespaces and historyLimit apply", async () => {
    const server = await startApiServer({ runProcesses: false, namespaces: ["extra-ns"], historyLimit: 3 });
    onTestFinished(() => server.stop());
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    expect((await core.readNamespace({ name: "extra-ns" })).status?.phase).toBe("Active");
    const rv = (await core.listNamespacedPod({ namespace: "extra-ns" })).metadata!.resourceVersion!;
    const pod = await core.createNamespacedPod({
      namespace: "extra-ns",
      body: shellPod("virtual", "exec sleep 1000"),
    });
    await expect
      .poll(
        async () => (await core.readNamespacedPod({ name: "virtual", namespace: "extra-ns" })).status?.phase,
        { timeout: 10_000 },
      )
      .toBe("Running");
    expect(pidsTagged(POD_MARKER, pod.metadata!.uid!)).toEqual([]);
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => {
      text += d.toString();
    });
    const status = await new Promise<k8s.V1Status>((resolve, reject) => {
      new k8s.Exec(kc)
        .exec("extra-ns", "virtual", "main", ["sh", "-c", "echo $HOSTNAME"], out, null, null, false, resolve)
        .catch(reject);
    });
    expect(status.status).toBe("Success");
    expect(text).toBe("virtual\n");
    // more than 3 writes since `rv`: a watch from it has expired
    const events: unknown[] = [];
    let done = false;
    await new k8s.Watch(kc).watch(
      "/api/v1/namespaces/extra-ns/pods",
      { resourceVersion: rv },
      (type, obj: { code?: number }) => events.push([type, obj.code]),
      () => {
        done = true;
      },
    );
    await expect.poll(() => done, { timeout: 5_000 }).toBe(true);
    expect(events).toEqual([["ERROR", 410]]);
  });

  it("runProcesses answering an argv runs it in the container's stead, in its environment, as the container's process", async () => {
    const server = await startApiServer({
      runProcesses: (_pod, container) => [
        "sh",
        "-c",
        `echo "stand-in for ${container} in $HOSTNAME"; read x`,
      ],
    });
    onTestFinished(() => server.stop());
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const pod = await core.createNamespacedPod({
      namespace: "default",
      body: shellPod("standin", "echo own command; exec sleep 1000", { stdin: true }),
    });
    const log = () => core.readNamespacedPodLog({ name: "standin", namespace: "default", container: "main" });
    await expect.poll(log, { timeout: 10_000 }).toBe("stand-in for main in standin\n");
    expect(pidsTagged(POD_MARKER, pod.metadata!.uid!).length).toBeGreaterThan(0);
    // The stand-in is the container's process: deleting the pod ends it.
    await core.deleteNamespacedPod({ name: "standin", namespace: "default", gracePeriodSeconds: 0 });
    await expect.poll(() => pidsTagged(POD_MARKER, pod.metadata!.uid!), { timeout: 10_000 }).toEqual([]);
  });
});
