/**
 * End-to-end on a real dockerd with the built `gc`: a 5-agent city on the docker provider
 * starts, one agent drifts and is restarted alone, `gc exec`/`gc peek` reach the containers,
 * the engine is restarted under the running controller and the reconciler restarts what
 * died, and `gc stop` leaves no container with the city's ownership label.
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerName, LABEL_CITY } from "../../internal/runtime/docker/index.js";
import { cityIdOf, ownerKey } from "../../internal/runtime/identity.js";
import { makeCity, type TestCity, until } from "../support/city.js";
import { DOCKER_SKIP, startTestEngine, type TestEngine } from "../support/docker.js";

interface StatusRow {
  name: string;
  state: string;
  running: boolean;
  drift: string;
}

async function status(city: TestCity): Promise<StatusRow[]> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { sessions: StatusRow[] }).sessions;
}

/** The city's ownership key, as its docker labels and container names carry it. */
const owner = (city: TestCity) => ownerKey(city.name, cityIdOf(city.dir));

const AGENTS = ["a1", "a2", "a3", "a4", "a5"];

function cityYaml(te: TestEngine, a3 = "exec sleep 100000", memory = "256m"): string {
  const agents = AGENTS.map(
    (a) => `  - name: ${a}
    start_command: "echo READY-${a}; ${a === "a3" ? a3 : "exec sleep 100000"}"
    work_dir: ./${a}
    env: { ROLE: ${a} }`,
  ).join("\n");
  return `workspace:
  name: @NAME@
session:
  provider: docker
  docker:
    host: ${te.socketPath}
    image: ${te.image}
    memory: ${memory}
daemon:
  interval: 1h
  backoff: { min: 0s, max: 1s }
agents:
${agents}
`;
}

describe.skipIf(DOCKER_SKIP !== undefined)(
  `gc on the docker provider${DOCKER_SKIP ? ` (skipped: ${DOCKER_SKIP})` : ""}`,
  { timeout: 300_000 },
  () => {
    let te: TestEngine;
    beforeAll(async () => {
      te = await startTestEngine();
    }, 120_000);
    afterAll(async () => {
      await te?.engine.stop();
    }, 60_000);

    const ids = async (city: TestCity): Promise<Record<string, string>> => {
      const { default: Docker } = await import("dockerode");
      const d = new Docker({ socketPath: te.socketPath });
      const out: Record<string, string> = {};
      for (const a of AGENTS) {
        const info = await d
          .getContainer(containerName(owner(city), a))
          .inspect()
          .catch(() => undefined);
        if (info) out[a] = info.Id;
      }
      return out;
    };
    const allRunning = async (city: TestCity) => {
      const rows = await status(city);
      return rows.length === 5 && rows.every((r) => r.running && r.state === "running" && r.drift === "none");
    };

    it("5 agents start, one drifts alone, survive an engine restart, and stop leaves no container", async () => {
      const city = makeCity(cityYaml(te));
      const started = await city.gc(["start"], { timeoutMs: 240_000 });
      expect(started.stderr).toBe("");
      expect(started.code).toBe(0);
      await until("5 running sessions", () => allRunning(city), 120_000);
      const first = await ids(city);
      expect(Object.keys(first).sort()).toEqual(AGENTS);

      // gc exec and gc peek go through the Docker exec API into the container.
      const ex = await city.gc(["exec", "a2", "--", "sh", "-c", 'printf "%s:%s" "$GC_SESSION" "$ROLE"']);
      expect(ex.stdout).toBe("a2:a2");
      await until("the program's output in peek", async () =>
        (await city.gc(["peek", "a4"])).stdout.includes("READY-a4"),
      );

      // Drift one agent: exactly its container is replaced.
      city.write(cityYaml(te, "exec sleep 100001"));
      expect((await city.gc(["reconcile"])).code).toBe(0);
      await until(
        "a3 restarted with its new command",
        async () => {
          const now = await ids(city);
          return now.a3 !== undefined && now.a3 !== first.a3 && (await allRunning(city));
        },
        120_000,
      );
      const drifted = await ids(city);
      for (const a of AGENTS.filter((x) => x !== "a3")) expect(drifted[a]).toBe(first[a]);

      // An edit of session.docker (a limit here; the image the same way) is drift of every
      // session on it, and the running controller remakes them with the new settings.
      city.write(cityYaml(te, "exec sleep 100001", "300m"));
      const shown = await city.gc(["drift"]);
      expect(shown.stdout).toContain("providerSettings.memory");
      expect((await city.gc(["reconcile"])).code).toBe(0);
      const memories = async () => {
        const { default: Docker } = await import("dockerode");
        const d = new Docker({ socketPath: te.socketPath });
        return Promise.all(
          AGENTS.map(
            async (a) => (await d.getContainer(containerName(owner(city), a)).inspect()).HostConfig.Memory,
          ),
        );
      };
      await until(
        "every container remade with the new memory limit",
        async () => (await memories()).every((m) => m === 300 * 1024 * 1024) && (await allRunning(city)),
        180_000,
      );
      const afterDrift = await ids(city);
      for (const a of AGENTS) expect(afterDrift[a]).not.toBe(drifted[a]);

      // The engine restarts under the running controller: every container died with it.
      await te.engine.restart();
      await until(
        "the controller to see and restart what died",
        async () => {
          await city.gc(["reconcile"]);
          const now = await ids(city);
          return (
            AGENTS.every((a) => now[a] !== undefined && now[a] !== afterDrift[a]) && (await allRunning(city))
          );
        },
        180_000,
      );

      const stop = await city.gc(["stop"], { timeoutMs: 120_000 });
      expect(stop.code).toBe(0);
      const ps = spawnSync(
        "docker",
        ["-H", `unix://${te.socketPath}`, "ps", "-a", "-q", "--filter", `label=${LABEL_CITY}=${owner(city)}`],
        { encoding: "utf8" },
      );
      expect(ps.status).toBe(0);
      expect(ps.stdout.trim()).toBe("");
    });
  },
);
