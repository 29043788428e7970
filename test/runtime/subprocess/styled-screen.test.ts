/**
 * The subprocess holder's styled screen (subprocess/screen.ts `styledText`): the headless
 * emulator's cells written as SGR escapes, read back by screen/styled.ts into the same plain
 * text as `visibleText` and the rows drawn highlighted.
 */
import { describe, expect, it } from "vitest";
import { readScreen } from "../../../internal/runtime/screen/styled.js";
import { Screen } from "../../../internal/runtime/subprocess/screen.js";

async function draw(bytes: string, cols = 40, rows = 10): Promise<Screen> {
  const s = new Screen(cols, rows, 100);
  s.write(bytes);
  await s.flush();
  return s;
}

const plain = (s: Screen) =>
  s
    .visibleText()
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n");

describe("Screen.styledText", () => {
  const cases: [string, string, string[]][] = [
    ["no highlight", "Pick one:\r\n  Anthropic\r\n  OpenAI", []],
    ["reverse video", "Pick one:\r\n  \x1b[7mAnthropic\x1b[27m\r\n  OpenAI", ["1:Anthropic"]],
    ["256-colour background", "Pick one:\r\n  OpenAI\r\n  \x1b[48;5;24mGemini\x1b[0m", ["2:Gemini"]],
    ["truecolour background", "Pick one:\r\n  \x1b[48;2;1;2;3mGemini\x1b[49m\r\n  x", ["1:Gemini"]],
    ["basic background", "Pick one:\r\n  \x1b[44mGemini\x1b[49m\r\n  x", ["1:Gemini"]],
    ["foreground colour only", "Pick one:\r\n  \x1b[31mGemini\x1b[39m\r\n  x", []],
    ["wide characters before the highlight", "日本語\r\n  \x1b[7m選択\x1b[0m\r\n  other", ["1:選択"]],
    ["a full-width status bar", `text\r\n~\r\n\x1b[7m${"NORMAL".padEnd(40)}\x1b[0m`, []],
  ];
  for (const [name, bytes, want] of cases) {
    it(name, async () => {
      const s = await draw(bytes);
      const read = readScreen(s.styledText());
      expect(read.text).toBe(plain(s));
      expect(read.highlights.map((h) => `${h.row}:${h.text}`)).toEqual(want);
      s.dispose();
    });
  }

  it("the state delivery reads carries the styled rows", async () => {
    const s = await draw("Pick one:\r\n  \x1b[7mAnthropic\x1b[27m\r\n  OpenAI");
    expect(s.terminalState().styled).toBe(s.styledText());
    s.dispose();
  });
});
