import { describe, expect, it } from "vitest";
import { groupBy } from "../../internal/base/group.js";

describe("groupBy", () => {
  it("groups in first-seen key order, keeps item order, maps values, drops undefined keys", () => {
    const rows = [
      { name: "a", provider: "tmux" },
      { name: "b", provider: "k8s" },
      { name: "c", provider: undefined },
      { name: "d", provider: "tmux" },
    ];
    expect([
      ...groupBy(
        rows,
        (r) => r.provider,
        (r) => r.name,
      ),
    ]).toEqual([
      ["tmux", ["a", "d"]],
      ["k8s", ["b"]],
    ]);
    expect(groupBy([1, 2, 3, 4], (n) => n % 2).get(0)).toEqual([2, 4]);
    expect(groupBy([], (n: number) => n).size).toBe(0);
  });
});
