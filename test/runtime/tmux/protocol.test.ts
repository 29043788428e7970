import { describe, expect, it } from "vitest";
import { type ControlEvent, ControlParser, decodeOutput } from "../../../internal/runtime/tmux/protocol.js";

function feed(lines: string[]): ControlEvent[] {
  const p = new ControlParser();
  return lines.flatMap((l) => {
    const ev = p.push(l);
    return ev ? [ev] : [];
  });
}

describe("ControlParser", () => {
  it("push: a block yields its output lines and status", () => {
    expect(feed(["%begin 100 7 1", "a", "", "b", "%end 100 7 1"])).toEqual([
      { type: "reply", time: 100, number: 7, flags: 1, ok: true, lines: ["a", "", "b"] },
    ]);
    expect(feed(["%begin 100 8 1", "unknown command: x", "%error 100 8 1"])[0]).toMatchObject({ ok: false });
  });

  it("push: only the exact matching %end closes a block; look-alikes are output", () => {
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

  it("push: notifications outside blocks, with and without arguments", () => {
    expect(feed(["%sessions-changed", "%session-changed $1 name with spaces", "%exit"])).toEqual([
      { type: "notification", name: "sessions-changed", args: "" },
      { type: "notification", name: "session-changed", args: "$1 name with spaces" },
      { type: "notification", name: "exit", args: "" },
    ]);
  });

  it("push: replies and notifications interleave between blocks", () => {
    const evs = feed(["%begin 1 1 0", "%end 1 1 0", "%window-add @0", "%begin 1 2 1", "x", "%end 1 2 1"]);
    expect(evs.map((e) => e.type)).toEqual(["reply", "notification", "reply"]);
  });
});

describe("decodeOutput", () => {
  it("decodeOutput: octal escapes become bytes; UTF-8 passes through", () => {
    expect(decodeOutput("a\\015\\012b\\134c é").toString("utf8")).toBe("a\r\nb\\c é");
    expect(decodeOutput("\\033[1m")).toEqual(Buffer.from("\x1b[1m"));
    expect(decodeOutput("trailing \\01").toString()).toBe("trailing \\01");
  });
});
