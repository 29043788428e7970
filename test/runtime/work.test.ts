/**
 * The work classifier (internal/runtime/screen/work.ts): one look → working / idle / needs-input /
 * error / unknown, as a table, with an injected clock; and on the recorded screens of the
 * real agent CLIs (test/fixtures/screens/).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { SessionLook } from "../../internal/runtime/provider.js";
import {
  classifyLook,
  classifyScreen,
  type ObservedWork,
  ScreenWorkMemo,
  screenErrorLine,
  screenTail,
  WORK_QUIET_MS,
} from "../../internal/runtime/screen/work.js";

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

describe("ScreenWorkMemo", () => {
  it("classifies a session's screen once while it stays the same, and again when it or the prompt changes", () => {
    const memo = new ScreenWorkMemo();
    const busy = fixture("claude-busy-80x24.ansi");
    const idle = fixture("claude-idle-80x24.ansi");
    const a = memo.forSession("a");
    const R = {}; // no markers of the session's own
    const first = a(busy, R, undefined);
    expect(first).toEqual(classifyScreen(busy, R, undefined));
    expect(a(busy, R, undefined)).toBe(first); // the same answer, not read again
    expect(a(idle, R, undefined)).toEqual(classifyScreen(idle, R, undefined));
    expect(a("$ ", R, "$ ")).toEqual({ state: "idle" });
    expect(a("$ ", R, "> ")).toBeUndefined(); // another prompt: read again
    // Other markers (the city file changed) are read again too; equal lists are the same rules.
    const markers = ["^\\$ $"];
    expect(a("$ ", { readyMarkers: markers }, "> ")).toEqual({ state: "idle" });
    expect(a("$ ", { readyMarkers: markers }, "> ")).toEqual({ state: "idle" });
    // Through classifyLook: the same results as without the memo, rule 8 (time) still applies.
    for (const screen of [busy, idle, "output\n", ""]) {
      for (const lastActivity of [quiet, recent]) {
        const look = { screen, lastActivity };
        expect(classifyLook(look, { now: NOW, classifyScreen: memo.forSession("b") })).toEqual(
          classifyLook(look, { now: NOW }),
        );
        expect(classifyLook(look, { now: NOW, classifyScreen: memo.forSession("b") })).toEqual(
          classifyLook(look, { now: NOW }),
        );
      }
    }
    memo.retain(new Set(["b"]));
    expect(a("$ ", R, "> ")).toBeUndefined();
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
