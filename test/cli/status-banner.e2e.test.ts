/**
 * `gc status` shows the controller's own errors in a banner, text and JSON alike (here: the
 * city file's error while the last good config is kept).
 */
import { describe, expect, it } from "vitest";
import { makeCity, until } from "../support/city.js";

const yaml = `workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1s
agents:
  - name: a
    start_command: "exec sleep 100000"
`;

describe("gc status banner", () => {
  it("a config error under a running controller is in the text banner and in JSON errors", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(yaml);
    expect((await city.gc(["start"])).code).toBe(0);
    city.write(`${yaml}  - name: [broken\n`);
    await until("the banner shows the config error", async () => {
      const r = await city.gc(["status"]);
      return /ERROR: config error \(the last good config is kept\)/.test(r.stderr) && r.stdout.includes("a ");
    });
    const json = JSON.parse((await city.gc(["status", "--json"])).stdout) as { errors: string[] };
    expect(json.errors.some((e) => e.startsWith("config error (the last good config is kept)"))).toBe(true);
  });
});
