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
import { notSeen } from "../../internal/runtime/lifecycle/start.js";
import { isApprovalQuestion } from "../../internal/runtime/provider.js";
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
