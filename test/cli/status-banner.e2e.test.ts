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
  it("a config error under a running controller is said once in the text and listed in JSON errors", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(yaml);
    expect((await city.gc(["start"])).code).toBe(0);
    city.write(`${yaml}  - name: [broken\n`);
    // The text says it once: in this command's own line, or in the banner when only the
    // controller met it.
    await until("the text shows the config error once", async () => {
      const r = await city.gc(["status"]);
      const said = r.stderr.split("\n").filter((l) => /last good config/.test(l));
      return said.length === 1 && /city\.yaml/.test(said[0] ?? "") && r.stdout.includes("a ");
    });
    const json = JSON.parse((await city.gc(["status", "--json"])).stdout) as { errors: string[] };
    expect(json.errors.some((e) => e.startsWith("config error (the last good config is kept)"))).toBe(true);
  });
});
