/**
 * The image check of the k8s boot script: a start in an image that lacks tools gc runs in the
 * pod fails at once with one message naming every missing tool (and a tmux older than 3.2),
 * read from the pod's log before the pod is deleted. Images are stood in for by a PATH holding
 * only some of the host's tools (the loopback server runs containers as local processes).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { IMAGE_CHECK, IMAGE_CHECK_EXIT } from "../../../internal/runtime/k8s/spec.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";

let root: string;
let server: ApiServer;
beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "gc-k8s-img-")));
  server = await startApiServer({});
});
afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

/** The host's `tool` (first on PATH). */
function hostTool(tool: string): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const p = join(dir, tool);
    if (dir && existsSync(p)) return p;
  }
  throw new Error(`no ${tool} on this host`);
}

/** A directory with the host's `tools` and, when given, a `tmux` that says it is `tmuxVersion`. */
async function imageBin(name: string, tools: readonly string[], tmuxVersion?: string): Promise<string> {
  const bin = join(root, name);
  await mkdir(bin, { recursive: true });
  for (const t of tools) await symlink(hostTool(t), join(bin, t));
  if (tmuxVersion !== undefined) {
    await writeFile(join(bin, "tmux"), `#!/bin/sh\necho "tmux ${tmuxVersion}"\n`);
    await chmod(join(bin, "tmux"), 0o755);
  }
  return bin;
}

const check = (path: string) =>
  spawnSync("/bin/sh", ["-c", IMAGE_CHECK], { env: { PATH: path }, encoding: "utf8" });

describe("k8s image check", { timeout: 120_000 }, () => {
  it("passes with the host's tools and names every missing tool and an old tmux", async () => {
    const ok = check(process.env.PATH ?? "");
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    const old = check(await imageBin("old", ["env", "cat", "mkdir", "sleep"], "3.0a"));
    expect(old.status).toBe(IMAGE_CHECK_EXIT);
    expect(old.stderr).toBe("gc: the image lacks: tar, mktemp, mv, tmux ≥ 3.2 (it has 3.0a)\n");
    const none = check(await imageBin("none", []));
    expect(none.stderr).toBe("gc: the image lacks: tmux, tar, env, mktemp, mv, cat, mkdir, sleep\n");
    const next = check(
      await imageBin("next", ["tar", "env", "mktemp", "mv", "cat", "mkdir", "sleep"], "next-3.4"),
    );
    expect(next.status).toBe(0);
  });

  it("a start in an image that lacks tools fails at once, naming them, and leaves no pod", async () => {
    const city = `img-${process.pid}`;
    const p = new K8sProvider({
      city,
      cityDir: root,
      stateDir: root,
      settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
    });
    try {
      const bin = await imageBin("pod", ["env", "cat", "mkdir", "sleep"], "3.1");
      const workDir = join(root, "w");
      await mkdir(workDir, { recursive: true });
      await expect(
        p.start("img", { command: "exec sleep 300", workDir, env: { PATH: bin } }),
      ).rejects.toThrow(
        // from the start's own check, or from the boot script's in the pod's log
        "gc: the image lacks: tar, mktemp, mv, tmux ≥ 3.2 (it has 3.1)",
      );
      expect(server.store.list("pods", "default")).toEqual([]);
    } finally {
      await p.close();
    }
  });
});
