/**
 * A real, private Docker engine for tests and `gc conformance docker`: starts Debian's
 * `dockerd` on a private socket (`--iptables=false --bridge=none --storage-driver=vfs`, private
 * data/exec roots and pid file), and builds the minimal test image locally with no registry:
 * a rootfs of busybox-static, tmux with its shared libraries, terminfo and the C.UTF-8 locale,
 * `docker import`ed. The rootfs tarball is cached outside the repo, so repeated runs are fast.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, createReadStream, existsSync, openSync } from "node:fs";
import {
  chmod,
  copyFile,
  cp,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pidAlive } from "../internal/proc/kill.js";
import { run } from "../internal/proc/run.js";

/** Why a private engine cannot run here (missing binary, not root, dockerd failed). */
export class EngineUnavailableError extends Error {
  override readonly name = "EngineUnavailableError";
}

/** A dockerd this process started. */
export interface PrivateEngine {
  /** Unix socket of the engine (`DOCKER_HOST=unix://<socketPath>`). */
  readonly socketPath: string;
  /** dockerd's pid (changes after {@link PrivateEngine.restart}). */
  readonly pid: number;
  /** Stops dockerd (SIGTERM, then SIGKILL) and starts it again on the same roots. */
  restart(): Promise<void>;
  /** Stops dockerd by its pid and removes every private dir. Idempotent. */
  stop(): Promise<void>;
}

const DOCKERD = ["/usr/sbin/dockerd", "/usr/bin/dockerd"];
const CONTAINERD = ["/usr/bin/containerd", "/usr/sbin/containerd"];
const BUSYBOX = ["/bin/busybox", "/usr/bin/busybox"];
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 15_000;

function firstExisting(paths: readonly string[]): string | undefined {
  return paths.find((p) => existsSync(p));
}

/** Why {@link startPrivateEngine} cannot work on this machine, or `undefined`. Cheap, sync. */
export function engineUnavailableReason(): string | undefined {
  if (!firstExisting(DOCKERD)) return "dockerd is not installed (Debian package docker.io)";
  if (!firstExisting(CONTAINERD)) return "containerd is not installed (Debian package containerd)";
  if (typeof process.getuid === "function" && process.getuid() !== 0) return "dockerd needs root";
  if (!firstExisting(BUSYBOX)) return "busybox is not installed (Debian package busybox-static)";
  if (!existsSync("/usr/bin/tmux")) return "tmux is not installed (the test image copies it)";
  return undefined;
}

/**
 * Starts a private dockerd and waits until it answers `/_ping`.
 * @throws EngineUnavailableError with the reason (and dockerd's log tail) when it cannot start.
 */
export async function startPrivateEngine(): Promise<PrivateEngine> {
  const why = engineUnavailableReason();
  if (why) throw new EngineUnavailableError(why);
  const dockerd = firstExisting(DOCKERD)!;
  // Short root: unix socket paths are limited to 108 bytes.
  const root = await mkdtemp(join("/tmp", "gcd-"));
  const socketPath = join(root, "d.sock");
  const logPath = join(root, "dockerd.log");
  let pid = 0;
  let containerdPid = 0;
  // containerd runs on its own, waited for with our deadline: dockerd gives the containerd it
  // starts itself a fixed time, which a loaded machine misses ("timeout waiting for
  // containerd to start").
  const containerdSock = join(root, "ctd.sock");
  const launchContainerd = async () => {
    const config = join(root, "containerd.toml");
    await writeFile(
      config,
      [
        "version = 2",
        `root = ${JSON.stringify(join(root, "ctd", "root"))}`,
        `state = ${JSON.stringify(join(root, "ctd", "state"))}`,
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        "[grpc]",
        `  address = ${JSON.stringify(containerdSock)}`,
        "",
      ].join("\n"),
    );
    containerdPid = await spawnLogged(
      firstExisting(CONTAINERD)!,
      ["--config", config],
      join(root, "containerd.log"),
    );
    await waitReady("containerd", containerdPid, join(root, "containerd.log"), () =>
      connects(containerdSock),
    );
  };
  const launch = async () => {
    pid = await spawnLogged(
      dockerd,
      [
        "--iptables=false",
        "--ip-forward=false",
        "--bridge=none",
        "--storage-driver=vfs",
        "--containerd",
        containerdSock,
        "-H",
        `unix://${socketPath}`,
        "--data-root",
        join(root, "data"),
        "--exec-root",
        join(root, "x"),
        "--pidfile",
        join(root, "dockerd.pid"),
      ],
      logPath,
    );
    await waitReady("dockerd", pid, logPath, () => ping(socketPath));
  };
  try {
    await launchContainerd();
    await launch();
  } catch (e) {
    await terminate(pid);
    await terminate(containerdPid);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
    throw e;
  }
  let stopped = false;
  return {
    socketPath,
    get pid() {
      return pid;
    },
    async restart() {
      await terminate(pid);
      await launch();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await terminate(pid);
      await terminate(containerdPid);
      await rm(root, { recursive: true, force: true }).catch(() => undefined);
    },
  };
}

/** Spawns `argv` detached with its output appended to `logPath`; resolves its pid. */
async function spawnLogged(file: string, args: readonly string[], logPath: string): Promise<number> {
  const log = openSync(logPath, "a");
  const child = spawn(file, args, { detached: true, stdio: ["ignore", log, log] });
  closeSync(log);
  child.unref();
  if (child.pid === undefined) throw new EngineUnavailableError(`${file} could not be spawned`);
  return child.pid;
}

/**
 * Polls `ready` until it is true; past {@link READY_TIMEOUT_MS} or once `pid` died, kills
 * `pid` and throws with the tail of its log.
 */
async function waitReady(
  what: string,
  pid: number,
  logPath: string,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (await ready()) return;
    if (!(await pidAlive(pid)) || Date.now() > deadline) {
      const tail = (await readFile(logPath, "utf8").catch(() => "")).split("\n").slice(-15).join("\n");
      await terminate(pid);
      throw new EngineUnavailableError(`${what} did not start:\n${tail}`);
    }
    await sleep(100);
  }
}

/** True when a unix socket at `path` accepts a connection. */
async function connects(path: string): Promise<boolean> {
  if (!existsSync(path)) return false;
  const { connect } = await import("node:net");
  return new Promise((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** SIGTERM a daemon (dockerd stops its containers), wait for it, SIGKILL its group past the grace. */
async function terminate(pid: number): Promise<void> {
  if (pid <= 0 || !(await pidAlive(pid))) return;
  signal(pid, "SIGTERM");
  const deadline = Date.now() + STOP_GRACE_MS;
  while ((await pidAlive(pid)) && Date.now() < deadline) await sleep(50);
  if (await pidAlive(pid)) {
    signal(-pid, "SIGKILL"); // detached: it leads its own process group
    signal(pid, "SIGKILL");
    while (await pidAlive(pid)) await sleep(50);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** True when the engine at `socketPath` answers `GET /_ping` with OK. */
export async function ping(socketPath: string): Promise<boolean> {
  if (!existsSync(socketPath)) return false;
  const http = await import("node:http");
  return new Promise((resolve) => {
    const req = http.request({ socketPath, path: "/_ping", method: "GET", timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

// ---- the test image -----------------------------------------------------------------------

/** Repository of the locally built test image; the tag is a hash of its inputs. */
export const TEST_IMAGE_REPO = "gc-test-tmux";

/** Files copied from the host into the rootfs (absolute paths, kept at the same place). */
async function imageInputs(): Promise<{ busybox: string; files: string[]; dirs: string[] }> {
  const busybox = firstExisting(BUSYBOX);
  if (!busybox) throw new EngineUnavailableError("busybox is not installed (Debian package busybox-static)");
  const tmux = "/usr/bin/tmux";
  const ldd = await run(["ldd", tmux], { timeoutMs: 10_000 });
  const libs = [...ldd.stdout.matchAll(/(\/\S+)/g)].map((m) => m[1]!);
  const dirs = ["/usr/lib/locale/C.utf8"];
  for (const d of [
    "/lib/terminfo/x",
    "/lib/terminfo/s",
    "/lib/terminfo/t",
    "/lib/terminfo/d",
    "/lib/terminfo/v",
  ]) {
    if (existsSync(d)) dirs.push(d);
  }
  return { busybox, files: [tmux, ...libs], dirs: dirs.filter((d) => existsSync(d)) };
}

function cacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "gc-test");
}

/**
 * The rootfs tarball (cached by a hash of its inputs' paths, sizes and mtimes), built on a
 * miss: busybox and its applet links in /bin, tmux and its libraries, terminfo, C.UTF-8,
 * /etc/passwd with root and a `gc` user (uid 1000), a world-writable /tmp.
 */
export async function testRootfsTar(): Promise<{ path: string; tag: string }> {
  const inputs = await imageInputs();
  const h = createHash("sha256");
  for (const p of [inputs.busybox, ...inputs.files, ...inputs.dirs]) {
    const st = await stat(p);
    h.update(`${p}:${st.size}:${st.mtimeMs}\n`);
  }
  h.update("layout-v1");
  const tag = h.digest("hex").slice(0, 16);
  const out = join(cacheDir(), `rootfs-${tag}.tar`);
  if (existsSync(out)) return { path: out, tag };
  await mkdir(cacheDir(), { recursive: true });
  const stage = await mkdtemp(join(tmpdir(), "gc-rootfs-"));
  try {
    await chmod(stage, 0o755);
    for (const d of ["bin", "etc", "root", "home/gc", "run", "var/lib", "usr/bin"]) {
      await mkdir(join(stage, d), { recursive: true, mode: 0o755 });
    }
    await mkdir(join(stage, "tmp"), { mode: 0o1777 });
    await chmod(join(stage, "tmp"), 0o1777);
    await copyFile(inputs.busybox, join(stage, "bin/busybox"));
    await chmod(join(stage, "bin/busybox"), 0o755);
    const applets = (await run([inputs.busybox, "--list"], { timeoutMs: 10_000 })).stdout.split("\n");
    for (const a of applets) {
      if (!/^[a-z0-9_.[-]+$/i.test(a) || a === "busybox") continue;
      await symlink("busybox", join(stage, "bin", a)).catch(() => undefined);
    }
    for (const f of inputs.files) {
      await mkdir(join(stage, dirname(f)), { recursive: true });
      await copyFile(f, join(stage, f));
      await chmod(join(stage, f), 0o755);
    }
    for (const d of inputs.dirs) await cp(d, join(stage, d), { recursive: true, dereference: true });
    await writeFile(
      join(stage, "etc/passwd"),
      "root:x:0:0:root:/root:/bin/sh\ngc:x:1000:1000:gc:/home/gc:/bin/sh\n",
    );
    await writeFile(join(stage, "etc/group"), "root:x:0:\ngc:x:1000:\n");
    await run(["chown", "1000:1000", join(stage, "home/gc")], { timeoutMs: 10_000 });
    const tmp = `${out}.${process.pid}.tmp`;
    const r = await run(["tar", "--numeric-owner", "-C", stage, "-cf", tmp, "."], { timeoutMs: 60_000 });
    if (r.exitCode !== 0) throw new Error(`tar: ${r.stderr}`);
    await rename(tmp, out);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  return { path: out, tag };
}

/**
 * Makes sure the engine at `socketPath` has the test image (imported from the cached rootfs
 * when missing) and returns its reference `gc-test-tmux:<hash>`.
 */
export async function ensureTestImage(socketPath: string): Promise<string> {
  const { path, tag } = await testRootfsTar();
  const ref = `${TEST_IMAGE_REPO}:${tag}`;
  const { default: Docker } = await import("dockerode");
  const docker = new Docker({ socketPath });
  try {
    await docker.getImage(ref).inspect();
    return ref;
  } catch {
    // not there yet: import it
  }
  const stream = (await docker.importImage(createReadStream(path), {
    repo: TEST_IMAGE_REPO,
    tag,
    changes: ["ENV PATH=/usr/local/bin:/usr/bin:/bin", 'CMD ["/bin/sh"]'],
  } as never)) as unknown as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve()));
  });
  await docker.getImage(ref).inspect();
  return ref;
}
