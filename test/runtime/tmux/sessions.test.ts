/**
 * The two list-panes formats (internal/runtime/tmux/sessions.ts): the full one every lookup
 * uses and the narrower one of a look at the running sessions (`gc status`). Each parses only
 * its own lines, so a name holding the separator can never pass for another session, and
 * both read the same session from the same pane.
 */
import { describe, expect, it } from "vitest";
import { toHex } from "../../../internal/runtime/tmux/quote.js";
import { LOOK_FORMAT, PANE_FORMAT, parseSessions } from "../../../internal/runtime/tmux/sessions.js";

/** A line of `format` for one pane, its fields taken by name from `v`. */
function line(format: string, v: Readonly<Record<string, string>>): string {
  return format.replace(/#\{([^}]+)\}/g, (_, f: string) => v[f] ?? "");
}

const PANE = {
  session_id: "$3",
  session_name: "w+1",
  "@gc_city": "c1",
  "@gc_name": "w.1",
  "@gc_workdir": toHex("/work"),
  "@gc_prefix": toHex("> "),
  pane_id: "%7",
  pane_pid: "4242",
  pane_dead: "0",
  session_attached: "1",
  window_activity: "1700000000",
};

describe("list-panes formats", () => {
  it("the look format reads the session the full format reads, without work dir, pid or exit details", () => {
    const [full] = parseSessions([line(PANE_FORMAT, PANE)], "c1");
    const [look] = parseSessions([line(LOOK_FORMAT, PANE)], "c1", "look");
    expect(full).toMatchObject({ id: "$3", name: "w.1", workDir: "/work", readyPrefix: "> ", attached: 1 });
    expect(look).toEqual({
      ...full,
      workDir: undefined,
      panes: [{ id: "%7", pid: 0, dead: false }],
    });
    expect(full?.panes).toEqual([
      { id: "%7", pid: 4242, dead: false, exitStatus: undefined, exitSignal: undefined, deadAt: undefined },
    ]);
  });

  it("a line of the other format, or with a separator in a name, is skipped", () => {
    expect(parseSessions([line(PANE_FORMAT, PANE)], "c1", "look")).toEqual([]);
    expect(parseSessions([line(LOOK_FORMAT, PANE)], "c1")).toEqual([]);
    // Five separators more make a look line as long as a full one: still not read as one.
    const forged = { ...PANE, session_name: "x|c1|w.1|||" };
    expect(parseSessions([line(LOOK_FORMAT, forged)], "c1")).toEqual([]);
    expect(parseSessions([line(LOOK_FORMAT, forged)], "c1", "look")).toEqual([]);
  });

  it("a dead pane reads as dead in both", () => {
    const dead = { ...PANE, pane_dead: "1" };
    expect(parseSessions([line(LOOK_FORMAT, dead)], "c1", "look")[0]?.panes[0]?.dead).toBe(true);
    expect(parseSessions([line(PANE_FORMAT, dead)], "c1")[0]?.panes[0]?.dead).toBe(true);
  });
});
