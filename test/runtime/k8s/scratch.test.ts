import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
// @ts-ignore scratch: the other branch's uncommitted server
import { startApiServer } from "/work/wt/i18s/test/k8s/apiserver/index.ts";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";

it("smoke", async () => {
  const server = await startApiServer({});
  const root = await mkdtemp(join(tmpdir(), "gck8s-"));
  const p = new K8sProvider({ city: "c1", cityDir: root, stateDir: root, settings: { image: "x:1", kubeconfig: server.kubeconfigPath, work_root: root } });
  try {
    await p.start("s1", { command: "echo hello; exec sleep 300", workDir: join(root, "w1"), env: { A_TOKEN: "sek", B: "b" } });
    console.log("list", await p.listRunning(""));
    await expect.poll(() => p.peek("s1", 10)).toContain("hello");
    await p.setMeta("s1", "k", "v\nx");
    console.log("meta", await p.getMeta("s1", "k"));
    await p.nudge("s1", "hi there");
    console.log("exec", await p.execCommand("s1", ["sh", "-c", "pwd; echo $A_TOKEN"]));
    console.log("alive", await p.processAlive("s1", ["sleep"]));
    await p.stop("s1");
    console.log("list2", await p.listRunning(""), server.requestLog.entries.length);
  } finally {
    await p.shutdown().catch(() => {});
    await server.stop();
  }
}, 60000);
