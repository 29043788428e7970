import { describe, expect, it } from "vitest";
import type { AgentConfig } from "../../internal/config/schema.js";
import { extraInstances, scaledAwayInstances } from "../../internal/controller/pool-scale.js";

describe("extraInstances", () => {
  it("extraInstances: clamps the request to min…max and lists the instances beyond min", () => {
    expect(extraInstances({ min: 2, max: 4 }, undefined)).toEqual([]);
    expect(extraInstances({ min: 2, max: 4 }, 3)).toEqual([3]);
    expect(extraInstances({ min: 2, max: 4 }, 9)).toEqual([3, 4]);
    expect(extraInstances({ min: 2, max: 4 }, 0)).toEqual([]);
    expect(extraInstances({ min: 0, max: 2 }, 2)).toEqual([1, 2]);
  });
});

describe("scaledAwayInstances", () => {
  const agents = [
    { name: "w", start_command: "x", min_active_sessions: 1, max_active_sessions: 4 },
    { name: "solo", start_command: "x" },
    { name: "p", start_command: "x", min_active_sessions: 2, max_active_sessions: 3 },
  ] as unknown as AgentConfig[];
  it("scaledAwayInstances: the instances between the recorded scale and max; none without a recorded scale", () => {
    expect([...scaledAwayInstances(agents, {})]).toEqual([]);
    expect([...scaledAwayInstances(agents, { w: 2 })]).toEqual(["w-3", "w-4"]);
    expect([...scaledAwayInstances(agents, { w: 4 })]).toEqual([]);
    // A request below min keeps min running: only what is above it was scaled away.
    expect([...scaledAwayInstances(agents, { p: 0 })]).toEqual(["p-3"]);
    expect([...scaledAwayInstances(agents, { solo: 1, gone: 1 })]).toEqual([]);
  });
});
