/**
 * ACP end to end through the built `gc`: a city of two ACP test agents (real processes on
 * the official SDK's agent side) on the acp provider. `gc run` returns each agent's reply and
 * stop reason; a permission request shows in `gc status`, is answered with
 * `gc session respond`, and its turn completes; a controller SIGKILLed in the middle of a
 * turn does not lose it: the turn completes in the holder and is recorded as a
 * `turn.finished` event once the controller is back.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { testAgentPath } from "../../conformance/targets/acp.js";
import { GC_BIN, makeCity, until } from "../support/city.js";

const AGENT = JSON.stringify(`exec ${process.execPath} ${testAgentPath()}`);

const CITY = `workspace:
  name: "@NAME@"
session:
  provider: acp
  approval: ask
daemon:
  interval: 500ms
agents:
  - name: alpha
    start_command: ${AGENT}
  - name: beta
    start_command: ${AGENT}
    prompt: "hello from the city file"
    prompt_mode: nudge
`;

interface RunJson {
  status: string;
  output: string;
  stopReason?: string;
  turn?: number;
  toolCalls?: { title: string; status: string }[];
  reason?: string;
}

async function turnEvents(city: ReturnType<typeof makeCity>, session: string) {
  const r = await city.gc(["session", "logs", session, "--events", "--json"]);
  const events = (JSON.parse(r.stdout) as { events: { type: string; payload: Record<string, unknown> }[] })
    .events;
  return events.filter((e) => e.type === "turn.finished").map((e) => e.payload);
}

describe("acp provider through gc", { timeout: 180_000 }, () => {
  it("gc run returns each agent's reply; a permission request is answered with gc session respond", async () => {
    const city = makeCity(CITY);
    const start = await city.gc(["start", "--json"]);
    expect(start.code, start.stderr).toBe(0);

    const a = await city.gc(["run", "alpha", "what is 2+2?", "--json"]);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const ra = JSON.parse(a.stdout) as RunJson;
    expect(ra).toMatchObject({
      status: "completed",
      output: "echo: what is 2+2?",
      stopReason: "end_turn",
      turn: 1,
    });

    // beta's first turn was its initial prompt (session/prompt after session/new); this is turn 2.
    const b = await city.gc(["run", "beta", "tool please", "--json"]);
    const rb = JSON.parse(b.stdout) as RunJson;
    expect(rb).toMatchObject({ status: "completed", output: "tool done", stopReason: "end_turn", turn: 2 });
    expect(rb.toolCalls).toEqual([
      { id: "call-1", title: "Reading notes.txt", kind: "read", status: "completed" },
    ]);
    const prompts = (await turnEvents(city, "beta")).map((p) => String(p.prompt));
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toMatch(/^\[.*\] beta • .*\n\nhello from the city file$/); // beacon + prompt
    expect(prompts[1]).toBe("tool please");

    // A turn that asks permission: visible in gc status, answered by the operator.
    const run = spawn(
      process.execPath,
      [GC_BIN, "--city", city.dir, "run", "alpha", "permission to delete", "--json"],
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, NO_COLOR: "1" },
      },
    );
    let out = "";
    run.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const exited = new Promise<number | null>((r) => run.on("close", r));
    const status = await until("the permission request in gc status", async () => {
      const s = JSON.parse((await city.gc(["status", "--json"])).stdout) as {
        sessions: { name: string; interaction?: { kind: string; question: string; options: string[] } }[];
      };
      return s.sessions.find((x) => x.name === "alpha")?.interaction;
    });
    expect(status).toMatchObject({ kind: "permission", question: "Delete build/" });
    expect(status.options).toEqual(["allow-once", "allow-always", "reject-once"]);
    const answer = await city.gc(["session", "respond", "alpha", "allow-once"]);
    expect(answer.code, answer.stderr).toBe(0);
    expect(await exited).toBe(0);
    expect(JSON.parse(out)).toMatchObject({
      status: "completed",
      output: "permission: allow-once",
      stopReason: "end_turn",
    });

    const peek = await city.gc(["peek", "alpha", "-n", "0"]);
    expect(peek.stdout).toContain("[tool] Delete build/ (completed)");
    expect(peek.stdout).toContain("permission: allow-once");
  });

  it("a controller SIGKILLed mid-turn: the turn completes and is recorded after restart", async () => {
    const city = makeCity(CITY);
    expect((await city.gc(["start"])).code).toBe(0);
    const ctl = Number(readFileSync(join(city.dir, ".gc", "controller.pid"), "utf8").trim());
    // Queue a slow turn without waiting for it (the controller records it when it ends).
    const nudge = await city.gc(["nudge", "alpha", "slow 3000", "--now"]);
    expect(nudge.code, nudge.stderr).toBe(0);
    await until("the turn running", async () => (await city.gc(["peek", "alpha"])).stdout.includes("tick 1"));
    process.kill(ctl, "SIGKILL");
    // The holder keeps the agent and the turn going without any controller.
    await until("the turn to end in the holder", async () =>
      (await city.gc(["peek", "alpha"])).stdout.includes("[turn 1 ended: end_turn]"),
    );
    expect(await turnEvents(city, "alpha")).toEqual([]);
    expect((await city.gc(["start"])).code).toBe(0);
    const recorded = await until("the turn recorded after restart", async () => {
      const t = await turnEvents(city, "alpha");
      return t.length > 0 ? t : undefined;
    });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ turn: 1, prompt: "slow 3000", stopReason: "end_turn" });
    expect(String(recorded[0]?.reply)).toContain("slow done after");
    // Adopted, not restarted: the same agent process answers the next turn.
    const again = JSON.parse((await city.gc(["run", "alpha", "still you?", "--json"])).stdout) as RunJson;
    expect(again).toMatchObject({ status: "completed", output: "echo: still you?", turn: 2 });
  });
});
