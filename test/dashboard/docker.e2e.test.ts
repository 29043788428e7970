/**
 * `gc dashboard` on the docker provider (a private real dockerd): the session's screen
 * reaches the API with its colours — tmux `capture-pane -e` run in the container — while the
 * peek text stays plain.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";
import { DOCKER_SKIP, startTestEngine, type TestEngine } from "../support/docker.js";
import { getJson, sse, startDashboard } from "./support.js";

describe.skipIf(DOCKER_SKIP !== undefined)(
  `gc dashboard on docker${DOCKER_SKIP ? ` (skipped: ${DOCKER_SKIP})` : ""}`,
  { timeout: 240_000 },
  () => {
    let te: TestEngine;
    beforeAll(async () => {
      te = await startTestEngine();
    }, 120_000);
    afterAll(async () => {
      await te?.engine.stop();
    }, 60_000);

    it("the screen carries the program's SGR colours (styled), the peek text none", async () => {
      const command = "printf '\\033[32mGREEN\\033[0m plain\\n'; exec sleep 100000";
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: docker
  docker:
    host: ${te.socketPath}
    image: ${te.image}
daemon:
  interval: 1h
agents:
  - name: painter
    start_command: ${JSON.stringify(command)}
`);
      const started = await city.gc(["start"]);
      expect(started.code, started.stderr).toBe(0);
      const d = await startDashboard(city);
      const detail = () =>
        getJson<{ screenSource: string; peek: { text: string } }>(d, "/api/sessions/painter");
      await expect.poll(async () => (await detail()).peek.text, { timeout: 30_000 }).toContain("GREEN plain");
      const plain = await detail();
      expect(plain.screenSource).toBe("styled");
      expect(plain.peek.text).not.toContain("\x1b");

      const events = await sse(d.port, `/api/events?token=${d.token}&session=painter`, (es) =>
        es.some((e) => e.event === "screen" && e.data.includes("GREEN")),
      );
      const frame = JSON.parse(
        events.find((e) => e.event === "screen" && e.data.includes("GREEN"))!.data,
      ) as {
        source: string;
        data: string;
      };
      expect(frame.source).toBe("styled");
      expect(frame.data).toMatch(/\x1b\[32mGREEN\x1b\[(0|39)?m plain/);
    });
  },
);
