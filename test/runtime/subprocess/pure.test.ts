import { describe, expect, it } from "vitest";
import { DetachMatcher, keyBytes, unknownKeys } from "../../../internal/runtime/subprocess/keys.js";
import {
  MAX_SOCKET_PATH_BYTES,
  providerRoot,
  sessionPaths,
  socketPathFor,
} from "../../../internal/runtime/subprocess/layout.js";
import { LineSplitter } from "../../../internal/runtime/subprocess/protocol.js";
import { Screen, tailLines } from "../../../internal/runtime/subprocess/screen.js";

describe("subprocess keys", () => {
  it("keyBytes: tmux names map to terminal bytes", () => {
    expect(keyBytes("Enter")).toBe("\r");
    expect(keyBytes("enter")).toBe("\r");
    expect(keyBytes("C-c")).toBe("\x03");
    expect(keyBytes("C-C")).toBe("\x03");
    expect(keyBytes("C-d")).toBe("\x04");
    expect(keyBytes("C-\\")).toBe("\x1c");
    expect(keyBytes("C-Space")).toBe("\x00");
    expect(keyBytes("Escape")).toBe("\x1b");
    expect(keyBytes("Tab")).toBe("\t");
    expect(keyBytes("BTab")).toBe("\x1b[Z");
    expect(keyBytes("Up")).toBe("\x1b[A");
    expect(keyBytes("Up", { applicationCursorKeys: true })).toBe("\x1bOA");
    expect(keyBytes("PageDown")).toBe("\x1b[6~");
    expect(keyBytes("F5")).toBe("\x1b[15~");
    expect(keyBytes("M-x")).toBe("\x1bx");
    expect(keyBytes("M-C-a")).toBe("\x1b\x01");
    expect(keyBytes("y")).toBe("y");
    expect(keyBytes("é")).toBe("é");
    expect(keyBytes("🦀")).toBe("🦀");
  });

  it("keyBytes: anything else is not a key", () => {
    expect(unknownKeys(["", "Enterr", "C-", "C-ab", "M-", "hello", "Up"])).toEqual([
      "",
      "Enterr",
      "C-",
      "C-ab",
      "M-",
      "hello",
    ]);
  });

  it("DetachMatcher: Ctrl-\\ and Ctrl-b d detach; Ctrl-b Ctrl-b sends one Ctrl-b; split chunks work", () => {
    const m = new DetachMatcher("both");
    expect(m.feed(Buffer.from("ab\x1ccd"))).toEqual({ forward: Buffer.from("ab"), detach: true });
    const t = new DetachMatcher("C-b d");
    expect(t.feed(Buffer.from("x\x02"))).toEqual({ forward: Buffer.from("x"), detach: false });
    expect(t.feed(Buffer.from("\x02y\x1c"))).toEqual({ forward: Buffer.from("\x02y\x1c"), detach: false });
    expect(t.feed(Buffer.from("\x02z"))).toEqual({ forward: Buffer.from("\x02z"), detach: false });
    expect(t.feed(Buffer.from("\x02"))).toEqual({ forward: Buffer.alloc(0), detach: false });
    expect(t.feed(Buffer.from("d"))).toEqual({ forward: Buffer.alloc(0), detach: true });
    const only = new DetachMatcher("C-\\");
    expect(only.feed(Buffer.from("\x02d"))).toEqual({ forward: Buffer.from("\x02d"), detach: false });
  });
});

describe("subprocess screen text", () => {
  it("tailLines: trailing blank lines are dropped before the limit; 0 = all", () => {
    expect(tailLines(["a", "", "b", "c", "", "  "], 2)).toEqual(["b", "c"]);
    expect(tailLines(["a", "", "b"], 0)).toEqual(["a", "", "b"]);
    expect(tailLines(["", ""], 5)).toEqual([]);
  });

  it("Screen: wrapped rows are one line; the cursor row can be matched", async () => {
    const s = new Screen(10, 4, 100);
    try {
      s.write("0123456789abcdef\r\nRDY> ");
      await s.flush();
      expect(s.peek(0)).toBe("0123456789abcdef\nRDY>");
      expect(s.showsPrompt("RDY> ")).toBe(true);
      expect(s.showsPrompt("NOPE> ")).toBe(false);
      s.write("\r\n\u276f\u00a0");
      await s.flush();
      expect(s.showsPrompt("\u276f ")).toBe(true);
      s.write("\x1b[?2004h\x1b[?1049h");
      await s.flush();
      expect(s.bracketedPaste).toBe(true);
      expect(s.alternateScreen).toBe(true);
      expect(s.peek(0)).toBe("");
    } finally {
      s.dispose();
    }
  });
});

describe("subprocess layout and framing", () => {
  it("socketPathFor: the natural path when it fits, else shorter hashed paths that do", () => {
    const short = providerRoot("/c/.gc");
    expect(socketPathFor(short, "mayor")).toBe("/c/.gc/subprocess/sessions/mayor/holder.sock");
    const mid = providerRoot(`/${"d".repeat(50)}`);
    const midPath = socketPathFor(mid, "n".repeat(60));
    expect(midPath.startsWith(`${mid}/s/`)).toBe(true);
    const long = providerRoot(`/${"d".repeat(120)}`);
    const longPath = socketPathFor(long, "x");
    expect(longPath.startsWith(`${long}/`)).toBe(false);
    for (const p of [midPath, longPath])
      expect(Buffer.byteLength(p)).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
    expect(socketPathFor(long, "x")).toBe(longPath);
    expect(socketPathFor(long, "y")).not.toBe(longPath);
    expect(sessionPaths(short, "a.b").lock).toBe("/c/.gc/subprocess/locks/a.b.lock");
  });

  it("LineSplitter: lines across chunks, multibyte splits, overflow, raw rest after stop()", () => {
    const lines: string[] = [];
    let overflow = 0;
    const s = new LineSplitter(
      (l) => {
        lines.push(l);
        if (l === "stop") s.stop();
      },
      () => overflow++,
      16,
    );
    const crab = Buffer.from("🦀");
    s.push(Buffer.concat([Buffer.from("ab\nc"), crab.subarray(0, 2)]));
    s.push(Buffer.concat([crab.subarray(2), Buffer.from("d\nstop\nraw\nbytes")]));
    expect(lines).toEqual(["ab", "c🦀d", "stop"]);
    expect(s.push(Buffer.from("!"))).toBe(false);
    expect(s.rest().toString()).toBe("raw\nbytes!");
    const o = new LineSplitter(
      () => undefined,
      () => overflow++,
      4,
    );
    expect(o.push(Buffer.from("toolongline"))).toBe(false);
    expect(overflow).toBe(1);
  });
});
