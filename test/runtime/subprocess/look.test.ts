/**
 * Subprocess `look` (internal/runtime/subprocess/look.ts): a screen is read again only
 * when the holder reports output (or a clear) since it was last read — whatever it reuses,
 * every look shows the screen as it is: after new output, after a clear, after a restart of
 * the session under the same name.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCity, type TestCity, until } from "./helpers.js";

describe("subprocess look", () => {
  let city: TestCity;
  beforeAll(async () => {
    city = await makeCity();
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  const screenOf = async (name: string) => (await city.provider.look([name])).get(name)?.screen ?? "";

  it("shows new output, a clear and a restarted session, never a stale screen", async () => {
    const p = city.provider;
    // A line-reading shell loop: each line typed is echoed back as `got: LINE`.
    const cfg = await city.config(`while IFS= read -r l; do echo "got: $l"; done`);
    await p.start("looker", cfg);
    await p.nudgeNow("looker", "one");
    await until("the first line", async () => (await screenOf("looker")).includes("got: one"));
    // Quiet: the same screen, look after look.
    const quiet = await screenOf("looker");
    expect(await screenOf("looker")).toBe(quiet);
    await p.nudgeNow("looker", "two");
    await until("output after a quiet look", async () => (await screenOf("looker")).includes("got: two"));
    await p.clearScrollback("looker");
    await until("the clear", async () => !(await screenOf("looker")).includes("got: two"));
    await p.stop("looker");
    expect((await p.look(["looker"])).has("looker")).toBe(false);
    await p.start("looker", cfg);
    await p.nudgeNow("looker", "three");
    await until("the new incarnation's screen", async () => {
      const s = await screenOf("looker");
      return s.includes("got: three") && !s.includes("got: one");
    });
  });
});
