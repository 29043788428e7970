import { describe, expect, it } from "vitest";
import { type ControlEvent, ControlParser, decodeOutput } from "../../../internal/runtime/tmux/protocol.js";

/** Writes `lines` as one stream, one line per write. */
function feed(lines: string[]): ControlEvent[] {
  const p = new ControlParser();
  return lines.flatMap((l) => p.write(`${l}\n`));
}

/** Writes `stream` cut into chunks at `cuts` (byte offsets). */
function feedCut(stream: Buffer, cuts: number[]): ControlEvent[] {
  const p = new ControlParser();
  const evs: ControlEvent[] = [];
  let at = 0;
  for (const c of [...cuts, stream.length]) {
    evs.push(...p.write(stream.subarray(at, c)));
    at = c;
  }
  expect(p.inBlock).toBe(false);
  return evs;
}

describe("ControlParser", () => {
  it("write: a block yields its output lines and status", () => {
    expect(feed(["%begin 100 7 1", "a", "", "b", "%end 100 7 1"])).toEqual([
      { type: "reply", time: 100, number: 7, flags: 1, ok: true, lines: ["a", "", "b"] },
    ]);
    expect(feed(["%begin 100 8 1", "unknown command: x", "%error 100 8 1"])[0]).toMatchObject({ ok: false });
  });

  it("write: only the exact matching %end closes a block; look-alikes are output", () => {
    const evs = feed([
      "%begin 100 9 1",
      "%end 100 9 0",
      "%end 100 8 1",
      "%error 101 9 1",
      "%begin 100 10 1",
      "%end 100 9 1 ",
      "%exit",
      "%end 100 9 1",
    ]);
    expect(evs).toHaveLength(1);
    expect(evs[0]).toMatchObject({ number: 9 });
    expect(evs[0]?.type === "reply" && evs[0].lines).toEqual([
      "%end 100 9 0",
      "%end 100 8 1",
      "%error 101 9 1",
      "%begin 100 10 1",
      "%end 100 9 1 ",
      "%exit",
    ]);
  });

  it("write: notifications outside blocks, with and without arguments", () => {
    expect(feed(["%sessions-changed", "%session-changed $1 name with spaces", "%exit"])).toEqual([
      { type: "notification", name: "sessions-changed", args: "" },
      { type: "notification", name: "session-changed", args: "$1 name with spaces" },
      { type: "notification", name: "exit", args: "" },
    ]);
  });

  it("write: replies and notifications interleave between blocks", () => {
    const evs = feed(["%begin 1 1 0", "%end 1 1 0", "%window-add @0", "%begin 1 2 1", "x", "%end 1 2 1"]);
    expect(evs.map((e) => e.type)).toEqual(["reply", "notification", "reply"]);
  });
});

describe("ControlParser: blocks across chunks", () => {
  const stream = Buffer.from(
    [
      "%begin 5 1 0",
      "%end 5 1 0",
      "%sessions-changed",
      "%begin 5 2 1",
      "%end 5 2 1",
      "%begin 5 3 1",
      "",
      "%end 5 3 1",
      "%begin 5 4 1",
      "é ü — 字",
      "%end 5 4 1 trailing",
      "%end 5 4 1",
      "%output %1 a\\015b",
      "%begin 5 5 1",
      "bad",
      "%error 5 5 1",
      "",
    ].join("\n"),
  );
  const whole = feedCut(stream, []);

  it("write: empty, one-empty-line, multi-byte, look-alike and %error blocks, notifications between", () => {
    expect(whole).toEqual([
      { type: "reply", time: 5, number: 1, flags: 0, ok: true, lines: [] },
      { type: "notification", name: "sessions-changed", args: "" },
      { type: "reply", time: 5, number: 2, flags: 1, ok: true, lines: [] },
      { type: "reply", time: 5, number: 3, flags: 1, ok: true, lines: [""] },
      { type: "reply", time: 5, number: 4, flags: 1, ok: true, lines: ["é ü — 字", "%end 5 4 1 trailing"] },
      { type: "notification", name: "output", args: "%1 a\\015b" },
      { type: "reply", time: 5, number: 5, flags: 1, ok: false, lines: ["bad"] },
    ]);
  });

  it("write: the same events whichever byte offsets the stream is cut at", () => {
    for (let a = 1; a < stream.length; a++) {
      expect(feedCut(stream, [a])).toEqual(whole);
      // and cut into three, the second cut a few bytes later (inside the same line or the next)
      expect(feedCut(stream, [a, Math.min(stream.length, a + 7)])).toEqual(whole);
    }
    // one byte per write
    expect(
      feedCut(
        stream,
        Array.from({ length: stream.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(whole);
  });

  it("write: a block larger than the buffer, in many chunks, arrives whole", () => {
    const lines = Array.from({ length: 50_000 }, (_, i) => `line ${i} ${"x".repeat(i % 97)}`);
    const big = Buffer.from(`%begin 9 9 1\n${lines.join("\n")}\n%end 9 9 1\n%exit\n`);
    const cuts = Array.from({ length: Math.floor(big.length / 4096) }, (_, i) => (i + 1) * 4096 - (i % 3));
    const evs = feedCut(big, cuts);
    expect(evs).toHaveLength(2);
    expect(evs[0]).toMatchObject({ type: "reply", ok: true, number: 9 });
    expect(evs[0]?.type === "reply" && evs[0].lines).toEqual(lines);
    expect(evs[1]).toEqual({ type: "notification", name: "exit", args: "" });
  });
});

describe("decodeOutput", () => {
  it("decodeOutput: octal escapes become bytes; UTF-8 passes through", () => {
    expect(decodeOutput("a\\015\\012b\\134c é").toString("utf8")).toBe("a\r\nb\\c é");
    expect(decodeOutput("\\033[1m")).toEqual(Buffer.from("\x1b[1m"));
    expect(decodeOutput("trailing \\01").toString()).toBe("trailing \\01");
  });
});
