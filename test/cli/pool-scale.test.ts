import { describe, expect, it } from "vitest";
import { extraInstances } from "../../internal/controller/pool-scale.js";

describe("extraInstances", () => {
  it("extraInstances: clamps the request to min…max and lists the instances beyond min", () => {
    expect(extraInstances({ min: 2, max: 4 }, undefined)).toEqual([]);
    expect(extraInstances({ min: 2, max: 4 }, 3)).toEqual([3]);
    expect(extraInstances({ min: 2, max: 4 }, 9)).toEqual([3, 4]);
    expect(extraInstances({ min: 2, max: 4 }, 0)).toEqual([]);
    expect(extraInstances({ min: 0, max: 2 }, 2)).toEqual([1, 2]);
  });
});
