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

const AGENT = fileURLToPath(new URL("./fixtures/preset-agent.py", import.meta.url));

/**
 * A city of one agent `a` on `provider` whose custom preset runs preset-agent.py `mode`
 * (through `env`, so the preset layers over no builtin: `python3` would bring the python
 * preset's ready prompt).
 */
const agentCity = (provider: string, mode: string, preset: string, agent = "") => `workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
providers:
  fake:
    command: env
    args: [python3, ${JSON.stringify(AGENT)}, ${mode}]
    prompt_mode: none
${preset}agents:
  - name: a
    provider: fake
${agent}`;

const readOr = (path: string, dflt = ""): string => (existsSync(path) ? readFileSync(path, "utf8") : dflt);
/** The submissions preset-agent.py recorded (one JSON string per line). */
const submissions = (dir: string): string[] =>
  readOr(join(dir, "submitted.out"))
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as string);

interface WorkRow {
  name: string;
  work: { state: string; message?: string };
}
async function workOf(c: ReturnType<typeof makeCity>): Promise<WorkRow["work"] | undefined> {
  const r = await c.gc(["status", "--json"]);
  return (JSON.parse(r.stdout) as { sessions: WorkRow[] }).sessions.find((s) => s.name === "a")?.work;
}

describe.each([
  ["subprocess", true],
  ["tmux", hasTmux],
])("a custom preset's screen knowledge takes effect (%s)", (provider, available) => {
  it.skipIf(!available)(
    "providers.*.ready_markers: start waits for the marker (no prompt line), so the initial nudge lands",
    { timeout: 90_000 },
    async () => {
      const c = makeCity(
        agentCity(provider, "late", "    ready_markers: ['Type your message']\n", "    nudge: hello\n"),
      );
      const r = await c.gc(["start", "--once"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(submissions(c.dir)).toEqual(["hello"]);
      expect(readOr(join(c.dir, "dropped.out"))).toBe("");
      await c.gc(["stop"]);

      // Without the marker nothing tells start the program is not ready: the nudge is typed
      // while it is still loading, and lost (start's attempt is over when it returns).
      const bare = makeCity(agentCity(provider, "late", "", "    nudge: hello\n"));
      await bare.gc(["start", "--once"]);
      expect(submissions(bare.dir)).not.toContain("hello");
      await bare.gc(["stop"]);
    },
  );

  it.skipIf(!available)(
    "providers.*.ready_settle_ms: the initial nudge waits until the prompt stood that long (no Enter swallowed)",
    { timeout: 90_000 },
    async () => {
      const c = makeCity(
        agentCity(
          provider,
          "early",
          '    ready_prompt_prefix: "› "\n    ready_settle_ms: 6500\n',
          "    nudge: hello\n",
        ),
      );
      const r = await c.gc(["start", "--once"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(submissions(c.dir)).toEqual(["hello"]);
      expect(existsSync(join(c.dir, "swallowed.out"))).toBe(false);
      await c.gc(["stop"]);

      // Without it the prompt counts as ready at once, and the program swallows the Enter.
      const eager = makeCity(
        agentCity(provider, "early", '    ready_prompt_prefix: "› "\n', "    nudge: hello\n"),
      );
      await eager.gc(["start", "--once"]);
      await expect.poll(() => existsSync(join(eager.dir, "swallowed.out")), { timeout: 10_000 }).toBe(true);
      await eager.gc(["stop"]);
    },
  );

  it.skipIf(!available)(
    "providers.*.error_markers: the CLI's own error line makes work `error` with that line",
    { timeout: 90_000 },
    async () => {
      const c = makeCity(
        agentCity(
          provider,
          "fails",
          "    ready_prompt_prefix: \"> \"\n    error_markers: ['quota exhausted']\n",
        ),
      );
      expect((await c.gc(["start", "--once"])).code).toBe(0);
      await expect.poll(async () => (await workOf(c))?.state, { timeout: 15_000 }).toBe("idle");
      const n = await c.gc(["nudge", "a", "--now", "go"]);
      expect(n.code, n.stderr).toBe(0);
      await expect
        .poll(async () => workOf(c), { timeout: 15_000 })
        .toEqual(
          expect.objectContaining({ state: "error", message: "✗ request failed: quota exhausted (E42)" }),
        );
      await c.gc(["stop"]);

      // Without the marker the same screen is an idle prompt.
      const bare = makeCity(agentCity(provider, "fails", '    ready_prompt_prefix: "> "\n'));
      expect((await bare.gc(["start", "--once"])).code).toBe(0);
      expect((await bare.gc(["nudge", "a", "--now", "go"])).code).toBe(0);
      await expect.poll(() => submissions(bare.dir), { timeout: 10_000 }).toEqual(["go"]);
      await expect.poll(async () => (await workOf(bare))?.state, { timeout: 15_000 }).toBe("idle");
      await bare.gc(["stop"]);
    },
  );

  it.skipIf(!available)(
    "providers.*.multiline: lines types and submits each line on its own; paste submits the text once",
    { timeout: 90_000 },
    async () => {
      const c = makeCity(
        agentCity(provider, "editor", '    ready_prompt_prefix: "> "\n    multiline: lines\n'),
      );
      expect((await c.gc(["start", "--once"])).code).toBe(0);
      const n = await c.gc(["nudge", "a", "--now", "one\ntwo\nthree"]);
      expect(n.code, n.stderr).toBe(0);
      expect(submissions(c.dir)).toEqual(["one", "two", "three"]);
      await c.gc(["stop"]);

      // One paste: the newline stays in the input (subprocess types it as LF; tmux's
      // paste-buffer turns it into a CR, which this program also keeps when it comes in the
      // same read, but may not when the pty splits the paste — so checked on subprocess).
      if (provider !== "subprocess") return;
      const p = makeCity(
        agentCity(provider, "editor", '    ready_prompt_prefix: "> "\n    multiline: paste\n'),
      );
      expect((await p.gc(["start", "--once"])).code).toBe(0);
      const q = await p.gc(["nudge", "a", "--now", "one\ntwo"]);
      expect(q.code, q.stderr).toBe(0);
      const once = submissions(p.dir);
      expect(once).toHaveLength(1);
      expect(once[0]).toBe("one\ntwo");
      await p.gc(["stop"]);
    },
  );
});

describe("ready_markers and error_markers are checked by gc config validate", () => {
  it("an invalid regular expression is an error naming the key", async () => {
    const c = makeCity(
      agentCity("subprocess", "fails", "    ready_markers: ['(unclosed']\n    error_markers: ['[x']\n"),
    );
    const r = await c.gc(["config", "validate"]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /providers\.fake\.ready_markers\[0\].*not a valid regular expression/,
    );
    expect(r.stdout + r.stderr).toMatch(
      /providers\.fake\.error_markers\[0\].*not a valid regular expression/,
    );
  });
});
