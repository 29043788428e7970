/**
 * Work state end to end (issue 33 item 2): the built gc, a temp city, real tmux and
 * subprocess sessions running a small fake agent (fixtures/work-agent.py) that draws a busy
 * marker gc knows while it works, asks a numbered permission question, and ends a turn on an
 * API error line. `gc status` shows WORK with its age, `--json` shows `work` and the screen's
 * last lines, the controller records `turn.started` / `turn.ended` / `work.blocked` /
 * `work.error`, and `gc wait --working | --needs-input | --idle` complete on them. Without a
 * controller, `gc status` classifies the same screens itself. On the acp provider, work comes
 * from the protocol (a running turn, a permission request), not a screen.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { testAgentPath } from "../../conformance/targets/acp.js";
import { makeCity, type TestCity } from "../support/city.js";

const AGENT = fileURLToPath(new URL("./fixtures/work-agent.py", import.meta.url));

const cityYaml = (provider: string) => `workspace:
  name: "@NAME@"
daemon:
  interval: 300ms
session:
  provider: ${provider}
  # The question is left to the operator (the default, allow-all, would approve it).
  approval: ask
agents:
  - name: w
    start_command: "python3 -u ${AGENT}"
    ready_prompt_prefix: "agent> "
`;

interface Row {
  name: string;
  state: string;
  running: boolean | null;
  restarts: number;
  work: { state: string; since: string; message?: string };
  screen?: string[];
}

async function row(city: TestCity): Promise<Row> {
  const r = await city.gc(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { sessions: Row[] }).sessions.find((s) => s.name === "w")!;
}

async function events(city: TestCity): Promise<{ type: string; payload: Record<string, unknown> }[]> {
  const r = await city.gc(["session", "logs", "w", "--events", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { events: { type: string; payload: Record<string, unknown> }[] }).events;
}

async function nudge(city: TestCity, text: string): Promise<void> {
  const r = await city.gc(["nudge", "w", "--now", text]);
  expect(r.code, r.stderr).toBe(0);
}

describe.each(["tmux", "subprocess"])("work state on %s", (provider) => {
  it("working, idle, needs-input and error: status, --json, events and gc wait", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(cityYaml(provider));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);

    // At its prompt: idle, with the screen's last lines.
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");
    const idle = await row(city);
    expect(Date.parse(idle.work.since)).toBeLessThanOrEqual(Date.now());
    expect(idle.screen?.at(-1)).toBe("agent>");
    const table = await city.gc(["status"]);
    expect(table.stdout).toMatch(/\bWORK\b/);
    expect(table.stdout).toMatch(/^w\s.*\bidle \d+[smh]\b/m);

    // A turn: gc wait --working completes once the busy marker is up, --idle once it is done.
    const working = city.gc(["wait", "w", "--working", "--timeout", "60s", "--json"]);
    await nudge(city, "work 4");
    const w = await working;
    expect(w.code, w.stderr).toBe(0);
    expect(JSON.parse(w.stdout)).toMatchObject({
      status: "completed",
      kind: "working",
      work: { state: "working" },
    });
    await expect.poll(async () => (await row(city)).work.state).toBe("working");
    const done = await city.gc(["wait", "w", "--idle", "--timeout", "60s", "--json"]);
    expect(done.code, done.stderr).toBe(0);
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");
    await expect
      .poll(async () => (await events(city)).map((e) => e.type).filter((t) => t.startsWith("turn.")))
      .toEqual(["turn.started", "turn.ended"]);
    const ended = (await events(city)).find((e) => e.type === "turn.ended")!;
    expect(ended.payload.durationMs).toBeGreaterThan(0);
    expect(typeof ended.payload.startedAt).toBe("string");

    // A question: needs-input with the question, work.blocked, gc wait --needs-input.
    const blocked = city.gc(["wait", "w", "--needs-input", "--timeout", "60s", "--json"]);
    await nudge(city, "ask");
    const b = await blocked;
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout)).toMatchObject({
      status: "completed",
      work: { state: "needs-input", message: expect.stringContaining("Do you want to create notes.txt?") },
    });
    await expect
      .poll(async () => (await row(city)).work)
      .toMatchObject({
        state: "needs-input",
        message: expect.stringContaining("Do you want to create notes.txt?"),
      });
    await expect
      .poll(async () => (await events(city)).find((e) => e.type === "work.blocked")?.payload.question)
      .toEqual(expect.stringContaining("Do you want to create notes.txt?"));
    const answered = await city.gc(["session", "respond", "w", "1"]);
    expect(answered.code, answered.stderr).toBe(0);
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");

    // An API error: error with the agent's own line, work.error, no restart.
    await nudge(city, "fail");
    await expect
      .poll(async () => (await row(city)).work)
      .toMatchObject({
        state: "error",
        message: expect.stringMatching(/^⎿ {2}API Error: 529 /),
      });
    const errTable = await city.gc(["status"]);
    expect(errTable.stdout).toMatch(/^w\s.*\berror \d+[smh]\b/m);
    expect(errTable.stdout).toMatch(/ {2}w: error — ⎿ {2}API Error: 529/);
    await expect
      .poll(async () => (await events(city)).find((e) => e.type === "work.error")?.payload.message)
      .toEqual(expect.stringContaining("API Error: 529"));
    expect((await row(city)).restarts).toBe(0);
    // The next turn works, and pushes the error line out of the screen's bottom.
    await nudge(city, "work 1");
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");
    expect((await row(city)).restarts).toBe(0);
  });
});

describe("work state without a controller", () => {
  it("gc status classifies the screen it reads itself", { timeout: 120_000 }, async () => {
    const city = makeCity(cityYaml("tmux"));
    const once = await city.gc(["start", "--once"]);
    expect(once.code, once.stderr).toBe(0);
    const st = JSON.parse((await city.gc(["status", "--json"])).stdout) as {
      controller: { running: boolean };
    };
    expect(st.controller.running).toBe(false);
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");
    await nudge(city, "work 30");
    await expect.poll(async () => (await row(city)).work.state).toBe("working");
    const table = await city.gc(["status"]);
    expect(table.stdout).toMatch(/^w\s.*\bworking \d+s\b/m);
  });
});

describe("work state on acp", () => {
  it("a running turn is working, a permission request needs input, the turn's end is idle", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
daemon:
  interval: 300ms
session:
  provider: acp
  approval: ask
agents:
  - name: w
    start_command: ${JSON.stringify(`exec ${process.execPath} ${testAgentPath()}`)}
`);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");
    const working = city.gc(["wait", "w", "--working", "--timeout", "60s", "--json"]);
    await nudge(city, "slow 4000");
    const w = await working;
    expect(w.code, w.stderr).toBe(0);
    expect(JSON.parse(w.stdout)).toMatchObject({ status: "completed", work: { state: "working" } });
    await expect.poll(async () => (await row(city)).work.state).toBe("working");
    await expect.poll(async () => (await row(city)).work.state, { timeout: 30_000 }).toBe("idle");
    await expect
      .poll(async () =>
        (await events(city)).map((e) => e.type).filter((t) => /^turn\.(started|ended)$/.test(t)),
      )
      .toEqual(["turn.started", "turn.ended"]);

    const blocked = city.gc(["wait", "w", "--needs-input", "--timeout", "60s", "--json"]);
    await nudge(city, "permission to clean up");
    const b = await blocked;
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout)).toMatchObject({
      status: "completed",
      work: { state: "needs-input", message: expect.stringContaining("Delete build/") },
    });
    await expect
      .poll(async () => (await events(city)).find((e) => e.type === "work.blocked")?.payload.question)
      .toEqual(expect.stringContaining("Delete build/"));
    const answered = await city.gc(["session", "respond", "w", "allow-once"]);
    expect(answered.code, answered.stderr).toBe(0);
    await expect.poll(async () => (await row(city)).work.state).toBe("idle");
  });
});
