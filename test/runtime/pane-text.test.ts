/** The shared tmux capture flags and pane-text cleanup of the docker and k8s providers. */
import { describe, expect, it } from "vitest";
import { captureFlags, outputTail, paneText } from "../../internal/runtime/pane-text.js";

describe("pane text", () => {
  it("captureFlags: last N lines joined, all history for N <= 0, -e only when styled", () => {
    expect(captureFlags(5, false)).toEqual(["-p", "-J", "-S", "-5"]);
    expect(captureFlags(7.9, true)).toEqual(["-p", "-J", "-e", "-S", "-7"]);
    expect(captureFlags(0, false)).toEqual(["-p", "-J", "-S", "-"]);
    expect(captureFlags(-3, true)).toEqual(["-p", "-J", "-e", "-S", "-"]);
  });

  it("paneText: rows right-trimmed, trailing blank rows dropped, the last N kept; SGR left alone", () => {
    const out = "one  \n\x1b[32mtwo\x1b[39m \nthree\n\n   \n";
    expect(paneText(out, 0)).toBe("one\n\x1b[32mtwo\x1b[39m\nthree");
    expect(paneText(out, 2)).toBe("\x1b[32mtwo\x1b[39m\nthree");
    expect(paneText("", 5)).toBe("");
    expect(paneText("\n\n", 0)).toBe("");
  });
});

describe("outputTail", () => {
  it("keeps the last non-blank lines (tmux's 'Pane is dead' left out), joined, at most 400 characters", () => {
    expect(outputTail("boom\n\n\n\nPane is dead (status 3, Wed Dec  2 06:04:49 2026)\n")).toBe("boom");
    expect(outputTail(["a", "b", "c", "", "d", "e", "f", "g"].join("\n"))).toBe("b ⏎ c ⏎ d ⏎ e ⏎ f ⏎ g");
    expect(outputTail(`${"x".repeat(500)}\n`)).toHaveLength(400);
    expect(outputTail("\n  \n")).toBe("");
  });
});
