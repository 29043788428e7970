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
});
