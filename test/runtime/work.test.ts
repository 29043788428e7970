/**
 * The work classifier (internal/runtime/work.ts): one look → working / idle / needs-input /
 * error / unknown, as a table, with an injected clock; and on the recorded screens of the
 * real agent CLIs (test/fixtures/screens/).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { SessionLook } from "../../internal/runtime/provider.js";
import {
  classifyLook,
  type ObservedWork,
  screenErrorLine,
  screenTail,
  TURN_END_QUIET_MS,
  WORK_QUIET_MS,
} from "../../internal/runtime/work.js";

const NOW = 1_800_000_000_000;
const quiet = new Date(NOW - WORK_QUIET_MS - 1_000);
const recent = new Date(NOW - 200);

function fixture(name: string): string {
  const ansi = readFileSync(new URL(`../fixtures/screens/${name}`, import.meta.url), "utf8");
  return ansi.replace(/\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]/g, "");
}

const approval = {
  requestId: "r1",
  kind: "approval",
  prompt: "Do you want to proceed?",
  options: ["Yes", "No"],
};

describe("classifyLook", () => {
  const cases: [string, SessionLook, ObservedWork, string?][] = [
    ["no screen, no interaction", {}, { state: "unknown" }],
    [
      "an interaction wins over everything on screen",
      { screen: "x · esc to interrupt", interaction: approval, lastActivity: recent },
      { state: "needs-input", message: "Do you want to proceed?" },
    ],
    [
      "an interaction without a prompt names its kind",
      { interaction: { requestId: "9", kind: "menu" } },
      { state: "needs-input", message: "menu (request 9)" },
    ],
    [
      "a busy marker, quiet screen",
      { screen: "* Thinking… (4s)\n  esc to interrupt", lastActivity: quiet },
      { state: "working" },
    ],
    [
      "the generic busy marker",
      { screen: "working\nPress Esc or Ctrl+C to cancel", lastActivity: quiet },
      { state: "working" },
    ],
    [
      "Claude Code's retrying API error under its busy marker",
      {
        screen:
          "> hi\n\n  ⎿  API error · retrying in 1s · attempt 2/10\n* Pondering… (3s)\n  esc to interrupt",
        lastActivity: recent,
      },
      { state: "error", message: "⎿  API error · retrying in 1s · attempt 2/10" },
    ],
    [
      "an HTTP 529 line",
      { screen: "out\n529 overloaded, will try again\n> ", lastActivity: quiet },
      { state: "error", message: "529 overloaded, will try again" },
    ],
    [
      "an error line scrolled above the bottom window is history",
      {
        screen: `API error · retrying in 1s · attempt 1/10\n${Array.from({ length: 14 }, (_, i) => `line ${i}`).join("\n")}`,
        lastActivity: quiet,
      },
      { state: "idle" },
    ],
    [
      "the bare ready prompt (the look's)",
      { screen: "1\n>>> ", lastActivity: recent, readyPromptPrefix: ">>> " },
      { state: "idle" },
    ],
    [
      "the ready prompt with a command after it runs",
      { screen: ">>> import time; time.sleep(60)", lastActivity: quiet, readyPromptPrefix: ">>> " },
      { state: "working" },
    ],
    ["the ready prompt from the options", { screen: "$ ", lastActivity: recent }, { state: "idle" }, "$ "],
    ["no marker, output just now", { screen: "compiling…", lastActivity: recent }, { state: "working" }],
    ["no marker, quiet", { screen: "done\n$", lastActivity: quiet }, { state: "idle" }],
    ["no marker, no activity known", { screen: "done" }, { state: "idle" }],
    ["an ACP turn running", { turn: { busy: true }, lastActivity: quiet }, { state: "working" }],
    ["an ACP session between turns", { turn: { busy: false } }, { state: "idle" }],
    [
      "an ACP turn that failed",
      { turn: { busy: false, error: "529 overloaded" } },
      { state: "error", message: "529 overloaded" },
    ],
    [
      "an ACP permission request",
      { turn: { busy: true }, interaction: { ...approval, kind: "permission", prompt: "run touch?" } },
      { state: "needs-input", message: "run touch?" },
    ],
  ];
  it.each(cases)("%s", (_what, look, want, prompt) => {
    expect(classifyLook(look, { now: NOW, readyPromptPrefix: prompt })).toEqual(want);
  });

  it.each([
    [
      "a marked turn, the marker gone, the screen settled",
      { turnMarked: true, screenSince: NOW - TURN_END_QUIET_MS },
      "idle",
    ],
    [
      "a marked turn, the marker gone, the screen just changed",
      { turnMarked: true, screenSince: NOW - TURN_END_QUIET_MS + 1 },
      "working",
    ],
    ["a marked turn seen by a one-shot observer (no screen memory)", { turnMarked: true }, "working"],
    ["an unmarked turn with a settled screen keeps the quiet rule", { screenSince: NOW - 1_000 }, "working"],
  ] as const)("%s", (_what, extra, want) => {
    // Output 200 ms ago, no busy marker, no prompt on the last line.
    const look = { screen: "Hello from the model double.\n  ? for shortcuts", lastActivity: recent };
    expect(classifyLook(look, { now: NOW, ...extra })).toEqual({ state: want });
  });

  it("a busy marker stays working in a marked turn whatever the quiet time", () => {
    const look = { screen: "* Thinking… (9s)\n  esc to interrupt", lastActivity: quiet };
    expect(classifyLook(look, { now: NOW, turnMarked: true, screenSince: NOW - 60_000 })).toEqual({
      state: "working",
    });
  });

  it("reads the real CLIs' recorded screens", () => {
    for (const cli of ["claude", "codex", "gemini", "opencode"]) {
      for (const size of ["80x24", "120x40"]) {
        const busy = classifyLook(
          { screen: fixture(`${cli}-busy-${size}.ansi`), lastActivity: quiet },
          { now: NOW },
        );
        expect(busy, `${cli} busy ${size}`).toEqual({ state: "working" });
        const idle = classifyLook(
          { screen: fixture(`${cli}-idle-${size}.ansi`), lastActivity: quiet },
          { now: NOW },
        );
        expect(idle, `${cli} idle ${size}`).toEqual({ state: "idle" });
      }
    }
  });
});

describe("screen helpers", () => {
  it("screenTail keeps the last non-blank lines", () => {
    expect(screenTail("a\n\nb  \nc\n\n\n", 2)).toEqual(["b", "c"]);
  });
  it("screenErrorLine trims box borders", () => {
    expect(screenErrorLine("│ API Error: 529 overloaded │\n")).toBe("API Error: 529 overloaded");
    expect(screenErrorLine("all good")).toBeUndefined();
  });
});
