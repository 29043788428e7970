/**
 * Kept-open connections to session sockets (client.ts ConnectionPool): reads share one
 * connection per socket; the holder ends it when the session stops (so nothing keeps talking
 * to a session that is gone, and the next read sees whatever serves the socket now); closing
 * the pool closes the rest, and a read after that goes on a connection of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionPool, holderRequest } from "../../../internal/runtime/subprocess/client.js";
import { providerRoot, sessionPaths } from "../../../internal/runtime/subprocess/layout.js";
import { makeCity, type TestCity, until } from "./helpers.js";

describe("subprocess: kept-open connections", () => {
  let city: TestCity;
  const pool = new ConnectionPool();
  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    pool.close();
    await city?.cleanup();
  });
  const status = (name: string) =>
    holderRequest(
      sessionPaths(providerRoot(city.stateDir), name).socket,
      { op: "status" },
      { timeoutMs: 5_000, expect: { city: city.provider.owner, name }, reuse: pool },
    );

  it("one connection per socket; the holder ends it when the session stops; close() ends the rest", async () => {
    for (const n of ["pool-a", "pool-b"]) await city.provider.start(n, await city.config("exec cat"));
    const [a, b] = await Promise.all([status("pool-a"), status("pool-b"), status("pool-a")]);
    expect(a?.running).toBe(true);
    expect(b?.running).toBe(true);
    expect(pool.size).toBe(2);
    await city.provider.stop("pool-a");
    await until("the stopped session's connection to end", () => pool.size === 1);
    // The same name again: the read reaches the new session, not the old one.
    await city.provider.start("pool-a", await city.config("exec cat"));
    expect((await status("pool-a")).running).toBe(true);
    expect(pool.size).toBe(2);
    pool.close();
    expect(pool.size).toBe(0);
    // A closed pool keeps nothing open: a later read still works, on a connection of its own.
    expect((await status("pool-b")).running).toBe(true);
    expect(pool.size).toBe(0);
  });
});
