/**
 * Nudge delivery (internal/runtime/screen/delivery.ts) on the real terminal providers, tmux and
 * subprocess alike, against small programs that reproduce how agent CLIs take input
 * (test/fixtures/input-programs.py): an Ink-style raw reader, a busy spinner, Codex's early
 * prompt, an unnumbered cursor menu, a program that shows nothing, a line reader with echo.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGcError, type NudgeNotDeliveredError } from "../../internal/base/errors.js";
import type { Provider, StartConfig } from "../../internal/runtime/provider.js";
import {
  enterMadeNewline,
  inputTaken,
  type TerminalState,
  terminalText,
} from "../../internal/runtime/screen/delivery.js";
import { makeCity, type TestCity } from "./subprocess/helpers.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./tmux/helpers.js";

const PROGRAMS = fileURLToPath(new URL("../fixtures/input-programs.py", import.meta.url));

describe("terminalText: terminal control in nudge text is neutralised by default", () => {
  it.each([
    ["bracketed-paste end marker", "a\x1b[201~b", "a\u241b[201~b"],
    ["bracketed-paste start marker", "\x1b[200~x", "\u241b[200~x"],
    ["OSC 52 clipboard write", "\x1b]52;c;ZXZpbA==\x07", "\u241b]52;c;ZXZpbA==\u2407"],
    ["Ctrl-C and Ctrl-D", "stop\x03\x04", "stop\u2403\u2404"],
    ["CR (would press Enter mid-text)", "one\rtwo\r\nthree", "one\ntwo\nthree"],
    ["C1 CSI", "x\u009b31my", "x\ufffd31my"],
    ["DEL", "ab\x7f", "ab\u2421"],
    ["tab and newline kept", "a\tb\nc", "a\tb\nc"],
    ["unicode kept", "héllo 🦀 日本", "héllo 🦀 日本"],
  ])("%s", (_label, input, expected) => {
    expect(terminalText(input)).toBe(expected);
  });

  it("raw: the text is passed unchanged", () => {
    const hostile = "a\x1b[201~b\r\x03";
    expect(terminalText(hostile, { raw: true })).toBe(hostile);
  });
});

describe("inputTaken: only the input line is evidence", () => {
  const typed: TerminalState = {
    rows: ["⠋ Working (esc to cancel, 1s)", "│ > second prompt", "╰────╯", ""],
    cursorX: 0,
    cursorY: 3,
  };
  it("a spinner changing elsewhere is not taken", () => {
    expect(
      inputTaken(typed, { ...typed, rows: ["⠙ Working (esc to cancel, 2s)", ...typed.rows.slice(1)] }, 1),
    ).toBe(false);
  });
  it("the input line cleared is taken", () => {
    expect(inputTaken(typed, { ...typed, rows: [typed.rows[0]!, "│ > ", ...typed.rows.slice(2)] }, 1)).toBe(
      true,
    );
  });
  it("the scrollback growing alone is not taken (tmux scrolls a cleared screen into it)", () => {
    expect(inputTaken({ ...typed, history: 3 }, { ...typed, history: 4 }, 1)).toBe(false);
  });
});

describe("enterMadeNewline: Enter that opened a line in the input instead of submitting", () => {
  // Gemini CLI 0.61's input box (no side borders) with its footer; the cursor after the text.
  const footer = ["", " workspace (/directory)      sandbox", " /tmp/work                   no sandbox"];
  const typed: TerminalState = {
    rows: ["✦ Done.", "────────────", " > Say hello, please.", ...footer],
    cursorX: 21,
    cursorY: 2,
  };
  const tail = "Say hello, please.";
  it("the box grew by an empty line under the text, cursor on it: a newline", () => {
    const after = { rows: [...typed.rows.slice(0, 3), "", ...footer], cursorX: 3, cursorY: 3 };
    expect(enterMadeNewline(typed, after, 2, tail)).toBe(true);
  });
  it("a full screen scrolled up by the new line: a newline", () => {
    const after = { rows: [...typed.rows.slice(1, 3), "", ...footer], cursorX: 3, cursorY: 2 };
    expect(enterMadeNewline(typed, after, 2, tail)).toBe(true);
  });
  it("the input cleared (submitted): not a newline", () => {
    const after = {
      rows: [...typed.rows.slice(0, 2), " >   Type your message", ...footer],
      cursorX: 3,
      cursorY: 2,
    };
    expect(enterMadeNewline(typed, after, 2, tail)).toBe(false);
  });
  it("a line reader that took the line (nothing under the cursor): not a newline", () => {
    const shell: TerminalState = { rows: ["$ true"], cursorX: 6, cursorY: 0 };
    expect(enterMadeNewline(shell, { rows: ["$ true", ""], cursorX: 0, cursorY: 1 }, 0, "true")).toBe(false);
    expect(enterMadeNewline(shell, { rows: ["$ true", "$"], cursorX: 2, cursorY: 1 }, 0, "true")).toBe(false);
  });
});

interface Harness {
  readonly provider: Provider;
  config(program: string, extra?: Partial<StartConfig>): Promise<StartConfig>;
  cleanup(): Promise<void>;
}

const harnesses: [string, boolean, () => Promise<Harness>][] = [
  [
    "tmux",
    HAS_TMUX,
    async () => {
      const fx: TmuxFixture = await tmuxFixture();
      return {
        provider: fx.provider({ nudgeConfirmMs: 1_500, nudgeIdleWaitMs: 0 }),
        config: async (program, extra) => ({
          command: `exec python3 ${PROGRAMS} ${program}`,
          workDir: await fx.dir(),
          env: {},
          ...extra,
        }),
        cleanup: () => fx.cleanup(),
      };
    },
  ],
  [
    "subprocess",
    true,
    async () => {
      const city: TestCity = await makeCity();
      return {
        provider: city.provider,
        config: (program, extra) => city.config(`exec python3 ${PROGRAMS} ${program}`, extra),
        cleanup: () => city.cleanup(),
      };
    },
  ],
];

describe.each(harnesses)("nudge delivery on %s", (_label, available, make) => {
  let h: Harness;
  let seq = 0;
  beforeAll(async () => {
    if (available) h = await make();
  });
  afterAll(async () => {
    await h?.cleanup();
  });
  const read = (cfg: StartConfig, f: string) => readFile(join(cfg.workDir, f), "utf8").catch(() => undefined);
  const started = async (program: string, shows: string, extra: Partial<StartConfig> = {}) => {
    const name = `${program}-${++seq}`;
    const cfg = await h.config(program, extra);
    await h.provider.start(name, cfg);
    await expect.poll(() => h.provider.peek(name, 30), { timeout: 10_000 }).toContain(shows);
    return { name, cfg };
  };
  const failure = async (p: Promise<unknown>): Promise<NudgeNotDeliveredError> => {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isGcError(e, "GC_NUDGE_NOT_DELIVERED"), `expected "not delivered", got ${String(e)}`).toBe(true);
    return e as NudgeNotDeliveredError;
  };

  it.skipIf(!available)("an Ink-style program gets Enter on its own and submits the text", async () => {
    const { name, cfg } = await started("ink", "│ >");
    await h.provider.nudge(name, "say hi");
    expect(await read(cfg, "submitted.out")).toBe("say hi\n");
  });

  it.skipIf(!available)(
    "a busy program with a spinner: the text left in its input is not delivered",
    async () => {
      const { name, cfg } = await started("spinner", "Reticulating");
      const e = await failure(h.provider.nudge(name, "second prompt"));
      expect(e.message).toMatch(/still on the input line.*second prompt/);
      expect(e.sent).toBe(true);
      expect(await read(cfg, "submitted.out")).toBeUndefined();
    },
  );

  it.skipIf(!available)(
    "Codex's early prompt: Enter swallowed during startup is pressed again, nudges never merge",
    async () => {
      const { name, cfg } = await started("codex", "›");
      await h.provider.nudge(name, "first prompt");
      await h.provider.nudge(name, "second prompt");
      expect(await read(cfg, "submitted.out")).toBe("first prompt\nsecond prompt\n");
    },
  );

  it.skipIf(!available)(
    "Gemini CLI's paste guard: an Enter taken as a newline is taken back and pressed again",
    async () => {
      const { name, cfg } = await started("pasteguard", "workspace");
      await h.provider.nudge(name, "say hi");
      await h.provider.nudge(name, "and again");
      expect(await read(cfg, "submitted.out")).toBe("say hi\nand again\n");
    },
  );

  it.skipIf(!available)("an unnumbered cursor menu is never typed into", async () => {
    const { name, cfg } = await started("menu", "❯ OpenAI");
    const e = await failure(h.provider.nudge(name, "hello"));
    expect(e.message).toMatch(/menu or dialog is waiting for a choice.*Connect a Provider/);
    // Refused before a key was sent: nothing is in flight that could pick an option later.
    expect(e.sent).toBe(false);
    expect(await read(cfg, "picked.out")).toBeUndefined();
  });

  it.skipIf(!available)(
    "a program that shows nothing: sent but unconfirmed, Enter pressed once",
    async () => {
      const { name, cfg } = await started("silent", "");
      await expect.poll(() => read(cfg, "ready.out"), { timeout: 10_000 }).toBe("raw\n");
      const e = await failure(h.provider.nudge(name, "hello"));
      expect(e.sent).toBe(true);
      expect(e.message).toMatch(/was sent, but the screen shows no sign/);
      expect(await read(cfg, "taken.out")).toBe("hello\r");
    },
  );

  it.skipIf(!available)("a line reader with echo: each nudge is one line, no extra Enter", async () => {
    const { name, cfg } = await started("lines", "lines>");
    await h.provider.nudge(name, "one");
    await h.provider.nudge(name, "two\nthree");
    // A last nudge as the barrier: an extra Enter from the ones before is an empty line before it.
    await h.provider.nudge(name, "four");
    await expect.poll(() => read(cfg, "submitted.out"), { timeout: 10_000 }).toMatch(/four\n$/);
    expect(await read(cfg, "submitted.out")).toBe("one\ntwo\nthree\nfour\n");
  });

  it.skipIf(!available)(
    "hostile text: paste markers and control keys arrive as characters in one submission",
    async () => {
      const { name, cfg } = await started("codex", "›");
      await expect.poll(() => read(cfg, "started.out"), { timeout: 10_000 }).toBe("started\n");
      await h.provider.nudge(name, "a\x1b[201~b\x1b[200~c\x03d");
      expect(await read(cfg, "submitted.out")).toBe("a\u241b[201~b\u241b[200~c\u2403d\n");
      expect(await h.provider.isRunning(name)).toBe(true);
    },
  );

  it.skipIf(!available)(
    "raw: the text is typed unchanged (its end marker ends the paste early)",
    async () => {
      const { name, cfg } = await started("codex", "›");
      await expect.poll(() => read(cfg, "started.out"), { timeout: 10_000 }).toBe("started\n");
      await h.provider.nudge(name, "x\x1b[201~y", { raw: true });
      expect(await read(cfg, "submitted.out")).toBe("xy\n");
    },
  );
});
