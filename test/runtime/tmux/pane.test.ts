/**
 * The pure parts of the shared pane operations (tmux/pane.ts) and of the docker channel's
 * stream demultiplexer: the nudge delivery decision, the text tail it looks for, key
 * validation, and the engine's stdout/stderr frames split across chunks.
 */
import { afterEach, describe, expect, it } from "vitest";
import { InvalidNameError } from "../../../internal/base/errors.js";
import { Demuxer } from "../../../internal/runtime/docker/channel.js";
import { captureScreens, validateKeys } from "../../../internal/runtime/tmux/pane.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

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

describe.skipIf(!HAS_TMUX)("captureScreens", () => {
  let fx: TmuxFixture | undefined;
  afterEach(async () => {
    await fx?.cleanup();
    fx = undefined;
  });

  it("captures in several command lists, in order; a session gone is undefined and only its list is asked again one by one", async () => {
    fx = await tmuxFixture();
    const client = fx.provider().control;
    await client.command(["new-session", "-d", "-s", "a", "--", "sh", "-c", "echo screen-a; exec sleep 300"]);
    await client.command(["new-session", "-d", "-s", "b", "--", "sh", "-c", "echo screen-b; exec sleep 300"]);
    for (const n of ["a", "b"])
      await expect
        .poll(async () => (await client.command(["capture-pane", "-p", "-t", `=${n}:`])).join("\n"))
        .toContain(`screen-${n}`);
    // 250 targets: three lists; the one gone sits in the second.
    const targets = Array.from({ length: 250 }, (_, i) => (i === 150 ? "=gone:" : i % 2 ? "=b:" : "=a:"));
    const sent: string[][] = [];
    const commandList = client.commandList.bind(client);
    client.commandList = (argvs, opts) => {
      sent.push(argvs.map((a) => a.at(-1)!));
      return commandList(argvs, opts);
    };
    let single = 0;
    const command = client.command.bind(client);
    client.command = (argv, opts) => {
      if (argv[0] === "capture-pane") single++;
      return command(argv, opts);
    };
    const each: { offset: number; screens: readonly (string[] | undefined)[] }[] = [];
    const screens = await captureScreens(client, targets, undefined, true, (got, offset) =>
      each.push({ offset, screens: got }),
    );
    // Each list is handed over as it comes in, with where it starts; together they are the result.
    expect(each.map((e) => [e.offset, e.screens.length]).sort((x, y) => x[0]! - y[0]!)).toEqual([
      [0, 100],
      [100, 100],
      [200, 50],
    ]);
    for (const e of each) expect(e.screens).toEqual(screens.slice(e.offset, e.offset + e.screens.length));
    expect(sent.map((l) => l.length)).toEqual([100, 100, 50]);
    expect(single).toBe(100);
    expect(screens).toHaveLength(250);
    screens.forEach((rows, i) => {
      if (i === 150) expect(rows).toBeUndefined();
      else expect(rows?.join("\n")).toContain(i % 2 ? "screen-b" : "screen-a");
    });
  });
});
