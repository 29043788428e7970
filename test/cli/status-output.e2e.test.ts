/**
 * `gc status` exits as soon as its output is written (Command.exitWhenDone), never before:
 * a table and a JSON document larger than a pipe's buffer arrive whole, the last row included.
 */
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";

const AGENTS = 1_500; // ~120 KB of table: more than a pipe holds (64 KB)

const yaml = `workspace:
  name: @NAME@
session:
  provider: subprocess
agents:
${Array.from({ length: AGENTS }, (_, k) => `  - name: agent-with-a-long-name-${k}\n    start_command: "exec sleep 100000"\n`).join("")}`;

describe("gc status output", () => {
  it("a table and a JSON document bigger than a pipe arrive whole before the process exits", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(yaml);
    const text = await city.gc(["status"]);
    expect(text.code).toBe(0);
    const rows = text.stdout.split("\n").filter((l) => l.startsWith("agent-with-a-long-name-"));
    expect(rows).toHaveLength(AGENTS);
    expect(rows.at(-1)).toMatch(new RegExp(`^agent-with-a-long-name-${AGENTS - 1}\\s`));
    expect(text.stdout.length).toBeGreaterThan(64 * 1024);

    const json = await city.gc(["status", "--json"]);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { sessions: { name: string; state: string }[] };
    expect(doc.sessions).toHaveLength(AGENTS);
    expect(doc.sessions.every((s) => s.state === "new")).toBe(true);
  });
});
