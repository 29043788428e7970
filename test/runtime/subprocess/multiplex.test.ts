/**
 * The holder processes of a provider root. With one holder (`holders: 1`): every session of
 * the city lives in it, a program's crash touches no other session, and the holder's own
 * death is reported (onBackendLost), leaves every session missing without an exit status (an
 * infrastructure loss, not a crash), and a later start brings up a new holder. `shutdown`
 * stops every session, exited ones included, so the holder is gone when it resolves; so does
 * `stop` of the holder's last session. With
 * several, concurrent starts are spread over them and one holder's death loses only the
 * sessions it held.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pidAlive } from "../../../internal/proc/kill.js";
import { holderRequest } from "../../../internal/runtime/subprocess/client.js";
import { holderSocketPath, providerRoot, sessionPaths } from "../../../internal/runtime/subprocess/layout.js";
import type { HolderRecord } from "../../../internal/runtime/subprocess/protocol.js";
import { holdersUnder, makeCity, type TestCity, until } from "./helpers.js";

describe("subprocess: one holder per city", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity({ options: { holders: 1 } });
  });
  afterAll(async () => {
    await city?.cleanup();
  });
  const record = async (name: string) =>
    JSON.parse(
      await readFile(sessionPaths(providerRoot(city.stateDir), name).record, "utf8"),
    ) as HolderRecord;
  const names = ["mx-a", "mx-b", "mx-c"];
  const hello = () =>
    holderRequest(holderSocketPath(providerRoot(city.stateDir)), { op: "hello" }, { timeoutMs: 5_000 });

  it("every session is held by one process; a program's crash ends only its own session", async () => {
    await Promise.all(
      names.map(async (n) => city.provider.start(n, await city.config(`printf '${n}> '; exec cat`))),
    );
    const recs = await Promise.all(names.map(record));
    const holder = recs[0]!.holderPid;
    expect(recs.map((r) => r.holderPid)).toEqual([holder, holder, holder]);
    expect(await holdersUnder(city.root)).toEqual([holder]);

    process.kill(recs[0]!.childPid, "SIGSEGV");
    await until("mx-a's program to end", async () => !(await city.provider.isRunning("mx-a")));
    expect(await city.provider.lastExit("mx-a")).toMatchObject({ signal: "SIGSEGV" });
    expect(await pidAlive(holder)).toBe(true);
    expect(await city.provider.listRunning("mx-")).toEqual(["mx-b", "mx-c"]);
    await city.provider.nudge("mx-b", "still here");
    await until("mx-b echoes", async () => (await city.provider.peek("mx-b", 5)).includes("still here"));
    await city.provider.stop("mx-a");
    expect(await city.provider.listRunning("mx-")).toEqual(["mx-b", "mx-c"]);
  });

  it("a holder crash is reported, loses every session without an exit status, and a start brings a new holder", async () => {
    const holder = (await record("mx-b")).holderPid;
    const children = await Promise.all(["mx-b", "mx-c"].map(async (n) => (await record(n)).childPid));
    let lost = 0;
    const unsubscribe = city.provider.onBackendLost(() => lost++);
    try {
      // The watch connects in the background.
      await until("the watch to connect", async () => (await hello()).watchers === 1);
      process.kill(holder, "SIGKILL");
      await until("the loss to be reported", () => lost > 0);
      expect(await city.provider.listRunning("mx-")).toEqual([]);
      for (const n of ["mx-b", "mx-c"]) expect(await city.provider.lastExit(n)).toBeUndefined();
      for (const pid of children)
        await until(`program ${pid} to be gone`, async () => !(await pidAlive(pid)));

      await city.provider.start("mx-b", await city.config("printf 'again> '; exec cat"));
      const fresh = (await record("mx-b")).holderPid;
      expect(fresh).not.toBe(holder);
      expect(await holdersUnder(city.root)).toEqual([fresh]);
      // The new holder is watched too.
      const before = lost;
      await city.provider.stop("mx-b");
      await until("the orderly exit to be reported", () => lost > before);
      expect(await holdersUnder(city.root)).toEqual([]);
    } finally {
      unsubscribe();
    }
  });

  it("shutdown reaps a session whose program exited by itself, so the holder is gone when it resolves", async () => {
    await city.provider.start("mx-d", await city.config("exec cat"));
    await city.provider.start("mx-e", await city.config("read line; exit 4"));
    const holder = (await record("mx-d")).holderPid;
    await city.provider.nudge("mx-e", "bye");
    await until("mx-e's program to exit", async () => (await city.provider.lastExit("mx-e"))?.code === 4);
    expect(await holdersUnder(city.root)).toEqual([holder]);

    await city.provider.shutdown();
    expect(await pidAlive(holder)).toBe(false);
    expect(await city.provider.snapshot("")).toEqual([]);
    expect(await city.provider.census()).toEqual([]);
    await city.provider.shutdown(); // idempotent
  });

  it("stopping a holder's last session resolves only once the holder is gone (nothing of it writes after)", async () => {
    await city.provider.start("mx-f", await city.config("printf 'f> '; exec cat"));
    const holder = (await record("mx-f")).holderPid;
    await city.provider.stop("mx-f");
    expect(await pidAlive(holder)).toBe(false);
    expect(await holdersUnder(city.root)).toEqual([]);
  });
});

describe("subprocess: several holders per city", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity({ options: { holders: 2 } });
  });
  afterAll(async () => {
    await city?.cleanup();
  });
  const root = () => providerRoot(city.stateDir);
  const record = async (name: string) =>
    JSON.parse(await readFile(sessionPaths(root(), name).record, "utf8")) as HolderRecord;
  const names = ["sh-a", "sh-b", "sh-c", "sh-d"];

  it("concurrent starts are spread over the holders; one holder's death loses only its sessions", async () => {
    await Promise.all(
      names.map(async (n) => city.provider.start(n, await city.config(`printf '${n}> '; exec cat`))),
    );
    const recs = await Promise.all(names.map(record));
    const byHolder = new Map<number, string[]>();
    for (const r of recs) byHolder.set(r.holderPid, [...(byHolder.get(r.holderPid) ?? []), r.name]);
    expect([...byHolder.keys()].sort()).toEqual((await holdersUnder(city.root)).sort());
    expect(byHolder.size).toBe(2);
    // Each record names its holder's own control socket, which answers with that holder's pid.
    expect(new Set(recs.map((r) => r.control))).toEqual(
      new Set([holderSocketPath(root(), 0), holderSocketPath(root(), 1)]),
    );
    for (const r of recs) {
      const hello = await holderRequest(r.control!, { op: "hello" }, { timeoutMs: 5_000 });
      expect(hello.pid).toBe(r.holderPid);
    }

    let lost = 0;
    const unsubscribe = city.provider.onBackendLost(() => lost++);
    try {
      const [victim, survivor] = [...byHolder.keys()] as [number, number];
      const victims = byHolder.get(victim)!;
      const survivors = byHolder.get(survivor)!;
      await until("both watches to connect", async () => {
        const hellos = await Promise.all(
          [0, 1].map((slot) =>
            holderRequest(holderSocketPath(root(), slot), { op: "hello" }, { timeoutMs: 5_000 }),
          ),
        );
        return hellos.every((h) => h.watchers === 1);
      });
      process.kill(victim, "SIGKILL");
      await until("the loss to be reported", () => lost > 0);
      expect(await city.provider.listRunning("sh-")).toEqual([...survivors].sort());
      for (const n of victims) expect(await city.provider.lastExit(n)).toBeUndefined();
      expect(await pidAlive(survivor)).toBe(true);
      const other = survivors[0]!;
      await city.provider.nudge(other, "still here");
      await until(`${other} echoes`, async () => (await city.provider.peek(other, 5)).includes("still here"));

      // The lost sessions start again (a new holder where the dead one was).
      await Promise.all(
        victims.map(async (n) => city.provider.start(n, await city.config(`printf 'again> '; exec cat`))),
      );
      expect(await city.provider.listRunning("sh-")).toEqual(names);
      for (const n of victims) expect((await record(n)).holderPid).not.toBe(victim);
    } finally {
      unsubscribe();
    }

    await city.provider.shutdown();
    expect(await holdersUnder(city.root)).toEqual([]);
    expect(await city.provider.census()).toEqual([]);
  });
});
