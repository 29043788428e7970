/**
 * Pure CLI formatting: tables by display width and the text of a `-` argument (one trailing
 * newline stripped). Per-key drift of maps: test/runtime/fingerprint.test.ts.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { CommandContext } from "../../cmd/gc/context.js";
import { readTextArg } from "../../cmd/gc/operate.js";
import { formatTable } from "../../cmd/gc/table.js";

describe("formatTable", () => {
  it("table: columns line up by display width (CJK, emoji, combining marks), not .length", () => {
    const lines = formatTable(
      ["NAME", "STATE"],
      [
        ["日本語", "running"],
        ["🚀x", "stopped"],
        ["e\u0301t\u00e9", "running"],
        ["plain", "running"],
      ],
    );
    // Every STATE column starts at the same display column: NAME is 6 columns wide (日本語).
    expect(lines).toEqual([
      "NAME    STATE",
      "日本語  running",
      "🚀x     stopped",
      "e\u0301t\u00e9     running",
      "plain   running",
    ]);
  });

  it("table: a header wider than its cells, empty and short rows, extra cells, blanks at a line's end", () => {
    expect(
      formatTable(
        ["NAME", "A-LONG-HEADER", "X"],
        [["a", "b", ""], ["longer-name"], [], ["c", "", "", "extra", "more"], ["d", "e  ", " "]],
      ),
    ).toEqual([
      "NAME         A-LONG-HEADER  X",
      "a            b",
      "longer-name",
      "",
      "c                              extra  more",
      "d            e",
    ]);
  });
});

describe("- input", () => {
  const ctxWith = (text: string) =>
    ({ stdin: Readable.from([Buffer.from(text)]) }) as unknown as CommandContext;
  it("stdin: `-` strips exactly one trailing newline (\\n or \\r\\n) and keeps the rest", async () => {
    expect(await readTextArg(ctxWith("text\n"))).toBe("text");
    expect(await readTextArg(ctxWith("text\r\n"))).toBe("text");
    expect(await readTextArg(ctxWith("a\nb\n\n"))).toBe("a\nb\n");
    expect(await readTextArg(ctxWith("no newline"))).toBe("no newline");
  });
});
