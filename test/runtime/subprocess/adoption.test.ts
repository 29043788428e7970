import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import { DIST_INDEX, holdersUnder, makeCity, type TestCity, until } from "./helpers.js";

const execFileP = promisify(execFile);

/** A "controller" in its own process: starts sessions from the built provider, then exits. */
const CONTROLLER = `
import { createProvider } from ${JSON.stringify(DIST_INDEX)};
const [stateDir, city, workDir, ...names] = process.argv.slice(1);
const p = createProvider({ city, cityDir: workDir, stateDir });
await Promise.all(names.map((n) => p.start(n, { command: "printf 'adopt> '; exec cat", workDir, env: {}, readyPromptPrefix: "adopt> " })));
await p.setMeta(names[0], "owner", "first controller");
console.log(JSON.stringify(await p.listRunning("")));
`;

describe("subprocess controller restart", () => {
  let city: TestCity;
  const names = ["adopt-a", "adopt-b", "adopt-c"];

  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  it("adoption: a new provider sees every session a dead controller started, none lost, none duplicated", async () => {
    const work = await city.config("");
    const { stdout } = await execFileP(
      process.execPath,
      ["--input-type=module", "-e", CONTROLLER, city.stateDir, city.city, work.workDir, ...names],
      { timeout: 60_000 },
    );
    expect(JSON.parse(stdout)).toEqual(names);
    // The controller is gone; the city's holders were reparented and still serve all three.
    const holders = await holdersUnder(city.root);
    expect(holders.length).toBeGreaterThan(0);
    for (const pid of holders) {
      const ppid = Number((await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ")[1]);
      expect(ppid).not.toBe(process.pid);
    }

    const restarted = city.fresh();
    const again = city.fresh();
    const [l1, l2] = await Promise.all([restarted.listRunning(""), again.listRunning("")]);
    expect(l1).toEqual(names);
    expect(l2).toEqual(names);
    expect(await restarted.getMeta("adopt-a", "owner")).toBe("first controller");

    // Every operation works on the adopted sessions.
    await restarted.nudge("adopt-b", "after the restart");
    await until("the nudge echoed", async () =>
      (await restarted.peek("adopt-b", 5)).includes("after the restart"),
    );
    expect(await restarted.processAlive("adopt-c", ["cat"])).toBe(true);

    // A restarted controller that tries to start them again creates no duplicate.
    const results = await Promise.allSettled(
      names.map(async (n) => restarted.start(n, await city.config("exec cat"))),
    );
    for (const r of results) {
      expect(r.status).toBe("rejected");
      expect(isGcError((r as PromiseRejectedResult).reason, "GC_SESSION_EXISTS")).toBe(true);
    }
    expect(await holdersUnder(city.root)).toEqual(holders);
    expect(await again.listRunning("")).toEqual(names);

    await Promise.all(names.map((n) => again.stop(n)));
    expect(await restarted.listRunning("")).toEqual([]);
    expect(await holdersUnder(city.root)).toEqual([]);
  });
});
