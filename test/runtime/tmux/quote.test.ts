import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControlClient } from "../../../internal/runtime/tmux/control-client.js";
import {
  commandLine,
  commandListLine,
  fromHex,
  gcSessionName,
  quoteArg,
  tmuxSessionName,
  toHex,
} from "../../../internal/runtime/tmux/quote.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

/** Values that would do something if tmux or a shell ever interpreted them. */
const HOSTILE = (dir: string): string[] => [
  "plain",
  "",
  " leading and trailing ",
  "a;b",
  "a ; kill-server",
  "a \\; kill-server",
  "x';kill-server;'y",
  `x";kill-server;"y`,
  "'single' \"double\" `back`",
  `$(touch ${dir}/pwned1) \`touch ${dir}/pwned2\``,
  `#(touch ${dir}/pwned3) #{session_name} #[fg=red] ## %1 %if`,
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  "$HOME ${PATH} $$ $",
  "~/home ~root ~",
  "\\",
  "ends with backslash\\",
  "\\n \\t \\033 \\u00e9 \\x41 \\\\",
  "{ braces } {",
  "line1\nline2\r\nline3\n",
  `${Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join("")}\x7f`,
  "\u0085 \u2028 \u2029 \u00a0",
  "héllo 日本語 🦀 e\u0301 \u{1F600} \u{10FFFF} مرحبا",
  "-rf",
  "--",
  "x".repeat(100_000),
];

describe("quoteArg", () => {
  it("quoteArg: plain words stay unquoted; anything else is double-quoted on one line", () => {
    expect(quoteArg("set-option")).toBe("set-option");
    expect(quoteArg("=a+b:")).toBe("=a+b:");
    expect(quoteArg("$1")).toBe('"\\$1"');
    expect(quoteArg("")).toBe('""');
    for (const v of HOSTILE("/tmp")) {
      const q = quoteArg(v);
      expect(q.includes("\n") || q.includes("\r")).toBe(false);
    }
  });

  it("quoteArg: `~`, `$`, quotes, backslashes and control bytes are escaped", () => {
    expect(quoteArg("~/x")).toBe('"\\176/x"');
    expect(quoteArg('a"b\\c$d')).toBe('"a\\"b\\\\c\\$d"');
    expect(quoteArg("a\nb\x01\x7f")).toBe('"a\\012b\\001\\177"');
  });

  it("quoteArg: NUL is refused", () => {
    expect(() => quoteArg("a\0b")).toThrow(TypeError);
  });

  it("commandLine: the command name must be a plain word", () => {
    expect(commandLine(["set-option", "-t", "$1", "@k", "v v"])).toBe('set-option -t "\\$1" @k "v v"');
    expect(() => commandLine(["kill-server;"])).toThrow(TypeError);
    expect(() => commandLine([])).toThrow(TypeError);
    expect(commandLine(["list-sessions"])).toBe("list-sessions");
  });

  it("commandListLine: each command quoted, joined by a lone `;`; an empty list or a bad name is refused", () => {
    expect(commandListLine([["capture-pane", "-p", "-t", "$1:"]])).toBe('capture-pane -p -t "\\$1:"');
    expect(
      commandListLine([
        ["capture-pane", "-p", "-t", "$1:"],
        ["display-message", "-p", "a;b"],
        ["kill-session", "-t", "=x:"],
      ]),
    ).toBe('capture-pane -p -t "\\$1:" ; display-message -p "a;b" ; kill-session -t =x:');
    expect(() => commandListLine([])).toThrow(TypeError);
    expect(() => commandListLine([["list-sessions"], ["bad name"]])).toThrow(TypeError);
  });
});

describe("session names and hex", () => {
  it("tmuxSessionName: dots map to '+' reversibly, so a.b and a_b stay distinct", () => {
    expect(tmuxSessionName("a.b")).toBe("a+b");
    expect(tmuxSessionName("a_b")).toBe("a_b");
    expect(gcSessionName(tmuxSessionName("w.1.x-y_z"))).toBe("w.1.x-y_z");
  });

  it("toHex/fromHex: round-trip and reject junk", () => {
    for (const v of HOSTILE("/tmp")) expect(fromHex(toHex(v))).toBe(v);
    expect(fromHex("abc")).toBeUndefined();
    expect(fromHex("zz")).toBeUndefined();
  });
});

describe.skipIf(!HAS_TMUX)("quoteArg against real tmux", () => {
  let fx: TmuxFixture;
  let client: ControlClient;
  beforeAll(async () => {
    fx = await tmuxFixture();
    client = new ControlClient({
      socket: { name: fx.socket },
      env: { PATH: process.env.PATH, HOME: "/nonexistent-home" },
    });
  });
  afterAll(async () => {
    await client?.close();
    await fx?.cleanup();
  });

  it("quoteArg: every hostile value round-trips byte for byte through tmux's parser and nothing runs", async () => {
    const dir = await fx.dir();
    const values = HOSTILE(dir);
    for (const [i, v] of values.entries()) {
      if (v === "") continue; // tmux keeps no empty buffers; checked through an option below
      const file = join(dir, `out-${i}`);
      await client.command(["set-buffer", "-b", `q${i}`, "--", v]);
      await client.command(["save-buffer", "-b", `q${i}`, file]);
      expect(
        (await readFile(file)).equals(Buffer.from(v, "utf8")),
        `value ${i}: ${JSON.stringify(v.slice(0, 60))}`,
      ).toBe(true);
    }
    await client.command(["set-option", "-g", "@empty", ""]);
    expect(await client.command(["show-options", "-gv", "@empty"])).toEqual([""]);
    // The server survived every "; kill-server" and no substitution ran.
    expect(await client.command(["display-message", "-p", "alive"])).toEqual(["alive"]);
    expect((await readdir(dir)).filter((f) => f.startsWith("pwned"))).toEqual([]);
  });

  it("quoteArg: a lone surrogate arrives as U+FFFD", async () => {
    const dir = await fx.dir();
    await client.command(["set-buffer", "-b", "sur", "--", "a\ud800b"]);
    await client.command(["save-buffer", "-b", "sur", join(dir, "s")]);
    expect(await readFile(join(dir, "s"), "utf8")).toBe("a\ufffdb");
  });
});
