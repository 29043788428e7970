/**
 * End-to-end on a real dockerd with the built `gc`: a 5-agent city on the docker provider
 * starts, one agent drifts and is restarted alone, `gc exec`/`gc peek` reach the containers,
 * the engine is restarted under the running controller and the reconciler restarts what
 * died, and `gc stop` leaves no container with the city's ownership label.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerName, LABEL_CITY } from "../../internal/runtime/docker/index.js";
import { ownerKey } from "../../internal/runtime/identity.js";
import { makeCity, storedCityId, type TestCity, until } from "../support/city.js";
import { DOCKER_SKIP, startTestEngine, type TestEngine } from "../support/docker.js";

interface StatusRow {
  name: string;
  state: string;
  running: boolean;
  drift: string;
  restarts: number;
  infraLosses: number;
}

async function status(city: TestCity): Promise<StatusRow[]> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) throw new Error(`gc status failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { sessions: StatusRow[] }).sessions;
}

/** The city's ownership key, as its docker labels and container names carry it. */
const owner = (city: TestCity) => ownerKey(city.name, storedCityId(city.dir));

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

    it("an engine restart is an infrastructure loss (RESTARTS unchanged, infraLosses counted); a program's own exit is still a crash", async () => {
      // quarantine threshold 2: one crash more than the engine restart would quarantine.
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: docker
  docker: { host: ${te.socketPath}, image: ${te.image} }
daemon:
  interval: 1h
  backoff: { min: 0s, max: 1s }
  quarantine: { threshold: 2, window: 1h }
agents:
  - name: i1
    start_command: "exec sleep 100000"
    work_dir: ./i1
  - name: i2
    start_command: "exec sleep 100000"
    work_dir: ./i2
  - name: c
    start_command: "while [ ! -e end ]; do sleep 0.2; done; rm -f end; exit 3"
    work_dir: ./c
`);
      const names = ["c", "i1", "i2"];
      const idsOf = async (): Promise<Record<string, string | undefined>> => {
        const { default: Docker } = await import("dockerode");
        const d = new Docker({ socketPath: te.socketPath });
        const out: Record<string, string | undefined> = {};
        for (const n of names) {
          const info = await d
            .getContainer(containerName(owner(city), n))
            .inspect()
            .catch(() => undefined);
          out[n] = info?.State.Running ? info.Id : undefined;
        }
        return out;
      };
      const rows = async () => Object.fromEntries((await status(city)).map((r) => [r.name, r]));
      expect((await city.gc(["start"], { timeoutMs: 240_000 })).code).toBe(0);
      await until(
        "3 running sessions",
        async () => {
          const r = await rows();
          return names.every((n) => r[n]?.running && r[n]?.state === "running");
        },
        120_000,
      );
      const before = await idsOf();

      await te.engine.restart();
      await until(
        "every session started again in a new container",
        async () => {
          await city.gc(["reconcile"]);
          const now = await idsOf();
          const r = await rows();
          return names.every(
            (n) => now[n] !== undefined && now[n] !== before[n] && r[n]?.state === "running",
          );
        },
        180_000,
      );
      for (const r of Object.values(await rows())) {
        expect(r.restarts, r.name).toBe(0); // not a crash restart
        expect(r.infraLosses, r.name).toBe(1);
        expect(r.state, r.name).toBe("running");
      }
      for (const n of names) {
        const ev = await city.gc(["session", "logs", n, "--events", "--json"]);
        expect(ev.stdout, n).toContain("session.infrastructure-lost");
      }

      // The program of c exits with status 3 by itself: a crash, counted as always.
      const afterEngine = await idsOf();
      writeFileSync(join(city.dir, "c", "end"), "");
      await until(
        "c restarted after its crash",
        async () => {
          await city.gc(["reconcile"]);
          const r = await rows();
          const now = await idsOf();
          return r.c?.restarts === 1 && r.c.state === "running" && now.c !== afterEngine.c && r;
        },
        120_000,
      );
      const after = await rows();
      expect(after.c?.infraLosses).toBe(1);
      expect(after.i1).toMatchObject({ restarts: 0, infraLosses: 1, state: "running" });
      expect(after.i2).toMatchObject({ restarts: 0, infraLosses: 1, state: "running" });
    });

    it("a program that exits at once: gc start reports its death, as on the other providers, and status agrees", async () => {
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: docker
  docker: { host: ${te.socketPath}, image: ${te.image} }
daemon:
  interval: 1h
  backoff: { min: 1h, max: 1h }
agents:
  - name: quick
    start_command: "sh -c 'exit 3'"
    work_dir: ./quick
    # Readiness looks after 1 s: by then the program has surely exited (without a wait, a
    # start's last look can come before the exit on a loaded machine, and it is a crash later).
    ready_delay_ms: 1000
`);
      const r = await city.gc(["start", "--once", "--json"], { timeoutMs: 120_000 });
      expect(r.code, `signal ${r.signal}\n${r.stdout}\n${r.stderr}`).toBe(1); // an action failed
      const out = JSON.parse(r.stdout) as { summary: { failed: { name: string; error: string }[] } };
      expect(out.summary.failed.map((f) => f.name)).toEqual(["quick"]);
      expect(out.summary.failed[0]?.error).toMatch(/died during startup: the program exited/);
      const row = (await status(city)).find((x) => x.name === "quick");
      expect(row).toMatchObject({ running: false, state: "backoff" });
    });
  },
);
