/** drift-view.ts: which sessions the caller's resolution differs on, and the note naming them. */
import { describe, expect, it } from "vitest";
import type { WantedSession } from "../../internal/controller/digest-cache.js";
import {
  callerDiffersText,
  type DesiredView,
  differingSessions,
} from "../../internal/controller/drift-view.js";

function wanted(name: string, over: Partial<WantedSession> = {}): WantedSession {
  return {
    name,
    agent: name,
    provider: "tmux",
    core: "v2:core1",
    live: "v2:live1",
    breakdown: { command: { hash: "h1", value: "sleep" } },
    ...over,
  };
}

describe("differingSessions", () => {
  it("names the sessions whose provider, fingerprints or breakdown differ, or that only one side declares", () => {
    const theirs = [wanted("a"), wanted("b"), wanted("c"), wanted("d"), wanted("e")];
    const mine = [
      wanted("a"),
      wanted("b", { core: "v2:core2" }),
      wanted("c", { live: "v2:live2" }),
      wanted("d", { provider: "subprocess" }),
      wanted("f"),
    ];
    expect(differingSessions(theirs, mine)).toEqual(["b", "c", "d", "e", "f"]);
    expect(differingSessions(theirs, theirs)).toEqual([]);
  });

  it("the note names only the sessions asked about, never a value; none when nothing differs", () => {
    const view = { source: "controller", desired: [], callerDiffers: ["a", "c"] } as unknown as DesiredView;
    expect(callerDiffersText(view, ["a", "b", "c"])).toBe(
      "note: your environment resolves the city differently from the running controller for a, c; drift shown is the controller's (what it acts on)",
    );
    expect(callerDiffersText(view, ["b"])).toBeUndefined();
  });
});
