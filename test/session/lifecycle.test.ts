import { describe, expect, it } from "vitest";
import { IllegalTransitionError, isGcError } from "../../internal/base/errors.js";
import {
  canTransition,
  holdsRuntime,
  isLifecycleState,
  isTerminalState,
  LIFECYCLE_STATES,
  type LifecycleState,
  nextStates,
  TRANSITION_RULES,
  transition,
} from "../../internal/session/lifecycle.js";

// The contract, written out independently of the implementation's table (architecture §5 and
// issue 5): every pair not listed here must be refused.
const SUSPENDABLE = ["pending", "starting", "running", "draining", "crashed", "backoff", "quarantined"];
const LEGAL = new Set([
  "pending→starting",
  "starting→running",
  "running→draining",
  "draining→stopped",
  "starting→crashed",
  "running→crashed",
  "crashed→backoff",
  "backoff→starting",
  "backoff→quarantined",
  "quarantined→pending",
  "suspended→pending",
  "stopped→pending",
  "stopped→starting",
  "running→stopped",
  "starting→stopped",
  // No longer desired before it ever ran, or while crashed / backing off.
  "pending→stopped",
  "crashed→stopped",
  "backoff→stopped",
  ...SUSPENDABLE.map((s) => `${s}→suspended`),
]);

const pairs = LIFECYCLE_STATES.flatMap((from) => LIFECYCLE_STATES.map((to) => [from, to] as const));

describe("lifecycle", () => {
  it("states: nine, each recognised; junk is not a state", () => {
    expect(LIFECYCLE_STATES).toHaveLength(9);
    for (const s of LIFECYCLE_STATES) expect(isLifecycleState(s)).toBe(true);
    for (const junk of ["", "active", "Running", "closed", 1, null, undefined]) {
      expect(isLifecycleState(junk)).toBe(false);
    }
  });

  it("table: has exactly the contract's edges, each once, with a trigger", () => {
    const edges = TRANSITION_RULES.map((r) => `${r.from}→${r.to}`);
    expect(new Set(edges).size).toBe(edges.length);
    expect(new Set(edges)).toEqual(LEGAL);
    for (const r of TRANSITION_RULES) expect(r.trigger.length).toBeGreaterThan(0);
    expect(Object.isFrozen(TRANSITION_RULES)).toBe(true);
  });

  describe.each(pairs)("%s → %s", (from, to) => {
    const legal = LEGAL.has(`${from}→${to}`);
    if (legal) {
      it("transition: legal, returns the checked transition with its reason", () => {
        expect(canTransition(from, to)).toBe(true);
        expect(nextStates(from)).toContain(to);
        expect(transition(from, to, "because")).toEqual({ from, to, reason: "because" });
      });
    } else {
      it("transition: illegal, throws IllegalTransitionError naming both states", () => {
        expect(canTransition(from, to)).toBe(false);
        expect(nextStates(from)).not.toContain(to);
        let thrown: unknown;
        try {
          transition(from, to, "because");
        } catch (e) {
          thrown = e;
        }
        expect(thrown).toBeInstanceOf(IllegalTransitionError);
        expect(isGcError(thrown, "GC_ILLEGAL_TRANSITION")).toBe(true);
        expect((thrown as IllegalTransitionError).from).toBe(from);
        expect((thrown as IllegalTransitionError).to).toBe(to);
        expect((thrown as Error).message).toContain(`${from} → ${to}`);
      });
    }
  });

  it("transition: every legal edge needs a non-blank reason", () => {
    for (const r of TRANSITION_RULES) {
      for (const reason of ["", "   ", "\n"])
        expect(() => transition(r.from, r.to, reason)).toThrow(TypeError);
    }
  });

  it("transition: unknown states throw IllegalTransitionError, not TypeError", () => {
    expect(() => transition("active" as LifecycleState, "running", "x")).toThrow(IllegalTransitionError);
    expect(() => transition("pending", "gone" as LifecycleState, "x")).toThrow(IllegalTransitionError);
  });

  it("self-transitions: never legal", () => {
    for (const s of LIFECYCLE_STATES) expect(canTransition(s, s)).toBe(false);
  });

  it("suspend: from every non-terminal state, never from a terminal one; resume goes to pending", () => {
    for (const s of LIFECYCLE_STATES) {
      if (s === "suspended") continue;
      expect(canTransition(s, "suspended")).toBe(!isTerminalState(s));
    }
    expect(nextStates("suspended")).toEqual(["pending"]);
  });

  it("quarantined: leaves only by reset (→ pending) or suspend", () => {
    expect(nextStates("quarantined")).toEqual(["pending", "suspended"]);
  });

  it("reachability: every state can reach every other state", () => {
    for (const from of LIFECYCLE_STATES) {
      const seen = new Set<LifecycleState>([from]);
      const queue = [from];
      while (queue.length > 0) {
        for (const n of nextStates(queue.shift()!)) {
          if (seen.has(n)) continue;
          seen.add(n);
          queue.push(n);
        }
      }
      expect([...seen].sort()).toEqual([...LIFECYCLE_STATES].sort());
    }
  });

  it("holdsRuntime: starting, running, draining only", () => {
    expect(LIFECYCLE_STATES.filter(holdsRuntime)).toEqual(["starting", "running", "draining"]);
  });
});
