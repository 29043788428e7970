/**
 * The real first screens of Claude Code, Codex and Gemini CLI (recorded with
 * `tmux capture-pane -e` by scripts/record-agent-screens.mjs at 80×24 and 120×40; versions in
 * test/fixtures/screens/versions.json), classified by the shared dialog code: which dialog,
 * which options, which answer gc gives, or "operator interaction needed"; and the turn
 * state (busy / idle) each CLI's own markers show.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BUILTIN_PRESETS } from "../../internal/config/builtins.js";
import { decideApproval } from "../../internal/reconcile/approval.js";
import { busyMarkersShown, showsNewMarker } from "../../internal/runtime/agent-screens.js";
import { notSeen } from "../../internal/runtime/lifecycle/start.js";
import { interruptTurn, isApprovalQuestion, type Provider } from "../../internal/runtime/provider.js";
import {
  findInteraction,
  screenAwaitsChoice,
  screenLooksBusy,
  screenLooksIdle,
  screenNeedsOperator,
  screenShowsPrompt,
} from "../../internal/runtime/screen/classify.js";
import { dismissStartupDialog, type ScreenIO } from "../../internal/runtime/screen/keys.js";
import { matchDialog } from "../../internal/runtime/screen/parse.js";

const DIR = new URL("../fixtures/screens/", import.meta.url);

/** The text of a `capture-pane -e` screen: SGR and other escape sequences removed. */
function plain(ansi: string): string {
  return ansi.replace(/\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]/g, "");
}

function screen(name: string): string {
  return plain(readFileSync(new URL(name, DIR), "utf8"));
}

const SIZES = ["80x24", "120x40"];
const FILES = readdirSync(DIR).filter((f) => f.endsWith(".ansi"));

/** What gc must make of each recorded state. */
const EXPECTED: Record<
  string,
  {
    dialog?: string;
    roles?: string[];
    chose?: string;
    operator?: boolean;
    question?: RegExp;
    turn?: "busy" | "idle";
  }
> = {
  "claude-trust": {
    dialog: "trust-folder",
    roles: ["exit", "accept"],
    chose: "Yes, I trust this folder",
    question: /Is this a project you created or one you trust\?/,
  },
  "claude-api-key": {
    dialog: "custom-api-key",
    roles: ["accept", "decline"],
    chose: "Yes",
    question: /Do you want to use this API key\?/,
  },
  "claude-bypass": { dialog: "bypass-permissions", roles: ["exit", "accept"], chose: "Yes, I accept" },
  "claude-idle": { turn: "idle" },
  "claude-busy": { turn: "busy" },
  "codex-sign-in": {
    dialog: "codex-sign-in",
    roles: ["chatgpt", "device-code", "other-way"],
    operator: true,
    question: /^Choose how you want to use Codex\.$/,
  },
  // `gc session respond codex 3`: the sign-in menu's "Sign in another way".
  "codex-sign-in-other": {
    dialog: "codex-sign-in-other",
    roles: ["api-key", "bedrock"],
    operator: true,
    question: /^Sign in another way$/,
  },
  // …then `1`: the key field. Only a person types a key: pending, no options.
  "codex-api-key-field": {
    dialog: "codex-api-key-field",
    roles: [],
    operator: true,
    question: /^Codex needs an API key\b/,
  },
  "codex-idle": { turn: "idle" },
  "codex-busy": { turn: "busy" },
  "gemini-trust": {
    dialog: "trust-folder",
    roles: ["accept", "accept-parent", "exit"],
    chose: "Trust folder (work)",
    question: /^Do you trust the files in this folder\?\n/,
  },
  "gemini-auth-api-key": {
    dialog: "gemini-auth-api-key",
    roles: ["google", "api-key", "vertex"],
    chose: "Use Gemini API Key",
  },
  "gemini-api-key-field": { dialog: "gemini-api-key-field", chose: "(submitted as shown)" },
  "gemini-auth": {
    dialog: "gemini-auth",
    roles: ["google", "api-key", "vertex"],
    operator: true,
    question: /How would you like to authenticate for this project\?/,
  },
  "gemini-idle": { turn: "idle" },
  "copilot-trust": {
    dialog: "trust-folder",
    roles: ["accept", "accept-remember", "exit"],
    chose: "Yes",
    question: /^Do you trust the files in this folder\?$/,
  },
  // Signed out: at its input with "Please use /login"; no busy screen exists offline.
  "copilot-login": { turn: "idle" },
  "opencode-idle": { turn: "idle" },
  "opencode-busy": { turn: "busy" },
  "gemini-busy": { turn: "busy" },
};

/** A terminal replaying a recorded dialog: keys move the marker the way the CLI does. */
class Replay implements ScreenIO {
  readonly keys: string[] = [];
  private lines: string[];
  private readonly rows: number[];
  private readonly marker: string;
  private cursor: number;
  done = false;
  constructor(text: string) {
    this.lines = text.split("\n");
    const m = matchDialog(text);
    const labels = m?.menu?.options.map((o) => o.label) ?? [];
    this.rows = labels.map((l) => this.lines.findIndex((line) => line.includes(l)));
    this.cursor = m?.menu?.selected ?? -1;
    const row = this.lines[this.rows[this.cursor] ?? -1] ?? "";
    this.marker = [..."❯›>●"].find((c) => row.includes(c)) ?? "❯";
  }
  async screen(): Promise<string> {
    return this.done ? "after the dialog\n> " : this.lines.join("\n");
  }
  async sendKeys(keys: readonly string[]): Promise<void> {
    for (const k of keys) {
      this.keys.push(k);
      if (k === "Enter") this.done = true;
      else if (k === "Up" || k === "Down") {
        const next = Math.max(0, Math.min(this.rows.length - 1, this.cursor + (k === "Down" ? 1 : -1)));
        this.move(this.cursor, next);
        this.cursor = next;
      }
    }
  }
  private move(from: number, to: number): void {
    const a = this.rows[from]!;
    const b = this.rows[to]!;
    const col = this.lines[a]!.indexOf(this.marker);
    this.lines[a] = `${this.lines[a]!.slice(0, col)} ${this.lines[a]!.slice(col + 1)}`;
    this.lines[b] = `${this.lines[b]!.slice(0, col)}${this.marker}${this.lines[b]!.slice(col + 1)}`;
  }
}

describe("recorded agent screens", () => {
  it("every state is recorded at every size, and every recording is classified", () => {
    for (const state of Object.keys(EXPECTED))
      for (const size of SIZES) expect(FILES).toContain(`${state}-${size}.ansi`);
    for (const f of FILES) expect(Object.keys(EXPECTED)).toContain(f.replace(/-\d+x\d+\.ansi$/, ""));
  });

  for (const [state, want] of Object.entries(EXPECTED)) {
    for (const size of SIZES) {
      const file = `${state}-${size}.ansi`;
      it(`${file}: ${want.dialog ?? want.turn}`, async () => {
        const text = screen(file);
        const m = matchDialog(text);
        if (!want.dialog) {
          expect(m).toBeUndefined();
          expect(screenAwaitsChoice(text)).toBe(false);
          expect(findInteraction(text)).toBeUndefined();
          const agent = state.split("-")[0]!;
          expect(screenLooksBusy(text)).toBe(want.turn === "busy");
          // The preset's ready prompt is on the screen; the busy marker decides the turn
          // (the idle rule of the providers' waitForIdle, hence of gc run and nudges).
          const prefix = BUILTIN_PRESETS[agent]!.ready_prompt_prefix!;
          expect(screenShowsPrompt(text, prefix)).toBe(true);
          expect(screenLooksIdle(text, prefix)).toBe(want.turn === "idle");
          return;
        }
        expect(m?.spec.id).toBe(want.dialog);
        expect(m?.status).toBe("match");
        if (m?.status !== "match") return;
        if (want.roles) expect(m.roles).toEqual(want.roles);
        expect(screenLooksBusy(text)).toBe(false);
        // A dialog is never idle, whatever prompt-like marker it shows (Claude's `❯ No, exit`).
        const agent = state.split("-")[0]!;
        expect(screenLooksIdle(text, BUILTIN_PRESETS[agent]!.ready_prompt_prefix)).toBe(false);
        expect(screenNeedsOperator(text)).toBe(want.operator === true);
        const pending = findInteraction(text);
        if (want.question) expect(pending?.prompt).toMatch(want.question);
        // None of the recorded dialogs is a tool/command approval: an approval policy (even
        // the default allow-all) must leave each to the operator, never "approve" it.
        if (pending) {
          expect(isApprovalQuestion(pending)).toBe(false);
          expect(decideApproval("allow-all", pending)).toEqual({ action: "ask", by: "not-an-approval" });
        }
        // A dialog that needs an operator is a pending interaction gc status shows.
        if (want.operator) expect(pending).toBeDefined();
        // The summary is the question, never the logo or tips above it.
        expect(pending?.prompt ?? "").not.toMatch(
          /OpenAI Codex|Tips for getting started|▐▛███▛█|GEMINI\.md|Copilot v/,
        );
        const io = new Replay(text);
        const step = await dismissStartupDialog(io, text, { settleMs: 200, pollMs: 5, confirmMs: 200 });
        if (want.operator) {
          expect(step).toEqual({ status: "none" });
          expect(io.keys).toEqual([]);
        } else {
          expect(step).toEqual({ status: "handled", dialog: want.dialog, chose: want.chose });
          expect(io.keys.at(-1)).toBe("Enter");
        }
      });
    }
  }
});

describe("Gemini CLI: a prompt queued while it initialises is a turn under way", () => {
  // Seen live (tmux, Gemini CLI 0.61.0 under load): Enter pressed before its initialisation ended.
  const box = [
    "────────────────────────────────",
    " Shift+Tab to accept edits",
    "",
    " >   Type your message or @path/to/file",
    "",
    " workspace (/directory)      sandbox",
  ];
  const queued = ["", " ℹ Initializing... Prompts will be queued.", "", ...box].join("\n");
  it("queued: busy, though no spinner shows", () => {
    expect(screenLooksBusy(queued)).toBe(true);
    const listed = ["", "  Queued (press ↑ to edit):", "    Say hello, please.", "", ...box].join("\n");
    expect(screenLooksBusy(listed)).toBe(true);
  });
  it("its reply, an error or a cancellation drawn below the notice: no longer busy", () => {
    for (const end of ["✦ Hello from the model double.", "✕ [API Error: quota]", "ℹ Request cancelled."]) {
      const done = [
        "",
        " ℹ Initializing... Prompts will be queued.",
        "",
        " > Say hello",
        "",
        end,
        "",
        ...box,
      ];
      expect(screenLooksBusy(done.join("\n"))).toBe(false);
    }
  });
});

describe("readiness that went on without the prompt (notSeen)", () => {
  it("names a startup dialog left on screen with text below it, and quotes no screen text", () => {
    const trust = screen("gemini-trust-80x24.ansi");
    // A program that printed under its own live dialog: the frame reads as an old one.
    const below = `${trust.trimEnd()}\nFailed to check for updates: offline\n`;
    expect(notSeen("> ", 60_000, below)).toBe(
      `ready prompt "> " not seen within 60 s; went on; the screen shows the ${EXPECTED["gemini-trust"]!.dialog} dialog with text below it (taken for an old frame, not answered)`,
    );
    expect(notSeen("> ", 2_400, screen("gemini-busy-80x24.ansi"))).toBe(
      'ready prompt "> " not seen within 2 s; went on',
    );
    expect(notSeen("> ", 60_000, undefined)).toBe(
      'ready prompt "> " not seen within 60 s; went on (no screen to look at)',
    );
  });
});

describe("opencode's turn-end tag (preset turn_end_markers) and interrupt", () => {
  const ends = BUILTIN_PRESETS.opencode!.turn_end_markers!;
  const tag = (t: string) => `     ▣  Build · Test model · ${t}                                   0% used`;
  const idle = [
    "  ┃  Say hello, please.",
    "     Hello from the model double.",
    tag("1.9s"),
    "  ┃  Build · Test model Double",
  ];

  it("a new tag (a duration or 'interrupted') ends the turn; the tag in progress, the old ones and the sidebar beside them do not", () => {
    const before = idle.join("\n");
    // Prompt taken, turn not started: the transcript shows the prompt, no new tag.
    const taken = [...idle, "  ┃  Say hello again.", "  ┃  Build · Test model Double"].join("\n");
    expect(showsNewMarker(before, taken, ends)).toBe(false);
    // Working: the tag without its time.
    expect(showsNewMarker(before, `${taken}\n     ▣  Build · Test model        LSP`, ends)).toBe(false);
    // The old tag redrawn beside other sidebar text is the same tag.
    expect(showsNewMarker(before, before.replace("0% used", "$0.00 spent"), ends)).toBe(false);
    for (const t of ["443ms", "1.9s", "2m 0s", "interrupted"])
      expect(showsNewMarker(before, `${taken}\n${tag(t)}`, ends), t).toBe(true);
    // One more of the same text than before is new.
    expect(showsNewMarker(before, `${before}\n${tag("1.9s")}`, ends)).toBe(true);
    expect(showsNewMarker(before, `${before}\n${tag("1.9s")}`, undefined)).toBe(false);
  });

  it("busyMarkersShown: 'esc interrupt', then 'esc again to interrupt' after one Escape, then none", () => {
    const footer = (s: string) => `  ┃  Build · Test model Double\n   ■■⬝⬝⬝⬝⬝⬝  ${s}`;
    const first = busyMarkersShown(footer("esc interrupt"));
    const again = busyMarkersShown(footer("esc again to interrupt"));
    expect(first).toHaveLength(1);
    expect(again).toHaveLength(1);
    expect(again).not.toEqual(first);
    expect(busyMarkersShown("  /tmp/work   19  ctrl+p commands")).toEqual([]);
    // A session's own marker (qwen's), which no builtin one matches.
    expect(busyMarkersShown("Reticulating (3s · esc to cancel)", ["\\(\\d+s · esc to cancel\\)"])).toEqual([
      "\\(\\d+s · esc to cancel\\)",
    ]);
  });
});

describe("interruptTurn: keys pressed one at a time on the screen's answer", () => {
  /** An opencode turn: the first Escape arms ("esc again to interrupt"), the second ends it. */
  function opencodeTurn(opts: { deafMs?: number } = {}) {
    const writes: string[][] = [];
    let escapes = 0;
    let frame = 0;
    const heardAt = Date.now() + (opts.deafMs ?? 0);
    const provider = {
      peek: async () => {
        frame++; // the spinner moves on every look: a changed screen is no evidence
        const spin = "■".repeat(frame % 8).padEnd(8, "⬝");
        if (escapes >= 2)
          return "     ▣  Build · Test model · interrupted\n   /tmp/work   19  ctrl+p commands";
        return `  ┃  Build · Test model Double\n   ${spin}  ${escapes === 1 ? "esc again to interrupt" : "esc interrupt"}`;
      },
      sendKeys: async (_name: string, keys: readonly string[]) => {
        writes.push([...keys]);
        if (Date.now() >= heardAt) escapes += keys.filter((k) => k === "Escape").length > 1 ? 0 : 1;
      },
      interrupt: async () => {
        writes.push(["C-c"]);
      },
    } as unknown as Provider;
    return { provider, writes, escapes: () => escapes };
  }

  it("opencode: the second Escape only once 'esc again to interrupt' shows, each in its own write", async () => {
    const t = opencodeTurn();
    await interruptTurn(t.provider, "oc", ["Escape", "Escape"], { pollMs: 1 });
    expect(t.writes).toEqual([["Escape"], ["Escape"]]);
    expect(t.escapes()).toBe(2);
  });

  it("a key the program did not take (no marker change within keyAnswerMs) is followed by the next anyway", async () => {
    const t = opencodeTurn({ deafMs: 60_000 });
    await interruptTurn(t.provider, "oc", ["Escape", "Escape"], { pollMs: 1, keyAnswerMs: 30 });
    expect(t.writes).toEqual([["Escape"], ["Escape"]]);
  });

  it("no further key once no busy marker shows (the turn ended), and the provider's interrupt without keys", async () => {
    const t = opencodeTurn();
    await interruptTurn(t.provider, "oc", ["Escape", "Escape", "Escape"], { pollMs: 1 });
    expect(t.writes).toEqual([["Escape"], ["Escape"]]);
    const u = opencodeTurn();
    await interruptTurn(u.provider, "oc", undefined);
    expect(u.writes).toEqual([["C-c"]]);
    // An idle screen (a drain before a stop): the first key only, no wait for an answer.
    const idle = {
      peek: async () => "   /tmp/work   19  ctrl+p commands",
      sendKeys: async (_n: string, keys: readonly string[]) => void u.writes.push([...keys]),
    } as unknown as Provider;
    u.writes.length = 0;
    // (A wait for an answer would outlast the test's timeout.)
    await interruptTurn(idle, "oc", ["Escape", "Escape"], { pollMs: 1, keyAnswerMs: 60_000 });
    expect(u.writes).toEqual([["Escape"]]);
  });
});
