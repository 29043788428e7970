/**
 * Styled screens (screen/styled.ts): SGR captures read into plain text plus highlighted rows,
 * as a table of hostile inputs (status bars, highlighted words in prose, colour-only text,
 * 256/truecolour forms, resets, coloured blocks); then menus whose cursor is only a
 * highlighted row read by the parser, the classifier and the work classifier.
 */
import { describe, expect, it } from "vitest";
import type { SessionLook } from "../../internal/runtime/provider.js";
import { findInteraction, screenAwaitsChoice } from "../../internal/runtime/screen/classify.js";
import { parseMenu } from "../../internal/runtime/screen/parse.js";
import {
  highlightedRows,
  paintLines,
  readScreen,
  stripStyles,
} from "../../internal/runtime/screen/styled.js";
import { classifyLook } from "../../internal/runtime/screen/work.js";

const REV = "\x1b[7m";
const RESET = "\x1b[0m";

/** Rows highlighted in `styled`, as `row:text`. */
function lit(styled: string): string[] {
  return highlightedRows(paintLines(styled)).map((h) => `${h.row}:${h.text}`);
}

describe("highlightedRows", () => {
  const cases: [string, string, string[]][] = [
    ["plain text: none", "Pick one:\n  Anthropic\n  OpenAI", []],
    ["reverse video row in a list", `Pick one:\n  ${REV}Anthropic${RESET}\n  OpenAI`, ["1:Anthropic"]],
    [
      "padded reverse run (curses `addstr(' x ', A_REVERSE)`)",
      `Pick:\n   OpenAI\n  ${REV} Anthropic ${RESET}\n   Gemini`,
      ["2:Anthropic"],
    ],
    ["basic background colour", `Pick:\n  a\n  \x1b[44mbeta${RESET}\n  c`, ["2:beta"]],
    ["bright background colour", `Pick:\n  \x1b[104mbeta\x1b[49m\n  c`, ["1:beta"]],
    ["256-colour background", `Pick:\n  \x1b[48;5;236mbeta\x1b[49m\n  c`, ["1:beta"]],
    ["truecolour background", `Pick:\n  \x1b[48;2;10;20;30mbeta\x1b[49m\n  c`, ["1:beta"]],
    ["truecolour background, colon form", `Pick:\n  \x1b[48:2::10:20:30mbeta\x1b[49m\n  c`, ["1:beta"]],
    ["colour-only text (foreground) is no highlight", `Pick:\n  \x1b[38;5;196mbeta${RESET}\n  c`, []],
    ["bold is no highlight", `Pick:\n  \x1b[1mbeta${RESET}\n  c`, []],
    ["a highlighted word inside prose", `This is ${REV}very${RESET} important\nnext line`, []],
    ["two highlighted words on one row", `  ${REV}a${RESET} ${REV}b${RESET}\n  c`, []],
    [
      "a full-width status bar in reverse video at the bottom",
      `~\n~\nsome text here.....\n${REV}NORMAL  file.txt   ${RESET}`,
      [],
    ],
    [
      "a reset carried over the line end (tmux writes the pen across lines)",
      `Pick:\n  ${REV}Anthropic\n${RESET}  OpenAI`,
      ["1:Anthropic"],
    ],
    ["27 ends reverse video", `Pick:\n  ${REV}Anthropic\x1b[27m\n  OpenAI`, ["1:Anthropic"]],
    ["empty SGR resets", `Pick:\n  ${REV}Anthropic\x1b[m\n  OpenAI`, ["1:Anthropic"]],
    [
      "a coloured block (neighbours carry the paint) is no selection",
      `\x1b[44m  one  \n  two  \n  three${RESET}\nafter`,
      [],
    ],
    [
      "a program's background everywhere, the selection in reverse",
      `\x1b[44m  one     \n  ${REV}two\x1b[27m     \n  three   ${RESET}`,
      ["1:two"],
    ],
    [
      "inside a box: sides outside the highlight",
      `│ Pick:      │\n│ ${REV}Anthropic${RESET}  │\n│ OpenAI     │`,
      ["1:Anthropic"],
    ],
    [
      "hyperlinks (OSC 8) and other CSI sequences are dropped",
      `Pick:\n  \x1b]8;;https://x.test\x07${REV}Anthropic${RESET}\x1b]8;;\x07\x1b[K\n  OpenAI`,
      ["1:Anthropic"],
    ],
    ["blank highlighted row: none", `Pick:\n${REV}     ${RESET}\n  OpenAI`, []],
  ];
  for (const [name, styled, want] of cases) {
    it(name, () => {
      expect(lit(styled)).toEqual(want);
    });
  }

  it("columns are the plain line's indices", () => {
    const [h] = highlightedRows(paintLines(`x\n   ${REV} Anthropic ${RESET}\n    OpenAI`));
    expect(h).toEqual({ row: 1, start: 4, end: 13, text: "Anthropic" });
  });
});

describe("readScreen / stripStyles", () => {
  it("plain text is returned as it is", () => {
    const s = "a  \n b";
    expect(readScreen(s)).toEqual({ text: s, highlights: [] });
  });

  it("a styled capture becomes the plain text tmux captures without -e (rows right-trimmed)", () => {
    const styled = `Pick one:\n  ${REV}Anthropic\n${RESET}\x1b[39m\x1b[49m  OpenAI\n${REV}status bar         \n`;
    expect(stripStyles(styled)).toBe("Pick one:\n  Anthropic\n  OpenAI\nstatus bar\n");
    expect(readScreen(styled).text).toBe("Pick one:\n  Anthropic\n  OpenAI\nstatus bar\n");
  });

  it("stripStyles is the painted lines' text, right-trimmed, whatever the capture holds", () => {
    const painted = (x: string) =>
      paintLines(x)
        .map((l) => l.text.trimEnd())
        .join("\n");
    for (const x of [
      "",
      "\n".repeat(49),
      "a\nb\n\nc",
      "a  \n b\t\n\u00a0\nc\u3000",
      "ends blank   ",
      "cr\r\nin\rside\r",
      ` \n${REV}x  ${RESET}  \n  y`,
      `\x1b]8;;http://x\x07link\x1b]8;;\x07 \nz\x1b[1m \n`,
      QWEN,
    ])
      expect(stripStyles(x), JSON.stringify(x)).toBe(painted(x));
    const blank = "\n".repeat(49);
    expect(stripStyles(blank)).toBe(blank);
  });
});

const QWEN = [
  "Connect a Provider",
  "",
  "Select an authentication method:",
  "",
  `  ${REV}Qwen OAuth${RESET}`,
  "  OpenAI",
  "  Anthropic",
  "",
  "(Use Enter to select, Esc to cancel)",
].join("\n");

describe("menus whose cursor is a highlighted row", () => {
  it("parseMenu: an unnumbered list with the selected row in reverse video", () => {
    const m = parseMenu(QWEN);
    expect(m?.options.map((o) => o.label)).toEqual(["Qwen OAuth", "OpenAI", "Anthropic"]);
    expect(m?.selected).toBe(0);
    expect(m?.context).toEqual(["Select an authentication method:"]);
  });

  it("parseMenu: the same list as plain text is no menu (no cursor)", () => {
    expect(parseMenu(stripStyles(QWEN))).toBeUndefined();
    expect(screenAwaitsChoice(stripStyles(QWEN))).toBe(false);
  });

  it("parseMenu: the highlight moved to the second row", () => {
    const moved = QWEN.replace(`${REV}Qwen OAuth${RESET}`, "Qwen OAuth").replace(
      "  OpenAI",
      `  \x1b[48;5;24mOpenAI${RESET}`,
    );
    expect(parseMenu(moved)?.selected).toBe(1);
  });

  it("parseMenu: a numbered menu with a highlighted row and no glyph", () => {
    const m = parseMenu(`Continue?\n  1. Yes\n  ${REV}2. No${RESET}\n  3. Later`);
    expect(m?.selected).toBe(1);
  });

  it("a glyph cursor still wins over a highlighted row", () => {
    const m = parseMenu(`Pick:\n❯ a\n  ${REV}b${RESET}\n  c`);
    expect(m?.selected).toBe(0);
  });

  it("a leftover list (other text drawn below) is no menu", () => {
    expect(parseMenu(`${QWEN}\n\nsome answer printed later`)).toBeUndefined();
  });

  it("an input line drawn on a background colour (a composer) is no menu", () => {
    const composer = `• Done.\n\n  \x1b[48;5;236m› Ask Codex to do anything\x1b[49m\n  ⏎ send   ⌃J newline`;
    expect(screenAwaitsChoice(composer)).toBe(false);
    const echoed = `\x1b[48;5;237m> say hi\x1b[49m\n⏺ Hello!`;
    expect(screenAwaitsChoice(echoed)).toBe(false);
  });

  it("a status bar under prose is no menu", () => {
    const vim = `line one\nline two\n~\n~\n${REV}-- INSERT --  file.txt           ${RESET}`;
    expect(screenAwaitsChoice(vim)).toBe(false);
  });

  it("findInteraction: a pending menu with question and options; the id does not follow the cursor", () => {
    const a = findInteraction(QWEN);
    expect(a).toMatchObject({
      kind: "menu",
      prompt: "Select an authentication method:",
      options: ["Qwen OAuth", "OpenAI", "Anthropic"],
    });
    const moved = QWEN.replace(`${REV}Qwen OAuth${RESET}`, "Qwen OAuth").replace(
      "  OpenAI",
      `  ${REV}OpenAI${RESET}`,
    );
    expect(findInteraction(moved)?.requestId).toBe(a?.requestId);
  });

  it("a curses program's capture under tmux (TERM=screen paints its background everywhere)", () => {
    const pad = (t: string) => t.padEnd(40);
    const capture = [
      `\x1b[37m\x1b[40m${pad("Connect a Provider")}`,
      pad(""),
      pad("Select an authentication method:"),
      pad(""),
      `  \x1b[7mQwen OAuth\x1b[0m\x1b[37m\x1b[40m${" ".repeat(28)}`,
      pad("  OpenAI"),
      pad("  Anthropic"),
      pad(""),
      pad("(Use Enter to select, Esc to cancel)"),
      pad(""),
      "",
    ].join("\n");
    expect(readScreen(capture).highlights).toEqual([{ row: 4, start: 2, end: 12, text: "Qwen OAuth" }]);
    expect(parseMenu(capture)).toMatchObject({ selected: 0, context: ["Select an authentication method:"] });
  });

  it("classifyLook: the interaction read from the styled capture makes the session need input", () => {
    const look: SessionLook = { screen: stripStyles(QWEN), interaction: findInteraction(QWEN) };
    expect(classifyLook(look, { now: Date.now() }).state).toBe("needs-input");
    expect(classifyLook({ screen: stripStyles(QWEN) }, { now: Date.now() }).state).not.toBe("needs-input");
  });
});
