import { describe, expect, it } from "vitest";
import type { City } from "../../internal/controller/city.js";
import { collectCity, ScreenMemo, seeSessions } from "../../internal/controller/sessions.js";
import type { SessionLook } from "../../internal/runtime/provider.js";
import { classifyScreen } from "../../internal/runtime/screen/work.js";

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

describe("ScreenMemo", () => {
  const rules = { readyMarkers: ["READY"] };
  it("answers as classifyScreen does, reading a screen once per rules and prompt", () => {
    const memo = new ScreenMemo();
    for (const [screen, r, prompt] of [
      ["", {}, undefined],
      ["working… (esc to interrupt)", {}, undefined],
      ["READY", rules, undefined],
      ["READY", {}, undefined],
      ["$ ", {}, "$"],
      ["$ ls", {}, "$"],
    ] as const) {
      expect(memo.classify(screen, r, prompt)).toEqual(classifyScreen(screen, r, prompt));
    }
    const first = memo.classify("READY", rules, undefined);
    // The same screen under equal rules (marker lists by identity) is not read again.
    expect(memo.classify("READY", { readyMarkers: rules.readyMarkers }, undefined)).toBe(first);
    // Other markers or another prompt are another reading.
    expect(memo.classify("READY", { readyMarkers: ["READY"] }, undefined)).not.toBe(first);
    expect(memo.classify("READY", rules, "$")).not.toBe(first);
  });

  it("keeps what the last two observations read", () => {
    const memo = new ScreenMemo();
    memo.next();
    const first = memo.classify("READY", rules, undefined);
    memo.next();
    expect(memo.classify("READY", rules, undefined)).toBe(first); // from the observation before
    memo.next();
    memo.next();
    const again = memo.classify("READY", rules, undefined);
    expect(again).toEqual(first);
    expect(again).not.toBe(first); // forgotten: read again
  });
});

describe("collectCity with a provider that lists and looks in one observation", () => {
  function fakeCity() {
    const calls: string[] = [];
    const listing = [
      { name: "a", running: true, attached: false },
      { name: "b", running: true, attached: false },
    ];
    const provider = {
      name: "p",
      capabilities: () => ({}),
      async snapshot() {
        calls.push("snapshot");
        return listing;
      },
      async snapshotWithLooks() {
        calls.push("snapshotWithLooks");
        return {
          sessions: listing,
          looks: new Map<string, SessionLook>([
            ["a", { screen: "working… (esc to interrupt)" }],
            ["b", { screen: "working… (esc to interrupt)" }],
          ]),
        };
      },
      async look(names: readonly string[]) {
        calls.push(`look ${names.join(",")}`);
        return new Map(names.map((n) => [n, { screen: "" } satisfies SessionLook]));
      },
    };
    const city = {
      name: "c",
      defaultProvider: "p",
      configError: undefined,
      providerFor: async () => provider,
      loadWanted: async () => [],
      store: async () => ({ list: async () => [] }),
      current: () => {
        throw new Error("no file loaded");
      },
    } as unknown as City;
    return { city, calls };
  }

  it("looking itself: one call lists and looks, and the work is read from those looks", async () => {
    const { city, calls } = fakeCity();
    const view = await collectCity(city, undefined, { looksItself: Promise.resolve(true) });
    expect(calls).toEqual(["snapshotWithLooks"]);
    expect(view.sessions.map((s) => [s.name, s.running, s.work.state])).toEqual([
      ["a", true, "working"],
      ["b", true, "working"],
    ]);
  });

  it("not looking itself (a controller answers): listed only, then the controller is asked", async () => {
    const { city, calls } = fakeCity();
    const asked: string[][] = [];
    const view = await collectCity(city, undefined, {
      looksItself: Promise.resolve(false),
      controllerPending: async (byProvider) => {
        asked.push([...(byProvider.get("p") ?? [])]);
        return new Map([["a", { work: { state: "idle" as const } }]]);
      },
    });
    expect(calls).toEqual(["snapshot"]);
    expect(asked).toEqual([["a", "b"]]);
    expect(view.sessions.find((s) => s.name === "a")?.work.state).toBe("idle");
  });
});
