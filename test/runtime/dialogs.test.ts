import { describe, expect, it } from "vitest";
import { isApprovalQuestion } from "../../internal/runtime/provider.js";
import {
  findInteraction,
  looksLikePrompt,
  screenAwaitsChoice,
  screenLooksBusy,
  screenNeedsOperator,
  screenShowsPrompt,
} from "../../internal/runtime/screen/classify.js";
import {
  acceptStartupDialogs,
  DialogRefusedError,
  dismissStartupDialog,
  respondToInteraction,
  type ScreenIO,
} from "../../internal/runtime/screen/keys.js";
import { matchDialog, parseMenu } from "../../internal/runtime/screen/parse.js";

// Screens as captured from agent CLIs (trailing blanks trimmed, as capture-pane gives them).
const TRUST_OLD = `╭──────────────────────────────────────────────────────────────────╮
│                                                                  │
│ Do you trust the files in this folder?                           │
│                                                                  │
│ /home/dev/project                                                │
│                                                                  │
│ Claude Code may read files in this folder. Reading untrusted     │
│ files may lead Claude Code to behave in unexpected ways.         │
│                                                                  │
│ ❯ 1. Yes, proceed                                                │
│   2. No, exit                                                    │
│                                                                  │
╰──────────────────────────────────────────────────────────────────╯
   Enter to confirm · Esc to exit`;

/** The layout that killed every session: "No, exit" pre-selected (field-lessons §5 E). */
const TRUST_NO_PRESELECTED = `────────────────────────────────────────────────────────────────────
 Accessing workspace:

 /home/dev/project

 Quick safety check: Is this a project you created or one you trust? (Like your own
 code, a well-known open source project, or work from your team). If not, take a
 moment to review what's in this folder first.

 Claude Code'll be able to read, edit, and execute files here.

   1. Yes, I trust this folder
 ❯ 2. No, exit

 Enter to confirm · Esc to cancel`;

const BYPASS = `╭──────────────────────────────────────────────────────────────────╮
│                                                                  │
│ WARNING: Claude Code running in Bypass Permissions mode          │
│                                                                  │
│ In Bypass Permissions mode, Claude Code will not ask for your    │
│ approval before running potentially dangerous commands.          │
│                                                                  │
│ ❯ 1. No, exit                                                    │
│   2. Yes, I accept                                               │
│                                                                  │
╰──────────────────────────────────────────────────────────────────╯`;

const TRUST_UNKNOWN_OPTION = `Do you trust the files in this folder?

❯ 1. Yes, proceed
  2. Yes, and remember for all folders
  3. No, exit`;

const TRUST_NO_EXIT = `Do you trust the files in this folder?

❯ 1. Yes, proceed
  2. Maybe later`;

const TRUST_NO_CURSOR = `Do you trust the files in this folder?

  1. Yes, proceed
  2. No, exit`;

const APPROVAL = `● Bash(rm -rf build && npm run build)
  ⎿  Running…

╭──────────────────────────────────────────────────────────────────╮
│ Bash command                                                     │
│                                                                  │
│   rm -rf build && npm run build                                  │
│   Clean and rebuild                                              │
│                                                                  │
│ Do you want to proceed?                                          │
│ ❯ 1. Yes                                                         │
│   2. Yes, and don't ask again for npm run build commands in      │
│      /home/dev/project                                           │
│   3. No, and tell Claude what to do differently (esc)            │
╰──────────────────────────────────────────────────────────────────╯`;

const GENERIC_MENU = `Select a model:
   1. opus
 › 2. sonnet
   3. haiku`;

const PROSE_LIST = `Here is the plan:
1. Read the file
2. Fix the bug
3. Run the tests
❯ `;

/**
 * A simulated terminal showing one menu: Up/Down move the cursor, Enter chooses. Renders
 * the same frame (lines above, options, lines below) the real agent would.
 */
class MenuTerminal implements ScreenIO {
  readonly keys: string[] = [];
  chosen: string | undefined;
  selected: number;
  frozen = false;
  /**
   * Reads like an exec script's `peek` on tmux: each redraw clears the screen, which pushes
   * the previous frame into the scrollback, and the screen read includes that scrollback.
   */
  scrollback = false;
  private readonly history: string[] = [];
  private readonly head: string;
  private readonly labels: string[];
  private readonly after: string;
  constructor(head: string, labels: string[], selected: number, after = "READY> ") {
    this.head = head;
    this.labels = labels;
    this.selected = selected;
    this.after = after;
  }
  /** Lines the program printed below its dialog (stray log output), from the second read on. */
  strayBelow: string[] = [];
  /** The first this many reads catch the menu half drawn: its last option is not there yet. */
  halfDrawnReads = 0;
  private reads = 0;
  private frame(): string {
    if (this.chosen !== undefined) return this.after;
    const drawn = this.reads <= this.halfDrawnReads ? this.labels.slice(0, -1) : this.labels;
    const opts = drawn.map((l, i) => `${i === this.selected ? "❯" : " "} ${i + 1}. ${l}`);
    const stray = this.reads > 1 ? this.strayBelow.map((l) => `\n${l}`).join("") : "";
    return `${this.head}\n\n${opts.join("\n")}\n\nEnter to confirm · Esc to exit${stray}`;
  }
  async screen(): Promise<string> {
    this.reads++;
    return [...this.history, this.frame()].join("\n");
  }
  /** Cursor keys wrap around the ends of the list (as Claude Code's do). */
  wrap = false;
  /** Keys are read this long after they are sent, in order (a loaded program). */
  latencyMs = 0;
  /** This many keys are lost (sent before the program listened). */
  drop = 0;
  /** Keys sent before this time (epoch ms) are lost: a menu drawn before its program reads keys. */
  deafUntil = 0;
  /** Enter pressed before this time (epoch ms) is dropped; other keys are read. */
  confirmDeafUntil = 0;
  async sendKeys(keys: readonly string[]): Promise<void> {
    for (const k of keys) {
      this.keys.push(k);
      if (Date.now() < this.deafUntil) continue;
      if (k === "Enter" && Date.now() < this.confirmDeafUntil) continue;
      if (this.drop > 0) {
        this.drop--;
        continue;
      }
      if (this.latencyMs > 0) setTimeout(() => this.press(k), this.latencyMs);
      else this.press(k);
    }
  }
  private press(k: string): void {
    if (this.chosen !== undefined) return;
    if (this.frozen) return;
    if (this.scrollback) this.history.push(this.frame());
    const n = this.labels.length;
    if (k === "Up") this.selected = this.wrap ? (this.selected + n - 1) % n : Math.max(0, this.selected - 1);
    else if (k === "Down")
      this.selected = this.wrap ? (this.selected + 1) % n : Math.min(n - 1, this.selected + 1);
    else if (k === "Enter") this.chosen = this.labels[this.selected];
  }
}

const fast = { settleMs: 200, steadyMs: 20, pollMs: 5, confirmMs: 200 };

describe("parseMenu", () => {
  it("parseMenu: reads options and the cursor row inside a box", () => {
    const m = parseMenu(TRUST_OLD);
    expect(m?.options.map((o) => o.label)).toEqual(["Yes, proceed", "No, exit"]);
    expect(m?.selected).toBe(0);
    // A bare menu's context is the paragraph right above it; a catalogued dialog's is its question.
    expect(m?.context.join("\n")).toContain("files may lead Claude Code");
    expect(matchDialog(TRUST_OLD)?.menu?.context[0]).toBe("Do you trust the files in this folder?");
  });

  it("parseMenu: sees that the second option is pre-selected", () => {
    expect(parseMenu(TRUST_NO_PRESELECTED)?.selected).toBe(1);
  });

  it("parseMenu: continuation lines between options are allowed", () => {
    const m = parseMenu(APPROVAL);
    expect(m?.options.map((o) => o.number)).toEqual([1, 2, 3]);
    expect(m?.options[1]?.label).toBe("Yes, and don't ask again for npm run build commands in");
  });

  it("parseMenu: a numbered list in prose has no cursor", () => {
    expect(parseMenu(PROSE_LIST)?.selected).toBe(-1);
  });

  it("parseMenu: nothing on a plain screen", () => {
    expect(parseMenu("$ ls\nfile.txt\n$ ")).toBeUndefined();
  });
});

describe("matchDialog", () => {
  it("matchDialog: a familiar trust dialog maps every option to a role", () => {
    const m = matchDialog(TRUST_OLD);
    expect(m?.status).toBe("match");
    if (m?.status === "match") expect(m.roles).toEqual(["accept", "exit"]);
  });

  it("matchDialog: an option that is neither accept nor exit is tolerated as 'other'", () => {
    const m = matchDialog(TRUST_UNKNOWN_OPTION);
    expect(m?.status).toBe("match");
    if (m?.status === "match") expect(m.roles).toEqual(["accept", "other", "exit"]);
  });

  it("matchDialog: without an exit option the layout is unfamiliar", () => {
    const m = matchDialog(TRUST_NO_EXIT);
    expect(m?.status).toBe("unfamiliar");
    if (m?.status === "unfamiliar") expect(m.reason).toContain("no exit option");
  });

  it("matchDialog: no visible cursor makes the layout unfamiliar", () => {
    const m = matchDialog(TRUST_NO_CURSOR);
    expect(m?.status).toBe("unfamiliar");
  });

  it("matchDialog: prose mentioning a dialog phrase is not a dialog without a menu", () => {
    const m = matchDialog("I saw 'Do you trust the files in this folder?' in the logs\n❯ ");
    expect(m?.status).toBe("unfamiliar");
    expect(m?.status === "unfamiliar" && m.menu).toBeFalsy();
    expect(screenAwaitsChoice("I saw 'Do you trust the files in this folder?' in the logs\n❯ ")).toBe(false);
  });
});

describe("dismissStartupDialog", () => {
  it("dismissStartupDialog: answered frames left in the scrollback above the ready prompt are not the dialog", async () => {
    // What an exec script's peek returns: the screen with its scrollback, where every frame
    // the dialog drew stays above what the program drew after it.
    const term = new MenuTerminal("Do you trust the files in this folder?", ["Yes, proceed", "No, exit"], 1);
    term.scrollback = true;
    const step = await dismissStartupDialog(term, await term.screen(), fast);
    expect(step).toEqual({ status: "handled", dialog: "trust-folder", chose: "Yes, proceed" });
    expect(term.keys).toEqual(["Up", "Enter"]);
    const after = await term.screen();
    expect(after).toContain("❯ 1. Yes, proceed"); // the old frame is still in what is read
    expect(matchDialog(after)).toBeUndefined();
    expect(screenShowsPrompt(after, "READY> ")).toBe(true);
    expect(await dismissStartupDialog(term, after, fast)).toEqual({ status: "none" });
  });

  it("matchDialog: the live frame below older frames of the same dialog is read, cursor and all", () => {
    const older =
      "Do you trust the files in this folder?\n\n  1. Yes, proceed\n❯ 2. No, exit\n\nEnter to confirm";
    const live =
      "Do you trust the files in this folder?\n\n❯ 1. Yes, proceed\n  2. No, exit\n\nEnter to confirm";
    const m = matchDialog(`${older}\n${live}`);
    expect(m?.status).toBe("match");
    expect(m?.menu?.selected).toBe(0);
    // Option descriptions indented under the last option belong to the dialog (Codex's layout).
    const described = `Choose how you want to use Codex.\n\n> 1. Sign in with ChatGPT\n     Usage included\n  2. Sign in with Device Code\n     Sign in from another device\n\n  Press enter to continue`;
    expect(matchDialog(described)?.spec.id).toBe("codex-sign-in");
    expect(matchDialog(`${described}\n› `)).toBeUndefined();
  });

  it("dismissStartupDialog: with 'No, exit' pre-selected, moves up, verifies, then confirms 'Yes'", async () => {
    const term = new MenuTerminal(
      "Quick safety check: Is this a project you created or one you trust?",
      ["Yes, I trust this folder", "No, exit"],
      1,
    );
    const step = await dismissStartupDialog(term, await term.screen(), fast);
    expect(step).toEqual({ status: "handled", dialog: "trust-folder", chose: "Yes, I trust this folder" });
    expect(term.chosen).toBe("Yes, I trust this folder");
    // Enter only after the cursor was seen on the safe option.
    expect(term.keys).toEqual(["Up", "Enter"]);
  });

  it("dismissStartupDialog: a key the program reads only after settleMs is not doubled into a wrap", async () => {
    // Claude Code under load: 'No, exit' pre-selected, keys read late, the two-option list
    // wraps. A second Up sent while the first is in flight would land back on 'No, exit'.
    const term = new MenuTerminal(
      "Quick safety check: Is this a project you created or one you trust?",
      ["Yes, I trust this folder", "No, exit"],
      1,
    );
    term.wrap = true;
    term.latencyMs = 1.5 * fast.settleMs;
    const step = await dismissStartupDialog(term, await term.screen(), { ...fast, confirmMs: 5_000 });
    expect(step).toEqual({ status: "handled", dialog: "trust-folder", chose: "Yes, I trust this folder" });
    expect(term.chosen).toBe("Yes, I trust this folder");
  });

  it("dismissStartupDialog: a lost key is pressed again, then confirmed once the cursor is there", async () => {
    const term = new MenuTerminal(
      "Quick safety check: Is this a project you created or one you trust?",
      ["Yes, I trust this folder", "No, exit"],
      1,
    );
    term.wrap = true;
    term.drop = 1;
    const step = await dismissStartupDialog(term, await term.screen(), fast);
    expect(step.status).toBe("handled");
    expect(term.chosen).toBe("Yes, I trust this folder");
    expect(term.keys).toEqual(["Up", "Up", "Enter"]);
  });

  it("dismissStartupDialog: log lines the program prints under its live dialog do not stop the answer", async () => {
    // Gemini CLI under load: "Failed to check for updates" and debug lines land below its box.
    const term = new MenuTerminal("Do you trust the files in this folder?", ["Yes, proceed", "No, exit"], 1);
    term.strayBelow = [
      "Failed to check for updates: TypeError: fetch failed",
      "[DEBUG] [IDEConnectionUtils] …",
    ];
    const step = await dismissStartupDialog(term, await term.screen(), fast);
    expect(step).toEqual({ status: "handled", dialog: "trust-folder", chose: "Yes, proceed" });
    expect(term.keys).toEqual(["Up", "Enter"]);
  });

  it("dismissStartupDialog: a cursor that keeps moving by itself is refused, never confirmed", async () => {
    const term = new MenuTerminal(
      "Do you trust the files in this folder?",
      ["Yes, proceed", "Yes, and remember", "No, exit"],
      2,
    );
    const io: ScreenIO = {
      screen: async () => {
        term.selected = term.selected === 1 ? 2 : 1; // redrawn with the marker elsewhere each time
        return term.screen();
      },
      sendKeys: (k) => term.sendKeys(k),
    };
    const step = await dismissStartupDialog(io, await term.screen(), fast);
    expect(step).toMatchObject({ status: "refused", dialog: "trust-folder" });
    expect(term.keys).not.toContain("Enter");
  });

  it("dismissStartupDialog: never presses Enter when the cursor does not move", async () => {
    const term = new MenuTerminal("Do you trust the files in this folder?", ["Yes, proceed", "No, exit"], 1);
    term.frozen = true;
    const step = await dismissStartupDialog(term, await term.screen(), fast);
    expect(step.status).toBe("refused");
    expect(term.keys).not.toContain("Enter");
    expect(term.chosen).toBeUndefined();
  });

  it("dismissStartupDialog: bypass warning chooses 'Yes, I accept' (Down from the default)", async () => {
    const term = new MenuTerminal(
      "WARNING: Claude Code running in Bypass Permissions mode",
      ["No, exit", "Yes, I accept"],
      0,
    );
    const step = await dismissStartupDialog(term, await term.screen(), fast);
    expect(step.status).toBe("handled");
    expect(term.keys).toEqual(["Down", "Enter"]);
  });

  it("dismissStartupDialog: a menu caught half drawn is looked at again until it stands still", async () => {
    // Gemini CLI under load: its trust dialog read before the last option ("Don't trust") was drawn.
    const term = new MenuTerminal(
      "Do you trust this folder?",
      ["Trust folder (gemini)", "Trust parent folder", "Don't trust"],
      0,
    );
    term.halfDrawnReads = 2;
    const first = await term.screen();
    expect(matchDialog(first)).toMatchObject({
      status: "unfamiliar",
      reason: expect.stringContaining("no exit"),
    });
    const step = await dismissStartupDialog(term, first, fast);
    expect(step).toEqual({ status: "handled", dialog: "trust-folder", chose: "Trust folder (gemini)" });
    expect(term.keys).toEqual(["Enter"]);
  });

  it("dismissStartupDialog: an unfamiliar menu that keeps changing is refused at the bound; at the deadline at once", async () => {
    let reads = 0;
    const keys: string[] = [];
    const io: ScreenIO = {
      // An option without an exit role whose label changes on every read.
      screen: async () => `Do you trust this folder?\n\n❯ 1. Trust folder\n  2. Maybe ${++reads}\n`,
      sendKeys: async (k) => void keys.push(...k),
    };
    const step = await dismissStartupDialog(io, await io.screen(), fast);
    expect(step).toMatchObject({ status: "refused", dialog: "trust-folder" });
    expect(reads).toBeGreaterThan(2);
    expect(keys).toEqual([]);
    reads = 0;
    const late = await dismissStartupDialog(io, await io.screen(), { ...fast, deadline: Date.now() });
    expect(late).toMatchObject({ status: "refused", dialog: "trust-folder" });
    expect(reads).toBe(1); // refused on the look it was given
  });

  it("dismissStartupDialog: refuses an unfamiliar layout without sending a key", async () => {
    const keys: string[] = [];
    const io: ScreenIO = {
      screen: async () => TRUST_NO_EXIT,
      sendKeys: async (k) => void keys.push(...k),
    };
    const step = await dismissStartupDialog(io, TRUST_NO_EXIT, fast);
    expect(step.status).toBe("refused");
    expect(keys).toEqual([]);
  });

  it("dismissStartupDialog: the recorded bypass screen is recognised with the cursor on 'No, exit'", () => {
    const m = matchDialog(BYPASS);
    expect(m?.status === "match" && m.menu.selected).toBe(0);
  });

  it("dismissStartupDialog: nothing to do on a normal screen", async () => {
    const io: ScreenIO = { screen: async () => "❯ ", sendKeys: async () => undefined };
    expect(await dismissStartupDialog(io, "❯ ", fast)).toEqual({ status: "none" });
  });
});

describe("acceptStartupDialogs", () => {
  it("acceptStartupDialogs: handles two dialogs in a row, then stops at the prompt", async () => {
    const first = new MenuTerminal("Do you trust the files in this folder?", ["Yes, proceed", "No, exit"], 1);
    const second = new MenuTerminal("WARNING: Bypass Permissions mode", ["No, exit", "Yes, I accept"], 0);
    const io: ScreenIO = {
      screen: async () => (first.chosen === undefined ? first.screen() : second.screen()),
      sendKeys: async (k) => (first.chosen === undefined ? first.sendKeys(k) : second.sendKeys(k)),
    };
    const out = await acceptStartupDialogs(io, { timeoutMs: 2_000, ...fast, until: looksLikePrompt });
    expect(out).toEqual({
      status: "handled",
      handled: [
        { dialog: "trust-folder", chose: "Yes, proceed" },
        { dialog: "bypass-permissions", chose: "Yes, I accept" },
      ],
    });
    expect(second.chosen).toBe("Yes, I accept");
  });

  it("acceptStartupDialogs: a dialog text without a readable menu until the deadline is refused", async () => {
    const io: ScreenIO = {
      screen: async () => "Do you trust the files in this folder?\n[Yes]  [No]",
      sendKeys: async () => undefined,
    };
    const out = await acceptStartupDialogs(io, { timeoutMs: 100, ...fast });
    expect(out.status).toBe("refused");
  });

  it("acceptStartupDialogs: none when no dialog appears", async () => {
    const io: ScreenIO = { screen: async () => "$ ", sendKeys: async () => undefined };
    expect(await acceptStartupDialogs(io, { timeoutMs: 50, ...fast })).toEqual({ status: "none" });
  });
});

describe("interactions", () => {
  it("findInteraction: an approval prompt with a stable id independent of the cursor", () => {
    const p = findInteraction(APPROVAL);
    expect(p?.kind).toBe("approval");
    expect(p?.options).toHaveLength(3);
    expect(p?.prompt).toContain("Do you want to proceed?");
    expect(p?.metadata?.roles).toBe("approve,approve-always,deny");
    const moved = APPROVAL.replace("│ ❯ 1. Yes", "│   1. Yes").replace("│   3. No", "│ ❯ 3. No");
    expect(findInteraction(moved)?.requestId).toBe(p?.requestId);
  });

  it("findInteraction: a generic menu with a cursor is a pending 'menu'", () => {
    expect(findInteraction(GENERIC_MENU)?.kind).toBe("menu");
    expect(findInteraction(PROSE_LIST)).toBeUndefined();
  });

  it("respondToInteraction: deny moves the cursor to 'No' and confirms", async () => {
    const term = new MenuTerminal(
      "Bash command\n  rm -rf build\nDo you want to proceed?",
      ["Yes", "Yes, and don't ask again for rm commands", "No, and tell Claude what to do differently (esc)"],
      0,
    );
    const id = findInteraction(await term.screen())?.requestId;
    await respondToInteraction(term, { requestId: id, action: "deny" }, fast);
    expect(term.chosen).toBe("No, and tell Claude what to do differently (esc)");
    expect(term.keys).toEqual(["Down", "Down", "Enter"]);
  });

  it("respondToInteraction: a stale request id is rejected and nothing is sent", async () => {
    const term = new MenuTerminal("Do you want to proceed?", ["Yes", "No"], 0);
    await expect(
      respondToInteraction(term, { requestId: "scr-0000", action: "approve" }, fast),
    ).rejects.toThrow(/changed/);
    expect(term.keys).toEqual([]);
  });

  it("respondToInteraction: a menu drawn a moment ago with the marker already on the option is confirmed once it stood still, not at once", async () => {
    const term = new MenuTerminal("Select a model:", ["opus", "sonnet"], 0);
    // The program draws its menu before it reads keys: an Enter sent at once is lost.
    term.deafUntil = Date.now() + 150;
    await respondToInteraction(term, { action: "1" }, { ...fast, steadyMs: 250 });
    expect(term.chosen).toBe("opus");
    expect(term.keys).toEqual(["Enter"]);
  });

  it("respondToInteraction: Codex's 'Sign in another way' gets its Enter only once shown 1.5 s (it drops one within ~1 s of appearing)", async () => {
    const term = new MenuTerminal("Sign in another way", ["Use an OpenAI API key", "Use Amazon Bedrock"], 0);
    term.confirmDeafUntil = Date.now() + 1_000;
    await respondToInteraction(term, { action: "1" }, fast);
    expect(term.chosen).toBe("Use an OpenAI API key");
    expect(term.keys).toEqual(["Enter"]);
  });

  it("respondToInteraction: an option label or number works for a generic menu", async () => {
    const term = new MenuTerminal("Select a model:", ["opus", "sonnet", "haiku"], 1);
    await respondToInteraction(term, { action: "3" }, fast);
    expect(term.chosen).toBe("haiku");
  });

  it("respondToInteraction: rejects when nothing is pending", async () => {
    const io: ScreenIO = { screen: async () => "❯ ", sendKeys: async () => undefined };
    await expect(respondToInteraction(io, { action: "approve" }, fast)).rejects.toThrow(/no interaction/);
  });

  it("respondToInteraction: refuses when the cursor cannot be verified", async () => {
    const term = new MenuTerminal("Do you want to proceed?", ["Yes", "No"], 0);
    term.frozen = true;
    await expect(respondToInteraction(term, { action: "deny" }, fast)).rejects.toBeInstanceOf(
      DialogRefusedError,
    );
    expect(term.keys).not.toContain("Enter");
  });
});

// Codex 0.171 signed out, as the operator saw it (test/fixtures/screens/codex-*-80x24.ansi).
const CODEX_SIGN_IN = `  Welcome to Codex, OpenAI's command-line coding agent

  Choose how you want to use Codex.

> 1. Sign in with ChatGPT
     Usage included with Plus, Pro, Business, and Enterprise plans

  2. Sign in with Device Code
     Sign in from another device with a one-time code

  3. Sign in another way
     Use an API key or another provider

  Press enter to continue
`;
const CODEX_OTHER_WAY = `  Welcome to Codex, OpenAI's command-line coding agent

  Sign in another way

> 1. Use an OpenAI API key
     Pay for what you use

  2. Use Amazon Bedrock
     Connect using your AWS credentials

  Press enter to continue
  Press esc to go back
`;
const CODEX_KEY_FIELD = `  Welcome to Codex, OpenAI's command-line coding agent

> Use your own OpenAI API key for usage-based billing

  Paste or type your API key below.



╭API key───────────────────────────────────────────────────────────────────────╮
│Paste or type your API key                                                    │
╰──────────────────────────────────────────────────────────────────────────────╯
  Press enter to save
  Press esc to go back
`;
const MODEL_MENU = "Select a model:\n❯ 1. gpt-5\n  2. gpt-5-mini\n";

describe("which interactions are approvals", () => {
  it.each([
    ["a tool approval prompt", APPROVAL, "approval", "tool-approval", true],
    ["Codex's sign-in choice", CODEX_SIGN_IN, "dialog", "codex-sign-in", false],
    ["Codex's 'Sign in another way' menu", CODEX_OTHER_WAY, "dialog", "codex-sign-in-other", false],
    ["Codex's API-key field", CODEX_KEY_FIELD, "dialog", "codex-api-key-field", false],
    ["a model choice", MODEL_MENU, "menu", undefined, false],
    ["an unfamiliar menu", GENERIC_MENU, "menu", undefined, false],
  ] as const)("%s", (_what, screen, kind, dialog, approval) => {
    const p = findInteraction(screen);
    expect(p?.kind).toBe(kind);
    expect(p?.metadata?.dialog).toBe(dialog);
    expect(isApprovalQuestion(p!)).toBe(approval);
    // Start stops waiting for the ready prompt on these: only a person gets past them.
    expect(screenNeedsOperator(screen)).toBe(dialog !== undefined);
  });

  it("the API-key field is pending with no options; answering it is refused without a key", async () => {
    expect(findInteraction(CODEX_KEY_FIELD)).toMatchObject({
      options: [],
      prompt: expect.stringMatching(/^Codex needs an API key/),
      metadata: { input: "true" },
    });
    expect(screenAwaitsChoice(CODEX_KEY_FIELD)).toBe(true);
    const keys: string[] = [];
    const io: ScreenIO = { screen: async () => CODEX_KEY_FIELD, sendKeys: async (k) => void keys.push(...k) };
    await expect(respondToInteraction(io, { action: "approve" }, fast)).rejects.toThrow(
      /takes typed text, not an option; attach to the session/,
    );
    expect(keys).toEqual([]);
  });
});

describe("screen heuristics", () => {
  it("screenShowsPrompt: NBSP, borders and trailing blanks are tolerated", () => {
    expect(screenShowsPrompt("output\n❯\u00a0", "❯ ")).toBe(true);
    expect(screenShowsPrompt("│ > hello  │", "> ")).toBe(true);
    expect(screenShowsPrompt("RDY>", "RDY> ")).toBe(true);
    expect(screenShowsPrompt("not ready", "RDY> ")).toBe(false);
    expect(screenShowsPrompt("anything", "   ")).toBe(false);
  });

  it("screenAwaitsChoice: menus and dialogs block idleness; prose lists do not", () => {
    expect(screenAwaitsChoice(APPROVAL)).toBe(true);
    expect(screenAwaitsChoice(GENERIC_MENU)).toBe(true);
    expect(screenAwaitsChoice(PROSE_LIST)).toBe(false);
  });

  it("screenLooksBusy: recognises working markers", () => {
    expect(screenLooksBusy("✻ Thinking… (12s · esc to interrupt)")).toBe(true);
    expect(screenLooksBusy("❯ ")).toBe(false);
  });
});

// opencode 1.18.33's permission prompt at 120×40 (capture-pane, trailing blanks trimmed): its
// options side by side, the chosen one marked by colour only (each new prompt starts on
// "Allow once"), key hints on the same line; Escape rejects.
const OPENCODE_PERMISSION = `     respond-file is made.

     ▣  Build · Test model · 3.8s

  ┃
  ┃  Please make respond-file now.
  ┃

     $ touch /tmp/work/respond-file

     ▣  Build · Test model

  ┃
  ┃  △ Permission required
  ┃    # Shell command
  ┃
  ┃  $ touch /tmp/work/respond-file
  ┃
  ┃
  ┃   Allow once   Allow always   Reject                                 ctrl+f fullscreen  ⇆ select  enter confirm
  ┃`;

/** opencode's prompt: Enter takes "Allow once", Escape rejects; any other key is recorded only. */
class OpencodePrompt implements ScreenIO {
  readonly keys: string[] = [];
  chosen: string | undefined;
  async screen(): Promise<string> {
    return this.chosen === undefined
      ? OPENCODE_PERMISSION
      : "     ▣  Build · Test model\n  ┃  Build · Test model Double";
  }
  async sendKeys(keys: readonly string[]): Promise<void> {
    for (const k of keys) {
      this.keys.push(k);
      if (k === "Enter") this.chosen ??= "Allow once";
      if (k === "Escape") this.chosen ??= "Reject";
    }
  }
}

describe("opencode's permission prompt (options on one row, cursor by colour only)", () => {
  it("is a pending approval with its three options, not the key hints, and the question", () => {
    const p = findInteraction(OPENCODE_PERMISSION);
    expect(p?.kind).toBe("approval");
    expect(p?.options).toEqual(["Allow once", "Allow always", "Reject"]);
    expect(p?.metadata?.roles).toBe("approve,approve-always,deny");
    expect(p?.prompt).toMatch(/^△ Permission required\n# Shell command\n\$ touch /);
    expect(isApprovalQuestion(p!)).toBe(true);
    expect(screenAwaitsChoice(OPENCODE_PERMISSION)).toBe(true);
    // Without the prompt's question the same row is no menu.
    expect(findInteraction(OPENCODE_PERMISSION.replace("△ Permission required", "Shell"))).toBeUndefined();
  });

  it("approve: Enter on the option the prompt starts on", async () => {
    const io = new OpencodePrompt();
    await respondToInteraction(io, { action: "approve" }, fast);
    expect(io.keys).toEqual(["Enter"]);
    expect(io.chosen).toBe("Allow once");
  });

  it("deny: its own key (Escape), no cursor moved", async () => {
    const io = new OpencodePrompt();
    await respondToInteraction(io, { action: "deny" }, fast);
    expect(io.keys).toEqual(["Escape"]);
    expect(io.chosen).toBe("Reject");
  });

  it("approve-always needs the cursor moved where no screen text shows it: refused, no key sent", async () => {
    const io = new OpencodePrompt();
    await expect(respondToInteraction(io, { action: "approve-always" }, fast)).rejects.toThrow(
      /by colour only.*attach to choose "Allow always"/,
    );
    expect(io.keys).toEqual([]);
  });
});
