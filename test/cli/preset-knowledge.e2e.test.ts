/**
 * End-to-end: a city teaches gc about a CLI it does not know (a custom preset): its busy
 * marker keeps `gc run` from taking a turn's pause for its end, and its interrupt key
 * (Escape) ends the turn on `--timeout` where Ctrl-C would quit the program. The built `gc`
 * on subprocess and tmux, against test/fixtures/input-programs.py `turns`. An invalid marker
 * is refused by `gc config validate`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";

const PROGRAMS = fileURLToPath(new URL("../fixtures/input-programs.py", import.meta.url));
const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

const city = (provider: string, preset: string) => `workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
providers:
  splines:
    command: python3
    args: [${JSON.stringify(PROGRAMS)}, turns]
    prompt_mode: none
    ready_prompt_prefix: "> "
${preset}agents:
  - name: a
    provider: splines
`;

describe.each([
  ["subprocess", true],
  ["tmux", hasTmux],
])("a custom preset's busy marker and interrupt key (%s)", (provider, available) => {
  it.skipIf(!available)(
    "gc run --timeout: busy while the marker shows, interrupted with Escape, the program lives",
    async () => {
      const c = makeCity(
        city(
          provider,
          `    busy_markers: ['\\(\\d+s · esc to cancel\\)']
    interrupt_keys: [Escape]
`,
        ),
      );
      const r = await c.gc(["start", "--once"]);
      expect(r.code, r.stderr).toBe(0);
      const run = await c.gc(["run", "a", "work", "--timeout", "4s", "--json"]);
      const report = JSON.parse(run.stdout) as { status: string; output: string };
      expect(report.status, run.stdout + run.stderr).toBe("timeout");
      expect(readFileSync(join(c.dir, "submitted.out"), "utf8")).toBe("work\n");
      await expect.poll(() => existsSync(join(c.dir, "interrupted.out")), { timeout: 10_000 }).toBe(true);
      expect(existsSync(join(c.dir, "quit.out"))).toBe(false);
      const st = await c.gc(["status", "--json"]);
      expect(st.stdout).toMatch(/"running"/);
      await c.gc(["stop"]);
    },
  );

  it.skipIf(!available)(
    "each key takes effect: without the marker the pause is taken for the end; without the key Ctrl-C quits it",
    async () => {
      const noMarker = makeCity(city(provider, "    interrupt_keys: [Escape]\n"));
      expect((await noMarker.gc(["start", "--once"])).code).toBe(0);
      const early = JSON.parse(
        (await noMarker.gc(["run", "a", "work", "--timeout", "6s", "--json"])).stdout,
      ) as {
        status: string;
      };
      expect(early.status).toBe("completed");
      await noMarker.gc(["stop"]);

      const noKey = makeCity(city(provider, "    busy_markers: ['\\(\\d+s · esc to cancel\\)']\n"));
      expect((await noKey.gc(["start", "--once"])).code).toBe(0);
      const run = JSON.parse((await noKey.gc(["run", "a", "work", "--timeout", "3s", "--json"])).stdout) as {
        status: string;
      };
      expect(run.status).toBe("timeout");
      await expect.poll(() => existsSync(join(noKey.dir, "quit.out")), { timeout: 10_000 }).toBe(true);
      await noKey.gc(["stop"]);
    },
  );
});

describe("busy_markers are checked by gc config validate", () => {
  it("an invalid regular expression is an error naming the key", async () => {
    const c = makeCity(city("subprocess", "    busy_markers: ['(unclosed']\n"));
    const r = await c.gc(["config", "validate"]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /providers\.splines\.busy_markers\[0\].*not a valid regular expression/,
    );
  });
});
