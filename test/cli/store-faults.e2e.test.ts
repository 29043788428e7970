/**
 * Fault injection on state.db under a running controller, end to end with the built gc on
 * tmux and subprocess (issue 36, "no acknowledged write is lost"): 4 KB of garbage over the
 * file, and `rm state.db` with a stop and a queued nudge made before the next pass. Commands
 * that write either refuse with a clear error or their write survives; read commands never
 * move or create the file; the controller recovers without a restart, keeping holds and
 * queued nudges; ids never collide; the status banner leaves once recovered.
 */
import { openSync, readdirSync, readFileSync, rmSync, statSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeCity, type TestCity, until } from "../support/city.js";

const city3 = (provider: string) => `workspace:
  name: "@NAME@"
session:
  provider: ${provider}
daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
  - name: b
    start_command: "exec sleep 100000"
  - name: c
    start_command: "exec sleep 100000"
`;

interface Status {
  sessions: { name: string; running: boolean | null; held: unknown }[];
  errors: string[];
}

async function status(city: TestCity): Promise<Status> {
  const r = await city.gc(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Status;
}

async function nudges(city: TestCity): Promise<{ id: number; session: string; text: string }[]> {
  const r = await city.gc(["nudge", "list", "--all", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { nudges: { id: number; session: string; text: string }[] }).nudges;
}

const running = async (city: TestCity) =>
  (await status(city)).sessions
    .filter((s) => s.running === true)
    .map((s) => s.name)
    .sort();

/** The names of the state files under `.gc/` (state.db and anything moved aside from it). */
const stateFiles = (city: TestCity) =>
  readdirSync(join(city.dir, ".gc"))
    .filter((f) => f.startsWith("state.db"))
    .sort();

const queuedId = (stdout: string) => Number(/queued nudge #(\d+)/.exec(stdout)?.[1]);

describe.each(["tmux", "subprocess"])("state.db faults under a running %s controller", (provider) => {
  it("4 KB of garbage: writes refuse, reads leave the file alone, one pass recovers it keeping holds and queued nudges; ids stay unique; the banner leaves", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(city3(provider));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    await until("a, b, c running", async () => (await running(city)).length === 3);
    const stopC = await city.gc(["stop", "c"]);
    expect(stopC.stdout).toContain("held down");
    const before = await city.gc(["nudge", "c", "--queue", "echo before"]);
    expect(before.code, before.stderr).toBe(0);
    const beforeId = queuedId(before.stdout);
    expect(beforeId).toBeGreaterThan(0);

    const db = join(city.dir, ".gc", "state.db");
    const fd = openSync(db, "r+");
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    closeSync(fd);
    const garbage = readFileSync(db);
    const ino = statSync(db).ino;
    const files = stateFiles(city);

    // Read commands: never move or create the database.
    for (const args of [["status"], ["events"], ["session", "list"], ["nudge", "list"]]) {
      await city.gc(args);
      expect(statSync(db).ino, `gc ${args.join(" ")}`).toBe(ino);
      expect(readFileSync(db).subarray(0, 4096).equals(garbage.subarray(0, 4096)), `gc ${args.join(" ")}`).toBe(
        true,
      );
      expect(stateFiles(city), `gc ${args.join(" ")}`).toEqual(files);
    }
    // Writes: refused with a clear error, never acknowledged and lost.
    const during = await city.gc(["nudge", "a", "--queue", "echo during"]);
    expect(during.code).not.toBe(0);
    expect(during.stdout).not.toContain("queued nudge");
    expect(during.stderr).toContain("the state database is damaged");
    // A named stop still stops the session, and says it could not hold it down.
    const stopB = await city.gc(["stop", "b"]);
    expect(stopB.stdout).not.toContain("held down");
    expect(stopB.stdout).toContain("not held");

    // The controller's next pass recovers (no restart), once.
    const pass = await city.gc(["reconcile"]);
    expect(pass.code, pass.stderr).toBe(0);
    const log = readFileSync(join(city.dir, ".gc", "controller.log"), "utf8");
    expect(log).toMatch(/state\.db.*damaged/);
    const again = await city.gc(["reconcile"]);
    expect(again.code, again.stderr).toBe(0);
    expect(stateFiles(city).filter((f) => f.includes(".corrupt-") && !/-(wal|shm)$/.test(f))).toHaveLength(1);

    // Holds and queued nudges kept; the banner has left.
    const st = await status(city);
    expect(st.errors).toEqual([]);
    // c's hold (made before the damage) is kept; b was never held, so it runs again.
    expect(await until("a and b running", async () => (await running(city)).join() === "a,b")).toBe(true);
    expect((await nudges(city)).map((n) => [n.id, n.session, n.text])).toEqual([[beforeId, "c", "echo before"]]);
    // A new queued nudge gets a new id.
    const after = await city.gc(["nudge", "a", "--queue", "echo after"]);
    expect(after.code, after.stderr).toBe(0);
    expect(queuedId(after.stdout)).not.toBe(beforeId);
    // Still the same controller.
    expect(readFileSync(join(city.dir, ".gc", "controller.log"), "utf8").match(/controller \d+ running/g)).toHaveLength(
      1,
    );
  });

  it("rm state.db, then a stop and a queued nudge before the next pass: both survive it, with unique ids", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(city3(provider));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    await until("a, b, c running", async () => (await running(city)).length === 3);
    const first = await city.gc(["nudge", "c", "--queue", "echo first"]);
    expect(first.code, first.stderr).toBe(0);
    const firstId = queuedId(first.stdout);
    expect((await city.gc(["stop", "c"])).code).toBe(0);

    rmSync(join(city.dir, ".gc", "state.db"));
    // Read commands do not create an empty database in its place.
    for (const args of [["events"], ["session", "list"]]) {
      await city.gc(args);
      expect(stateFiles(city).filter((f) => f.includes(".replaced-")), `gc ${args.join(" ")}`).toEqual([]);
    }
    const stopB = await city.gc(["stop", "b"]);
    expect(stopB.code, stopB.stderr).toBe(0);
    const second = await city.gc(["nudge", "b", "--queue", "echo second"]);
    const secondId = queuedId(second.stdout);
    if (second.code === 0) expect(secondId).not.toBe(firstId);
    else expect(second.stderr).toMatch(/state database/);

    const pass = await city.gc(["reconcile"]);
    expect(pass.code, pass.stderr).toBe(0);
    expect(stateFiles(city).filter((f) => f.includes(".replaced-"))).toEqual([]);
    // Held down: b (if the stop said so) and c; only a runs.
    await until("the controller to settle", async () => (await running(city)).includes("a"));
    expect(await running(city)).toEqual(stopB.stdout.includes("held down") ? ["a"] : ["a", "b"]);
    const kept = (await nudges(city)).map((n) => [n.id, n.session, n.text]);
    expect(kept).toEqual(
      second.code === 0
        ? [
            [firstId, "c", "echo first"],
            [secondId, "b", "echo second"],
          ]
        : [[firstId, "c", "echo first"]],
    );
    expect((await status(city)).errors).toEqual([]);
  });
});
