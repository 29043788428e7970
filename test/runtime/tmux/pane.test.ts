/**
 * The pure parts of the shared pane operations (tmux/pane.ts) and of the docker channel's
 * stream demultiplexer: the nudge delivery decision, the text tail it looks for, key
 * validation, and the engine's stdout/stderr frames split across chunks.
 */
import { describe, expect, it } from "vitest";
import { InvalidNameError } from "../../../internal/base/errors.js";
import { Demuxer } from "../../../internal/runtime/docker/channel.js";
import { validateKeys } from "../../../internal/runtime/tmux/pane.js";

describe("pane operations (pure parts)", () => {
  it("validateKeys: empty names and NUL are refused", () => {
    expect(() => validateKeys(["Enter", "C-c", "y"])).not.toThrow();
    expect(() => validateKeys([""])).toThrow(InvalidNameError);
    expect(() => validateKeys(["a\0b"])).toThrow(InvalidNameError);
  });

  it("Demuxer: stdout and stderr frames, split anywhere across chunks", () => {
    const frame = (type: number, text: string) => {
      const body = Buffer.from(text);
      const h = Buffer.alloc(8);
      h[0] = type;
      h.writeUInt32BE(body.length, 4);
      return Buffer.concat([h, body]);
    };
    const all = Buffer.concat([frame(1, "%begin 1 2 1\n"), frame(2, "warn"), frame(1, "%end 1 2 1\n")]);
    for (const cut of [1, 5, 8, 9, 20, all.length - 1]) {
      const out: string[] = [];
      const err: string[] = [];
      const d = new Demuxer(
        (b) => out.push(b.toString()),
        (b) => err.push(b.toString()),
      );
      d.push(all.subarray(0, cut));
      d.push(all.subarray(cut));
      expect(out.join("")).toBe("%begin 1 2 1\n%end 1 2 1\n");
      expect(err.join("")).toBe("warn");
    }
  });
});
