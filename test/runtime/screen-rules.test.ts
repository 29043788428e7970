/**
 * A session's own screen knowledge (agent-screens.ts `ScreenRules`: its preset's ready
 * prompt and ready, busy and error markers) in the work classifier (work.ts classifyLook),
 * as a table with an injected clock: each marker changes the classification of a screen the
 * builtin rules read otherwise.
 */
import { describe, expect, it } from "vitest";
import { type ScreenRules, screenShowsMarker } from "../../internal/runtime/agent-screens.js";
import type { SessionLook } from "../../internal/runtime/provider.js";
import { findInteraction, screenLooksIdle } from "../../internal/runtime/screen/classify.js";
import {
  classifyLook,
  type ObservedWork,
  screenErrorLine,
  WORK_QUIET_MS,
} from "../../internal/runtime/screen/work.js";

const NOW = 1_800_000_000_000;
const quiet = new Date(NOW - WORK_QUIET_MS - 1_000);
const recent = new Date(NOW - 200);

const QWEN_BUSY = "> say hi\n⠋ Reticulating splines… (3s · esc to cancel)\n╭──────╮\n│ >    │\n╰──────╯";
const BOXED_IDLE =
  "answer: 42\n╭──────────────────────────╮\n│ Type your message        │\n╰──────────────────────────╯";
const QUOTA = "> go\n✗ request failed: quota exhausted (E42)\n> ";

describe("classifyLook with a session's screen rules", () => {
  const cases: [string, SessionLook, ScreenRules | undefined, ObservedWork][] = [
    [
      "a busy marker the builtins miss, without rules: output just now → working",
      { screen: QWEN_BUSY, lastActivity: recent },
      undefined,
      { state: "working" },
    ],
    [
      "… and once quiet, idle (the pause mistaken for the end)",
      { screen: QWEN_BUSY, lastActivity: quiet },
      undefined,
      { state: "idle" },
    ],
    [
      "with busy_markers: working however quiet",
      { screen: QWEN_BUSY, lastActivity: quiet },
      { busyMarkers: ["\\(\\d+s · esc to cancel\\)"] },
      { state: "working" },
    ],
    [
      "a boxed input, output just now, no rules → working",
      { screen: BOXED_IDLE, lastActivity: recent },
      undefined,
      { state: "working" },
    ],
    [
      "with ready_markers: idle at once",
      { screen: BOXED_IDLE, lastActivity: recent },
      { readyMarkers: ["Type your message"] },
      { state: "idle" },
    ],
    [
      "a ready marker never beats a busy marker",
      { screen: `${BOXED_IDLE}\n esc to interrupt`, lastActivity: quiet },
      { readyMarkers: ["Type your message"] },
      { state: "working" },
    ],
    [
      "an error line the builtins miss, without rules: the bare prompt → idle",
      { screen: QUOTA, lastActivity: quiet },
      { readyPromptPrefix: "> " },
      { state: "idle" },
    ],
    [
      "with error_markers: error with the CLI's own line",
      { screen: QUOTA, lastActivity: quiet },
      { readyPromptPrefix: "> ", errorMarkers: ["quota exhausted"] },
      { state: "error", message: "✗ request failed: quota exhausted (E42)" },
    ],
    [
      "the rules' ready prompt is used when the look has none",
      { screen: "out\n$ ", lastActivity: recent },
      { readyPromptPrefix: "$ " },
      { state: "idle" },
    ],
  ];
  it.each(cases)("%s", (_title, look, rules, want) => {
    expect(classifyLook(look, { now: NOW, rules })).toEqual(want);
  });
});

describe("markers", () => {
  it("screenShowsMarker: case-insensitive, on the last 50 lines only, trailing blank lines ignored", () => {
    expect(screenShowsMarker("READY now", ["ready"])).toBe(true);
    const old = `ready\n${"x\n".repeat(60)}`;
    expect(screenShowsMarker(old, ["ready"])).toBe(false);
    expect(screenShowsMarker(`ready\n${"x\n".repeat(40)}${"\n".repeat(100)}`, ["ready"])).toBe(true);
    expect(screenShowsMarker("ready", [])).toBe(false);
    expect(screenShowsMarker("ready", undefined)).toBe(false);
  });

  it("screenErrorLine: extra markers are read from the bottom lines like the builtin ones", () => {
    expect(screenErrorLine(QUOTA)).toBeUndefined();
    expect(screenErrorLine(QUOTA, ["QUOTA EXHAUSTED"])).toBe("✗ request failed: quota exhausted (E42)");
    expect(screenErrorLine(`quota exhausted\n${"ok\n".repeat(10)}> `, ["quota exhausted"])).toBeUndefined();
  });
});

describe("menus with a cursor, numbered or not, are interactions, never idle", () => {
  const menu = (mark: string) =>
    `Connect a Provider\n\n${mark} OpenAI\n${" ".repeat(mark.length)} Anthropic\n${" ".repeat(mark.length)} Skip\n\nenter to choose`;
  it.each(["❯", "›", ">", "●"])(
    "an unnumbered menu under %s: a pending menu, needs-input, not idle",
    (mark) => {
      const screen = menu(mark);
      expect(findInteraction(screen)).toMatchObject({
        kind: "menu",
        prompt: "Connect a Provider",
        options: ["OpenAI", "Anthropic", "Skip"],
      });
      expect(classifyLook({ screen, lastActivity: quiet }, { now: NOW }).state).toBe("needs-input");
      expect(screenLooksIdle(screen)).toBe(false);
    },
  );
});
