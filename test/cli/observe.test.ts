import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CURSOR_TAIL_LINES,
  deltaSince,
  dropCursors,
  loadCursor,
  observe,
  saveCursor,
  screenLines,
} from "../../internal/controller/observe.js";

const L = (text: string) => screenLines(text);

describe("observe", () => {
  it("screenLines: normalises CRLF and drops trailing blanks and padding", () => {
    expect(screenLines("a  \r\nb\r\n\n   \n")).toEqual(["a", "b"]);
    expect(screenLines("")).toEqual([]);
  });

  it.each([
    ["first look returns everything", undefined, "a\nb", ["a", "b"], false],
    ["nothing new", "a\n>>>", "a\n>>>", [], false],
    ["new lines after an unchanged last line", "a\nb", "a\nb\nc\nd", ["c", "d"], false],
    [
      "a grown prompt line is shown whole",
      ">>>",
      ">>> print(6*7)\n42\n>>>",
      [">>> print(6*7)", "42", ">>>"],
      false,
    ],
    [
      "the top scrolled out of the history",
      "x\ny\nz\n>>>",
      "y\nz\n>>> 1\n1\n>>>",
      [">>> 1", "1", ">>>"],
      false,
    ],
    ["a cleared screen is a gap", "x\ny\n>>>", "fresh\n>>>", ["fresh", ">>>"], true],
    ["a rewritten last line is shown", "a\n50%", "a\n100%\ndone", ["100%", "done"], false],
  ] as const)("deltaSince: %s", (_what, prev, now, lines, gap) => {
    expect(deltaSince(prev === undefined ? undefined : L(prev), L(now))).toEqual({ lines, gap });
  });

  it("deltaSince: repeated output is anchored at the earliest match of the whole previous look", () => {
    const prev = L("ok\nok\n>>>");
    const now = L("ok\nok\n>>> x\nok\nok\n>>>");
    expect(deltaSince(prev, now).lines).toEqual([">>> x", "ok", "ok", ">>>"]);
  });

  it("observe: the cursor counts lines shown and keeps a bounded tail", () => {
    const big = Array.from({ length: CURSOR_TAIL_LINES + 50 }, (_, i) => `line ${i}`);
    const first = observe(undefined, big, 1);
    expect(first.next.offset).toBe(big.length);
    expect(first.next.tail).toHaveLength(CURSOR_TAIL_LINES);
    const second = observe(first.next, [...big, "more"], 2);
    expect(second.delta.lines).toEqual(["more"]);
    expect(second.next.offset).toBe(big.length + 1);
  });

  it("cursor files: saved 0600 per session and observer, dropped with the session", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gc-observe-"));
    try {
      expect(await loadCursor(dir, "s", "o")).toBeUndefined();
      await saveCursor(dir, "s", "o", { offset: 3, tail: ["a"], at: 5 });
      expect(await loadCursor(dir, "s", "o")).toEqual({ offset: 3, tail: ["a"], at: 5 });
      expect(statSync(join(dir, "observers", "s", "o.json")).mode & 0o777).toBe(0o600);
      await dropCursors(dir, "s");
      expect(await loadCursor(dir, "s", "o")).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
