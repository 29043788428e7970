/**
 * Fault injection on state.db under a running controller, end to end with the built gc on
 * tmux and subprocess (issue 36, "no acknowledged write is lost"): 4 KB of garbage over the
 * file, and `rm state.db` with a stop and a queued nudge made before the next pass. Commands
 * that write either refuse with a clear error or their write survives; read commands never
 * move or create the file; the controller recovers without a restart, keeping holds and
 * queued nudges; ids never collide; the status banner leaves once recovered.
 */
import { closeSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
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

/** What a command acknowledged: a queued nudge (id, session, text) or a hold. */
interface Acked {
  nudges: [number, string, string][];
  held: string[];
}

/** Runs `gc nudge SESSION --queue TEXT`; an exit 0 must name the queued nudge, else say why. */
async function queue(city: TestCity, acked: Acked, session: string, text: string) {
  const r = await city.gc(["nudge", session, "--queue", text]);
  if (r.code === 0) {
    const id = queuedId(r.stdout);
    expect(id, r.stdout).toBeGreaterThan(0);
    acked.nudges.push([id, session, text]);
  } else {
    expect(r.stdout).not.toContain("queued nudge");
    expect(r.stderr).toMatch(/the state database is (damaged|missing)/);
  }
  return r;
}

/** Runs `gc stop SESSION`; "held down" is an acknowledged hold. */
async function stopOne(city: TestCity, acked: Acked, session: string) {
  const r = await city.gc(["stop", session]);
  expect(r.code, r.stderr).toBe(0);
  if (r.stdout.includes("held down")) acked.held.push(session);
  else expect(r.stdout).toContain("not held");
  return r;
}

/** Every acknowledged write is there: the nudges with their ids (all distinct), the holds. */
async function expectKept(city: TestCity, acked: Acked) {
  const listed = (await nudges(city)).map((n) => [n.id, n.session, n.text]);
  expect(listed).toEqual(expect.arrayContaining(acked.nudges));
  expect(new Set(listed.map(([id]) => id)).size).toBe(listed.length);
  const st = await status(city);
  for (const name of acked.held) {
    const s = st.sessions.find((x) => x.name === name);
    expect(s?.running, name).not.toBe(true);
    expect(s?.held, name).not.toBeNull();
  }
}

describe.each(["tmux", "subprocess"])("state.db faults under a running %s controller", (provider) => {
  it("4 KB of garbage: no acknowledged write is lost, reads never move the file, the controller salvages it once without a restart; ids unique; the banner leaves", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(city3(provider));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    await until("a, b, c running", async () => (await running(city)).length === 3);
    const acked: Acked = { nudges: [], held: [] };
    await stopOne(city, acked, "c");
    expect(acked.held).toEqual(["c"]);
    expect((await queue(city, acked, "c", "echo before")).code).toBe(0);

    const db = join(city.dir, ".gc", "state.db");
    const fd = openSync(db, "r+");
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    closeSync(fd);
    const log = () => readFileSync(join(city.dir, ".gc", "controller.log"), "utf8");
    // The only thing that may move the file is the controller's salvage (its retry passes
    // for c's nudge run on their own); a read command never does, nor creates one.
    const onlySalvaged = (what: string) => {
      const moved = stateFiles(city).filter((f) => /\.(corrupt|replaced)-/.test(f) && !/-(wal|shm)$/.test(f));
      expect(moved.length, what).toBeLessThanOrEqual(1);
      if (moved.length === 1) expect(log(), what).toContain("was damaged while the controller ran");
      expect(
        moved.filter((f) => f.includes(".replaced-")),
        what,
      ).toEqual([]);
    };
    for (const args of [["status"], ["session", "list"], ["nudge", "list"], ["drift"]]) {
      await city.gc(args);
      onlySalvaged(`gc ${args.join(" ")}`);
    }
    // Writes: refused with a clear error, or kept.
    await queue(city, acked, "a", "echo during");
    await stopOne(city, acked, "b");
    onlySalvaged("writes");

    // The controller's next pass has salvaged it (no restart), once.
    const pass = await city.gc(["reconcile"]);
    expect(pass.code, pass.stderr).toBe(0);
    expect(log()).toContain("was damaged while the controller ran");
    const again = await city.gc(["reconcile"]);
    expect(again.code, again.stderr).toBe(0);
    onlySalvaged("after two passes");
    expect(stateFiles(city).some((f) => f.includes(".corrupt-"))).toBe(true);
    expect(log().match(/controller \d+ running/g)).toHaveLength(1);

    await expectKept(city, acked);
    expect((await status(city)).errors).toEqual([]);
    // A nudge queued now gets an id none had before.
    await queue(city, acked, "a", "echo after");
    expect(acked.nudges.at(-1)?.[2]).toBe("echo after");
    await expectKept(city, acked);
  });

  it("rm state.db, then a stop and a queued nudge before the next pass: both survive it, with unique ids", {
    timeout: 180_000,
  }, async () => {
    const city = makeCity(city3(provider));
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    await until("a, b, c running", async () => (await running(city)).length === 3);
    const acked: Acked = { nudges: [], held: [] };
    await stopOne(city, acked, "c");
    await queue(city, acked, "c", "echo first");
    expect(acked).toEqual({ nudges: [[expect.any(Number), "c", "echo first"]], held: ["c"] });

    rmSync(join(city.dir, ".gc", "state.db"));
    // A read command does not create an empty database in its place: the controller writes
    // its open copy back.
    const list = await city.gc(["session", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^c .*suspended/m);
    await stopOne(city, acked, "b");
    expect(acked.held).toEqual(["c", "b"]);
    expect((await queue(city, acked, "b", "echo second")).code).toBe(0);

    const pass = await city.gc(["reconcile"]);
    expect(pass.code, pass.stderr).toBe(0);
    expect(stateFiles(city).filter((f) => f.includes(".replaced-"))).toEqual([]);
    expect(await running(city)).toEqual(["a"]);
    await expectKept(city, acked);
    expect((await status(city)).errors).toEqual([]);
  });
});
