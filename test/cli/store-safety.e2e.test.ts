/**
 * No acknowledged write is lost to a damaged state.db: while it is not a database, commands
 * that only read or operate (gc status, gc stop NAME, gc nudge --queue) refuse with a clear
 * error and leave the file where it is — they never move it aside and start an empty one
 * (where their write would be acknowledged, then lost to the next recovery). Only a command
 * that applies the city (gc reconcile, gc start) recovers it. `gc stop NAME` stops the
 * session but does not claim to hold it down.
 */
import { openSync, readdirSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";

describe("a damaged state.db", () => {
  it("read and operating commands refuse it and leave it in place; gc reconcile recovers it", {
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
`);
    expect((await city.gc(["status"])).code).toBe(0);
    const db = join(city.dir, ".gc", "state.db");
    const fd = openSync(db, "r+");
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0); // 4 KB of garbage over the header
    const garbage = readFileSync(db);
    const ino = statSync(db).ino;
    const files = () => readdirSync(join(city.dir, ".gc")).sort();
    const before = files();

    // A named stop still stops the session, and says it could not hold it down.
    const stopA = await city.gc(["stop", "a"]);
    expect(stopA.stdout).not.toContain("held down");
    expect(stopA.stderr).toContain("the state database is damaged");
    expect(statSync(db).ino).toBe(ino);
    expect(readFileSync(db).equals(garbage)).toBe(true);
    for (const args of [["status"], ["nudge", "--queue", "a", "hello"], ["session", "list"]]) {
      const r = await city.gc(args);
      expect(r.code, `gc ${args.join(" ")}`).not.toBe(0);
      expect(r.stdout).not.toMatch(/held down|queued nudge/);
      expect(r.stderr).toContain("the state database is damaged");
      expect(r.stderr).toContain("nothing was written");
      // The file is where it was, as it was; nothing was moved aside or created.
      expect(statSync(db).ino).toBe(ino);
      expect(readFileSync(db).equals(garbage)).toBe(true);
      expect(files()).toEqual(before);
    }

    const fixed = await city.gc(["reconcile"]);
    expect(fixed.stderr).toMatch(/WARNING/);
    expect(files().some((f) => f.startsWith("state.db.corrupt-"))).toBe(true);
    expect((await city.gc(["status"])).code).toBe(0);
  });
});
