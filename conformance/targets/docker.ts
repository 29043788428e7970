/**
 * Conformance target for the docker provider against a real engine: the one named by
 * `GC_TEST_DOCKER_HOST` (or `DOCKER_HOST`) when set, else a private dockerd started here
 * (and stopped by its pid in `cleanup`). The image is `GC_TEST_DOCKER_IMAGE` when set (it
 * needs `/bin/sh` and tmux), else the locally built busybox + tmux test image. Work dirs
 * are host temp dirs bind-mounted at the same path, so files are read locally; pids are
 * checked inside the container; foreign containers are made with the very container name
 * this city would use but another city's label.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isGcError } from "../../internal/base/errors.js";
import {
  createProvider,
  LABEL_CITY,
  LABEL_SESSION,
  socketFromHost,
} from "../../internal/runtime/docker/index.js";
import { ensureTestImage, type PrivateEngine, startPrivateEngine } from "../docker-engine.js";
import type { ConformanceTarget } from "../harness.js";
import { readLocalFile } from "../harness.js";

/** A docker target on a private (or the configured) engine, with a fresh city identity. */
export async function createTarget(): Promise<ConformanceTarget> {
  const configured = process.env.GC_TEST_DOCKER_HOST || process.env.DOCKER_HOST;
  let engine: PrivateEngine | undefined;
  let socketPath: string;
  if (configured) {
    const s = socketFromHost(configured);
    if (!s) throw new Error(`docker host ${JSON.stringify(configured)} is not a unix socket`);
    socketPath = s;
  } else {
    engine = await startPrivateEngine();
    socketPath = engine.socketPath;
  }
  const rand = Math.random().toString(36).slice(2, 8);
  const root = await mkdtemp(join(tmpdir(), "gc-docker-conf-"));
  try {
    const image = process.env.GC_TEST_DOCKER_IMAGE || (await ensureTestImage(socketPath));
    const stateDir = join(root, ".gc");
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    const provider = createProvider({
      city: `conf-${rand}`,
      cityDir: root,
      stateDir,
      settings: { host: socketPath, image },
    });
    const foreign: string[] = [];
    let dirs = 0;
    return {
      label: "docker",
      provider,
      namePrefix: `dk.${process.pid}.`,
      timeScale: 2,
      async makeConfig(command, extra) {
        const workDir = join(root, `work-${++dirs}`);
        await mkdir(workDir, { recursive: true });
        return { command, workDir, env: {}, ...extra };
      },
      readFile: (_name, cfg, rel) => readLocalFile(cfg.workDir, rel),
      async pidAlive(name, pid) {
        try {
          const r = await provider.execCommand(name, ["kill", "-0", String(pid)]);
          return r.exitCode === 0;
        } catch (e) {
          if (isGcError(e, "GC_SESSION_NOT_FOUND")) return false;
          throw e;
        }
      },
      async createForeign(name) {
        const d = await provider.engine.docker();
        const c = await d.createContainer({
          name: provider.containerName(name),
          Image: image,
          Cmd: ["sleep", "300"],
          Labels: { [LABEL_CITY]: `other-${rand}`, [LABEL_SESSION]: name },
          HostConfig: { NetworkMode: "none" },
        });
        foreign.push(c.id);
        await c.start();
        return async () => {
          await c.remove({ force: true }).catch(() => undefined);
        };
      },
      async cleanup() {
        try {
          const d = await provider.engine.docker();
          // Whatever a failed case left behind: only this run's containers (its city label).
          const left = await d.listContainers({ all: true, filters: { label: [provider.ownerLabel] } });
          for (const c of left)
            await d
              .getContainer(c.Id)
              .remove({ force: true })
              .catch(() => undefined);
          for (const id of foreign)
            await d
              .getContainer(id)
              .remove({ force: true })
              .catch(() => undefined);
        } finally {
          await provider.close();
          await engine?.stop();
          await rm(root, { recursive: true, force: true });
        }
      },
    };
  } catch (e) {
    await engine?.stop();
    await rm(root, { recursive: true, force: true });
    throw e;
  }
}
