/**
 * A command that needs a running session says what would bring it back, from why it is down
 * (operate.ts startHint): `gc start` does not start a held, quarantined or suspended session.
 */
import { describe, expect, it } from "vitest";
import { startHint } from "../../internal/operate/target.js";

const target = (desired: object | undefined, record: object | undefined) =>
  ({ name: "sh1", session: { name: "sh1", provider: "tmux", desired, record } }) as Parameters<
    typeof startHint
  >[0];
const rec = (state: string, metadata: Record<string, string> = {}) => ({ state, metadata });

describe("startHint", () => {
  it.each([
    [
      "stopped",
      target({ suspended: false }, rec("stopped")),
      "`gc start` or `gc session restart sh1` starts it",
    ],
    [
      "never started",
      target({ suspended: false }, undefined),
      "`gc start` or `gc session restart sh1` starts it",
    ],
    [
      "quarantined",
      target({ suspended: false }, rec("quarantined")),
      "`gc session reset sh1` lifts the quarantine",
    ],
    [
      "held by gc stop NAME",
      target({ suspended: false }, rec("suspended", { "gc.hold": "stopped by operator" })),
      "it is held down (`gc stop sh1`): `gc session reset sh1` or `gc session restart sh1` starts it",
    ],
    [
      "suspended in the file",
      target({ suspended: true }, rec("suspended")),
      "it is suspended in the city file (`suspended: true`)",
    ],
    [
      "recorded running, found ended (a crash the next pass has not seen)",
      target({ suspended: false }, rec("running")),
      "its program ended since the last pass; the next pass (the controller's, or `gc start`) restarts it, `gc session restart sh1` does now",
    ],
    ["not in the file", target(undefined, rec("stopped")), "it is not in the city file"],
  ])("%s", (_, t, want) => {
    expect(startHint(t)).toBe(want);
  });
});
