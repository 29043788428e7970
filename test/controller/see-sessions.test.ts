import { describe, expect, it } from "vitest";
import type { City } from "../../internal/controller/city.js";
import { seeSessions } from "../../internal/controller/sessions.js";
import type { SessionLook } from "../../internal/runtime/provider.js";

/** A city whose one provider `p` looks at sessions by name, recording each call. */
function cityLooking(screens: Readonly<Record<string, string>>) {
  const calls: string[][] = [];
  const provider = {
    async look(names: readonly string[]) {
      calls.push([...names]);
      return new Map(
        names.flatMap((n) =>
          screens[n] === undefined ? [] : [[n, { screen: screens[n] } satisfies SessionLook] as const],
        ),
      );
    },
  };
  const city = { providerFor: async () => provider } as unknown as City;
  return { city, calls };
}

describe("seeSessions with looks started early", () => {
  it("looks again only at running sessions the early look did not show, and keeps only running ones", async () => {
    const { city, calls } = cityLooking({ a: "A", b: "B", c: "C" });
    // The early look asked for the wanted sessions a and gone; c runs without being wanted.
    const early = new Map([
      ["a", { screen: "A" }],
      ["gone", { screen: "old" }],
    ] as const);
    const seen = await seeSessions(
      city,
      new Map([["p", ["a", "c"]]]),
      undefined,
      undefined,
      new Map([["p", Promise.resolve(new Map(early))]]),
    );
    expect(calls).toEqual([["c"]]);
    expect([...seen.keys()].sort()).toEqual(["a", "c"]);
    expect(seen.get("a")?.screen).toEqual(["A"]);
    expect(seen.get("c")?.screen).toEqual(["C"]);
  });

  it("asks nothing more when the early look showed every running session", async () => {
    const { city, calls } = cityLooking({});
    const early = new Map<string, SessionLook>([["a", { screen: "A" }]]);
    const seen = await seeSessions(
      city,
      new Map([["p", ["a"]]]),
      undefined,
      undefined,
      new Map([["p", Promise.resolve(early)]]),
    );
    expect(calls).toEqual([]);
    expect(seen.get("a")?.screen).toEqual(["A"]);
  });

  it("without an early look, looks at the running sessions as before", async () => {
    const { city, calls } = cityLooking({ a: "A" });
    const seen = await seeSessions(city, new Map([["p", ["a", "b"]]]));
    expect(calls).toEqual([["a", "b"]]);
    expect([...seen.keys()]).toEqual(["a"]);
  });
});
