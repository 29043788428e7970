import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pty from "@lydell/node-pty";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { K8sProvider } from "../../../internal/runtime/k8s/index.js";
import { TMUX_SESSION, tmuxSocket } from "../../../internal/runtime/k8s/spec.js";
import { type ApiServer, startApiServer } from "../../k8s/apiserver/index.js";
import { KUBECTL } from "../../k8s/support.js";
import { attachChildArgs } from "../../support/attach.js";

let server: ApiServer;
let root: string;

beforeAll(async () => {
  server = await startApiServer({});
  root = await mkdtemp(join(tmpdir(), "gc-k8s-attach-"));
});

afterAll(async () => {
  await server?.stop();
  if (root) await rm(root, { recursive: true, force: true });
}, 60_000);

function provider(city: string): K8sProvider {
  return new K8sProvider({
    city,
    cityDir: root,
    stateDir: root,
    settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
  });
}

/** A session running `cat` after a greeting; removed after the test. */
async function session(city: string, name: string): Promise<K8sProvider> {
  const p = provider(city);
  onTestFinished(async () => {
    await p.shutdown().catch(() => undefined);
    await p.close();
  });
  const workDir = join(root, name);
  await mkdir(workDir, { recursive: true });
  await p.start(name, { command: "echo HELLO-FROM-POD; exec cat", workDir, env: {} });
  return p;
}

/** A program on a real pty, its output collected; killed after the test. */
function onPty(file: string, args: string[], env: Record<string, string>, cols: number, rows: number) {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "TMUX") base[k] = v;
  const term = pty.spawn(file, args, {
    name: "xterm-256color",
    cols,
    rows,
    cwd: root,
    env: { ...base, ...env, TERM: "xterm-256color" },
  });
  const out = { screen: "" };
  term.onData((d) => {
    out.screen += d;
  });
  const exited = new Promise<{ exitCode: number }>((resolve) => term.onExit(resolve));
  onTestFinished(() => {
    try {
      term.kill("SIGKILL");
    } catch {
      // already gone
    }
  });
  return { term, out, exited };
}

/** `WxH` of every terminal attached to the pod's session (gc's own control channel left out). */
async function clientSizes(p: K8sProvider, name: string): Promise<string> {
  const sock = tmuxSocket(p.identity(name).pod);
  const r = await p.execCommand(name, [
    "tmux",
    "-S",
    sock,
    "list-clients",
    "-F",
    "#{client_control_mode}|#{client_width}x#{client_height}",
  ]);
  return r.stdout
    .split("\n")
    .filter((l) => l.startsWith("0|"))
    .map((l) => l.slice(2))
    .join("\n");
}

describe("k8s attach over the exec WebSocket with a TTY", { timeout: 120_000 }, () => {
  it("gc's attach (client-node): sees the session, types, resizes, detaches with C-b d", async () => {
    const city = `att-${process.pid}`;
    const p = await session(city, "att");
    // The snapshot's attached state, read once, then kept until tmux says a client came or went.
    const snapAttached = async () => (await p.snapshot("att")).find((s) => s.name === "att")?.attached;
    expect(await snapAttached()).toBe(false);
    const { term, out, exited } = onPty(
      process.execPath,
      attachChildArgs({
        provider: "k8s",
        city,
        cityDir: root,
        session: "att",
        settings: { image: "gc-test/agent:1", kubeconfig: server.kubeconfigPath, work_root: root },
      }),
      {},
      100,
      30,
    );
    await expect.poll(() => out.screen.includes("HELLO-FROM-POD"), { timeout: 30_000 }).toBe(true);
    await expect.poll(() => p.isAttached("att"), { timeout: 15_000 }).toBe(true);
    await expect.poll(snapAttached, { timeout: 15_000 }).toBe(true);
    await expect.poll(() => clientSizes(p, "att"), { timeout: 15_000 }).toBe("100x30");
    term.resize(120, 40);
    await expect.poll(() => clientSizes(p, "att"), { timeout: 15_000 }).toBe("120x40");
    term.write("typed-through-attach\r");
    await expect
      .poll(async () => (await p.peek("att", 20)).includes("typed-through-attach"), { timeout: 15_000 })
      .toBe(true);
    term.write("\x02d"); // tmux prefix C-b, then d: detach
    expect((await exited).exitCode).toBe(0);
    expect(out.screen).toContain("GC-ATTACH-RETURNED");
    expect(await p.isRunning("att")).toBe(true);
    await expect.poll(() => p.isAttached("att"), { timeout: 15_000 }).toBe(false);
    await expect.poll(snapAttached, { timeout: 15_000 }).toBe(false);
  });

  it("the real kubectl exec -it attaches to the same tmux session, resizes and detaches", async () => {
    const p = await session(`kat-${process.pid}`, "kat");
    const pod = p.identity("kat").pod;
    const { term, out, exited } = onPty(
      KUBECTL,
      ["exec", "-it", pod, "--", "tmux", "-S", tmuxSocket(pod), "attach-session", "-t", TMUX_SESSION],
      { ...server.kubectlEnv },
      90,
      25,
    );
    await expect.poll(() => out.screen.includes("HELLO-FROM-POD"), { timeout: 30_000 }).toBe(true);
    await expect.poll(() => clientSizes(p, "kat"), { timeout: 15_000 }).toBe("90x25");
    term.resize(110, 35);
    await expect.poll(() => clientSizes(p, "kat"), { timeout: 15_000 }).toBe("110x35");
    term.write("typed-through-kubectl\r");
    await expect
      .poll(async () => (await p.peek("kat", 20)).includes("typed-through-kubectl"), { timeout: 15_000 })
      .toBe(true);
    term.write("\x02d");
    expect((await exited).exitCode).toBe(0);
    expect(await p.isRunning("kat")).toBe(true);
  });
});
