/**
 * Event retention (issue 13): the controller prunes the event log after every pass by
 * `daemon.events.max_count` and `daemon.events.max_age`. Each setting is shown to take effect
 * on its own against the built `gc`, reading state.db directly.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { makeCity, type TestCity, until } from "../support/city.js";

function city(events: string): string {
  return `workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
  events: ${events}
agents:
  - name: w
    start_command: "exec sleep 100000"
    min_active_sessions: 3
    max_active_sessions: 3
`;
}

/** Events in the city's state.db: count and oldest time. */
function events(c: TestCity): { n: number; oldest: number | null } {
  const db = new Database(join(c.dir, ".gc", "state.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT count(*) AS n, min(at) AS oldest FROM events").get() as {
      n: number;
      oldest: number | null;
    };
  } finally {
    db.close();
  }
}

describe("event retention", { timeout: 120_000 }, () => {
  it("daemon.events.max_count: the controller keeps only the newest N events", async () => {
    const c = makeCity(city("{ max_count: 4 }"));
    const r = await c.gc(["start"]);
    expect(r.code, r.stderr).toBe(0);
    // Starting 3 sessions records far more than 4 events; after the pass only 4 are left.
    await until("pruned to 4", () => events(c).n === 4);
    await c.gc(["reconcile"]);
    await until("still 4 after another pass", () => events(c).n === 4);
  });

  it("daemon.events.max_age: events older than the age are deleted after a pass", async () => {
    const c = makeCity(city("{ max_age: 2s }"));
    const r = await c.gc(["start"]);
    expect(r.code, r.stderr).toBe(0);
    const startedBy = Date.now();
    // Once the start's events are older than 2 s, the next pass deletes them (the default
    // max_age of 168h would keep them: their deletion is this setting's doing).
    await until("the start's events are 2 s old", () => Date.now() > startedBy + 2_100);
    await c.gc(["reconcile"]);
    await until("old events pruned", () => {
      const e = events(c);
      return e.oldest === null || e.oldest > startedBy;
    });
  });

  it("controller.log: past 10 MiB its lines move to controller.log.1 and it starts again", async () => {
    const c = makeCity(city("{ max_count: 10000 }"));
    const log = join(c.dir, ".gc", "controller.log");
    mkdirSync(join(c.dir, ".gc"), { recursive: true });
    const filler = `${"old line\n".repeat(1_200_000)}last old line\n`; // 10.3 MiB
    writeFileSync(log, filler);
    const r = await c.gc(["start"]);
    expect(r.code, r.stderr).toBe(0);
    // The first pass finds the log too large: its content (and the controller's first lines,
    // appended to it) moves to controller.log.1; the log goes on from empty.
    await until(
      "controller.log.1",
      () => existsSync(`${log}.1`) && readFileSync(log, "utf8").includes("log: the earlier"),
    );
    const old = readFileSync(`${log}.1`, "utf8");
    expect(old.startsWith(filler)).toBe(true);
    expect(old).toContain("running for city");
    expect(statSync(log).size).toBeLessThan(64 * 1024);
    // Appends go on at the new end (no hole of zeros where the old content was).
    expect(await c.gc(["reconcile"])).toMatchObject({ code: 0 });
    expect(readFileSync(log, "utf8")).not.toContain("\0");
  });
});
