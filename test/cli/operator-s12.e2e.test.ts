/**
 * What an operator running exec-script, pool and tmux cities met in session 12
 * (docs/decisions.md, "An operator's hour on exec scripts, pools and the session commands"):
 * a provider that cannot be observed leaves RUNNING unknown ("?", null), never "no".
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";

/** The exec mock: sessions are directories, nothing runs; MOCK_* switches make it misbehave. */
const MOCK = fileURLToPath(new URL("../fixtures/exec/mock-session.sh", import.meta.url));

interface Row {
  name: string;
  running: boolean | null;
}

describe("a provider that cannot be observed", () => {
  it("gc status and gc session list show RUNNING unknown, not no, and say why", {
    timeout: 60_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: "@NAME@"
session:
  provider: exec:${MOCK}
agents:
  - name: a
    start_command: "sleep 1000"
  - name: b
    start_command: "sleep 1000"
`);
    const started = await city.gc(["start", "--once"]);
    expect(started.code, started.stderr).toBe(0);
    // The user's script prints a log line on stdout: its listing cannot be read.
    const env = { MOCK_GARBAGE: "list-running", MOCK_TEXT: "DEBUG: connecting" };

    const json = await city.gc(["status", "--json"], { env });
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout) as { sessions: Row[]; observeErrors: { error: string }[] };
    expect(doc.sessions.map((s) => [s.name, s.running])).toEqual([
      ["a", null],
      ["b", null],
    ]);
    expect(doc.observeErrors[0]?.error).toContain("DEBUG: connecting");

    const text = await city.gc(["status"], { env });
    expect(text.code, text.stderr).toBe(0);
    const rowA = text.stdout.split("\n").find((l) => l.startsWith("a "));
    expect(rowA?.split(/\s+/)[4]).toBe("?"); // NAME AGENT PROVIDER STATE RUNNING
    expect(text.stderr).toContain("cannot observe provider");

    const list = await city.gc(["session", "list"], { env });
    expect(list.code, list.stderr).toBe(0);
    const listA = list.stdout.split("\n").find((l) => l.startsWith("a "));
    expect(listA?.split(/\s+/)[3]).toBe("?"); // NAME AGENT STATE RUNNING
    expect(list.stderr).toContain("cannot observe provider");
    const listJson = await city.gc(["session", "list", "--json"], { env });
    const rows = (JSON.parse(listJson.stdout) as { sessions: Row[] }).sessions;
    expect(rows.map((s) => s.running)).toEqual([null, null]);

    // Once the script answers again, the sessions read as running.
    const fine = JSON.parse((await city.gc(["status", "--json"])).stdout) as { sessions: Row[] };
    expect(fine.sessions.map((s) => s.running)).toEqual([true, true]);
  });
});
