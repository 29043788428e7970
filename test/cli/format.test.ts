/**
 * Pure CLI formatting: tables by display width, per-key drift lines of maps, and the text of
 * a `-` argument (one trailing newline stripped).
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { changeLines } from "../../cmd/gc/commands/drift.js";
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
});

describe("drift lines", () => {
  it("drift: a map shows one line per changed key; scalars show old → new", () => {
    expect(
      changeLines(
        "env",
        { GREETING: "hello", KEEP: "1", OLD: "x" },
        { GREETING: "bonjour", KEEP: "1", NEW: "y" },
      ),
    ).toEqual(["env.GREETING: hello → bonjour", "env.NEW: (absent) → y", "env.OLD: x → (absent)"]);
    expect(changeLines("command", "sleep 1", "sleep 2")).toEqual(["command: sleep 1 → sleep 2"]);
    expect(changeLines("args", ["a"], ["b"])).toEqual(['args: ["a"] → ["b"]']);
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
