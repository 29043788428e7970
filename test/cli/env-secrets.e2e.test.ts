/**
 * A value interpolated from the environment never reaches the disk in clear, whatever the
 * variable's name: `DB_URL: "postgres://u:${DBPW}@h/db"` — DBPW does not look secret — is
 * in none of the city's state files (state.db with its fingerprint breakdowns, the desired
 * digest, the parse cache, the controller log) after gc start, gc status and gc drift.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeCity, until } from "../support/city.js";
import { onPath } from "../support/path.js";

const VALUE = "pw-7f3a9c1e5b2d";

/** Every file under `dir` (recursively) whose bytes contain `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) out.push(...filesHolding(p, needle));
    else if (st.isFile() && readFileSync(p).includes(needle)) out.push(p);
  }
  return out;
}

describe("values from the environment on disk", () => {
  it("an interpolated value under a name that does not look secret is in no state file", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
    env:
      DB_URL: "postgres://u:\${DBPW}@h/db"
`);
    const env = { DBPW: VALUE };
    expect((await city.gc(["start"], { env })).code).toBe(0);
    await until("a runs", async () => (await city.gc(["status"], { env })).stdout.includes("running"));
    for (const args of [["status", "--json"], ["drift"], ["reconcile"]]) await city.gc(args, { env });
    // The session itself has the value (in its environment, in memory); the disk does not.
    expect(filesHolding(join(city.dir, ".gc"), VALUE)).toEqual([]);
  });

  it.each(["tmux", "subprocess"])(
    "%s: a program that prints its secrets as it dies leaves them in no log, event or state file",
    { timeout: 120_000 },
    async (provider) => {
      if (provider === "tmux" && !onPath("tmux")) return;
      const TOKEN = "ghp-4c1d9e7a2f6b8305";
      // It dies while gc waits for its prompt: always a failed start (tmux can lose what a
      // program prints in its very last moment, so it lingers a second first).
      // Both kinds gc knows to be secret: a secret-named key's value, and a value that came
      // from the environment under a name that does not look secret.
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
agents:
  - name: a
    start_command: 'echo "about to fail with $GH_TOKEN and $DB_URL"; sleep 1; exit 3'
    ready_prompt_prefix: "never shown> "
    env:
      GH_TOKEN: "${TOKEN}"
      DB_URL: "postgres://u:\${DBPW}@h/db"
`);
      const env = { DBPW: VALUE };
      const start = await city.gc(["start"], { env });
      expect(start.code).not.toBe(0);
      // The failure is reported with what the program printed, its secrets masked.
      const said = start.stdout + start.stderr;
      expect(said).toMatch(/last output: .*about to fail with \[redacted\]/);
      expect(said).not.toContain(TOKEN);
      expect(said).not.toContain(VALUE);
      // The session's event log (state.db) says why the start failed, masked too.
      const events = await city.gc(["session", "logs", "a", "--events", "--json"], { env });
      expect(events.stdout).toMatch(/about to fail with \[redacted\]/);
      // Only copies of what the user wrote (the last good city file holds the literal token)
      // and, on subprocess, the session's own transcript (its output verbatim, like a
      // terminal's scrollback: docs/decisions.md) hold them; gc's own records do not.
      const own = (needle: string) =>
        filesHolding(join(city.dir, ".gc"), needle).filter(
          (f) => !/last-good\.yaml$|\/logs\/a\.log$/.test(f),
        );
      for (const needle of [TOKEN, VALUE]) {
        expect(events.stdout).not.toContain(needle);
        expect(own(needle)).toEqual([]);
      }
      expect(filesHolding(join(city.dir, ".gc"), VALUE).filter((f) => f.endsWith("last-good.yaml"))).toEqual(
        [],
      );
    },
  );
});
