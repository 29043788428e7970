/**
 * Screen-reading for agent terminals, shared by every provider that can peek and send keys:
 * a data-driven catalogue of startup dialogs and approval prompts, a menu parser that reads
 * which option the cursor is on, safe dialog dismissal that refuses unfamiliar layouts, the
 * pending-interaction matcher, and the prompt/busy heuristics used for readiness and idleness.
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { GcError, ProviderError } from "../base/errors.js";
import { screenShowsBusyMarker } from "./agent-screens.js";
import type { InteractionResponse, PendingInteraction, Provider } from "./provider.js";

/** What the dialog code needs from a session: its screen and its keyboard. */
export interface ScreenIO {
  /** The current screen (or the last lines of output), newest line last. */
  screen(): Promise<string>;
  /** Raw key names (`Up`, `Down`, `Enter`, …), no implicit Enter. */
  sendKeys(keys: readonly string[]): Promise<void>;
}

/** A {@link ScreenIO} over any provider's `peek` and `sendKeys`. */
export function screenIOFor(provider: Provider, name: string, lines = 60): ScreenIO {
  return {
    screen: () => provider.peek(name, lines),
    sendKeys: (keys) => provider.sendKeys(name, keys),
  };
}

/** One option a catalogued dialog may show, by role (`accept`, `exit`, `approve`, …). */
export interface DialogOptionSpec {
  readonly role: string;
  /** Matched against the option's label (the text after the marker and `N.`). */
  readonly label: RegExp;
}

/**
 * A catalogued dialog: how to recognise it, what its options mean, which one is safe.
 * Recognition is scoped: the `question` locates the dialog, and its options are read only
 * from the block below the question (up to the box's bottom edge or a rule line), so other
 * numbered lists on the screen (tips, logos, transcripts) are never taken for its options.
 */
export interface DialogSpec {
  /** Stable id, e.g. `trust-folder`. */
  readonly id: string;
  /**
   * `startup` dialogs are answered automatically during start; `approval` prompts and
   * `operator` dialogs (sign-in choices) are pending interactions gc never answers itself.
   */
  readonly kind: "startup" | "approval" | "operator";
  readonly description: string;
  /**
   * The question. Matched against the screen's text with lines joined by one space (so a
   * question wrapped at any width matches); the last match on screen is the dialog.
   */
  readonly question: RegExp;
  /** Further patterns that must be on screen (anywhere). */
  readonly detect?: readonly RegExp[] | undefined;
  /** The options gc knows. Options matching none are tolerated as role `other`. */
  readonly options: readonly DialogOptionSpec[];
  /** Roles that must be offered, or the layout is unfamiliar. Default: `safeRole`. */
  readonly required?: readonly string[] | undefined;
  /** Startup dialogs: the role gc chooses. */
  readonly safeRole?: string | undefined;
  /**
   * A dialog without options, an input field: a `startup` one is prefilled (e.g. an API key
   * taken from the environment) and the confirm key submits it as shown; an `operator` one
   * waits for a person to type into it (gc never types a secret), and is reported as a
   * pending interaction with no options and `metadata.input` set.
   */
  readonly input?: boolean | undefined;
  /** An `operator` input field's pending prompt (its own text is a placeholder). */
  readonly prompt?: string | undefined;
  /** Key names; default `Up`, `Down`, `Enter`. */
  readonly keys?: { readonly up?: string; readonly down?: string; readonly confirm?: string } | undefined;
  /**
   * The program drops the confirm key pressed this soon after its menu appeared (Codex's
   * "Sign in another way" ignores an Enter within ~1 s of the Enter that opened it): the
   * confirm key waits until gc has seen the menu on screen this long. Default: no wait.
   */
  readonly confirmAfterMs?: number | undefined;
}

/**
 * The built-in catalogue, checked against the recorded screens in `test/fixtures/screens/`
 * (Claude Code 2.1, Codex 0.171, Gemini CLI 0.61, Copilot CLI 1.0). Startup: folder trust (all four),
 * Claude's custom-API-key and bypass-permissions notices, Gemini's auth choice and API-key
 * field when the key is in the environment, usage-limit notices. Operator: sign-in choices
 * that need a person (Codex, Gemini without a key) and Codex's API-key field. Approval:
 * tool/edit prompts.
 */
export const DIALOG_CATALOGUE: readonly DialogSpec[] = [
  {
    id: "trust-folder",
    kind: "startup",
    description: "workspace trust (Claude Code, Codex, Gemini CLI, GitHub Copilot CLI)",
    question:
      /Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)\?|Is this a project you created or one you trust\?|Do you trust this folder\?/i,
    options: [
      {
        role: "accept",
        // Copilot CLI: a bare "Yes" trusts for this session only (never "and remember").
        label:
          /^(?:(?:Yes, (?:proceed|continue|I trust this folder|allow Codex to work in this folder)|Trust folder)\b|Yes$)/i,
      },
      { role: "accept-parent", label: /^Trust parent folder\b/i },
      { role: "accept-remember", label: /^Yes, and remember this folder\b/i },
      { role: "exit", label: /^(?:(?:No, (?:exit|quit|cancel)|Don't trust)\b|No(?: \(Esc\))?$)/i },
    ],
    required: ["accept", "exit"],
    safeRole: "accept",
  },
  {
    id: "bypass-permissions",
    kind: "startup",
    description: "Claude Code bypass-permissions warning",
    question: /Bypass Permissions mode/i,
    options: [
      { role: "exit", label: /^No, exit\b/i },
      { role: "accept", label: /^Yes, I accept\b/i },
    ],
    required: ["accept", "exit"],
    safeRole: "accept",
  },
  {
    id: "custom-api-key",
    kind: "startup",
    description: "Claude Code: custom API key found in the environment (uses it)",
    question: /Do you want to use this API key\?/i,
    detect: [/Detected a custom API key in your environment/i],
    options: [
      { role: "accept", label: /^Yes\b/i },
      { role: "decline", label: /^No\b/i },
    ],
    required: ["accept", "decline"],
    safeRole: "accept",
  },
  {
    id: "gemini-auth-api-key",
    kind: "startup",
    description: "Gemini CLI auth choice when GEMINI_API_KEY is set (chooses the key)",
    question: /How would you like to authenticate for this project\?/i,
    detect: [/Existing API key detected \(GEMINI_API_KEY\)/i],
    options: [
      { role: "api-key", label: /^Use Gemini API Key\b/i },
      { role: "google", label: /^(?:Sign in|Login) with Google\b/i },
      { role: "vertex", label: /^Vertex AI\b/i },
    ],
    required: ["api-key"],
    safeRole: "api-key",
  },
  {
    id: "gemini-api-key-field",
    kind: "startup",
    description: "Gemini CLI API-key field prefilled from GEMINI_API_KEY (submits it)",
    question: /Enter Gemini API Key\b/i,
    detect: [/Existing API key detected \(GEMINI_API_KEY\)/i, /Press Enter to submit/i],
    options: [],
    input: true,
  },
  {
    id: "usage-limit",
    kind: "startup",
    description: "usage/rate limit reached (chooses to stop and wait)",
    question: /(?:Usage|Rate) limit reached|You've hit your (?:usage|rate) limit/i,
    options: [
      { role: "stop", label: /^Stop and wait\b/i },
      { role: "upgrade", label: /^(?:Upgrade|Switch to|Add funds|Use extra usage)\b/i },
    ],
    safeRole: "stop",
  },
  {
    id: "codex-sign-in",
    kind: "operator",
    description: "Codex sign-in choice (needs an operator: gc never signs in)",
    question: /Choose how you want to use Codex\.?|Sign in with ChatGPT to use Codex/i,
    options: [
      { role: "chatgpt", label: /^Sign in with ChatGPT\b/i },
      { role: "device-code", label: /^Sign in with Device Code\b/i },
      { role: "other-way", label: /^(?:Sign in another way|Provide your own API key)\b/i },
    ],
  },
  {
    id: "codex-sign-in-other",
    kind: "operator",
    description: 'Codex\'s "Sign in another way" choice (needs an operator)',
    question: /Sign in another way/i,
    // Its options, not the first menu's "3. Sign in another way / Use an API key or another…".
    detect: [/Use an OpenAI API key|Use Amazon Bedrock/i],
    options: [
      { role: "api-key", label: /^Use an OpenAI API key\b/i },
      { role: "bedrock", label: /^Use Amazon Bedrock\b/i },
    ],
    // Codex 0.171 drops an Enter pressed under 1 s after the Enter that opened this menu
    // (measured: 0.95 s lost, 1.0 s taken); a key field reached by Enter has no such delay.
    confirmAfterMs: 1_500,
  },
  {
    id: "codex-api-key-field",
    kind: "operator",
    description: "Codex API-key field (needs an operator: gc never types a key)",
    question: /Paste or type your API key\b/i,
    detect: [/Press enter to save/i],
    options: [],
    input: true,
    prompt: "Codex needs an API key typed into its key field (attach to the session to enter it)",
  },
  {
    id: "gemini-auth",
    kind: "operator",
    description: "Gemini CLI auth choice without an API key (needs an operator)",
    question: /How would you like to authenticate for this project\?/i,
    options: [
      { role: "google", label: /^(?:Sign in|Login) with Google\b/i },
      { role: "api-key", label: /^Use Gemini API Key\b/i },
      { role: "vertex", label: /^Vertex AI\b/i },
    ],
  },
  {
    id: "tool-approval",
    kind: "approval",
    description: "tool or edit approval prompt (Claude Code, Codex, Gemini CLI)",
    question:
      /Do you want to (?:proceed|make this edit to|create|allow)\b[^?]*\?|This command requires approval|Approve edits\?|Would you like to (?:run the following command|make the following edits)\?|Allow execution of\b[^?]*\?|Apply this change\?/i,
    options: [
      { role: "approve", label: /^(?:Yes(?:, proceed)?|Allow once)(?: \(y\))?$/i },
      {
        role: "approve-always",
        label:
          /^Yes, (?:and )?(?:don't|do not) ask again\b|^Yes, allow all\b|^Yes, and (?:allow|auto-accept)\b|^Allow (?:for this session|always)\b/i,
      },
      { role: "deny", label: /^No\b/i },
    ],
    required: ["approve", "deny"],
  },
];

/** One option as rendered. */
export interface MenuOption {
  /** The number shown (`2` for `2. No, exit`), or the option's position for unnumbered lists. */
  readonly number: number;
  readonly label: string;
  /** The cursor marker is on this option. */
  readonly selected: boolean;
}

/** A menu found on screen. */
export interface ParsedMenu {
  readonly options: readonly MenuOption[];
  /** Index into `options` of the option under the cursor; -1 when not exactly one has it. */
  readonly selected: number;
  /** The question above the options (its non-empty lines, at most six), not a logo above it. */
  readonly context: readonly string[];
}

/** Cursor markers: Claude `❯`, Codex `›`/`>`, Gemini `●`, others. */
const CURSOR_MARKS = "❯›>▶►→➜●";
const OPTION_RE = new RegExp(`^(?:([${CURSOR_MARKS}])\\s*)?(\\d{1,2})[.)]\\s+(\\S.*?)\\s*$`, "u");
/** An unnumbered option under the cursor: marker, blanks, label. */
const MARKED_RE = new RegExp(`^(\\s*)([${CURSOR_MARKS}])(\\s+)(\\S.*?)\\s*$`, "u");
const BORDER_RE = /^[\s│┃║╎┆|]+|[\s│┃║╎┆|]+$/gu;
const BOX_SIDE_RE = /[│┃║]/gu;
/** A line that ends a dialog's block: its box's bottom edge (not a nested box's) or a rule. */
const BLOCK_END_RE = /^\s*[╰└─━═]{3,}/u;
const RULE_RE = /^[─━═╭╮╰╯┌┐└┘\s-]+$/u;

/** NBSP → space, box borders and surrounding blanks removed. Pure. */
export function normalizeLine(line: string): string {
  return line.replace(/\u00a0/g, " ").replace(BORDER_RE, "");
}

/** Box sides → blanks, keeping every column where it is (for reading indentation). */
function columnsOf(line: string): string {
  return line
    .replace(/\u00a0/g, " ")
    .replace(BOX_SIDE_RE, " ")
    .trimEnd();
}

function numberedRuns(
  lines: readonly string[],
  from: number,
  to: number,
): { line: number; opt: MenuOption }[][] {
  type Hit = { line: number; opt: MenuOption };
  const runs: Hit[][] = [];
  let run: Hit[] = [];
  for (let i = from; i < to; i++) {
    const m = OPTION_RE.exec(normalizeLine(lines[i]!));
    if (!m) continue;
    const opt: MenuOption = { number: Number(m[2]), label: m[3]!, selected: m[1] !== undefined };
    const prev = run[run.length - 1];
    if (prev && opt.number === prev.opt.number + 1 && i - prev.line <= 3) run.push({ line: i, opt });
    else {
      if (run.length >= 2) runs.push(run);
      run = opt.number === 1 ? [{ line: i, opt }] : [];
    }
  }
  if (run.length >= 2) runs.push(run);
  return runs;
}

/**
 * An unnumbered option list in `lines[from, to)`: the first line carrying a cursor marker,
 * plus the lines right above and below it whose text starts in the same column with blanks
 * where the marker would be (a blank line ends the list). Returns the first line index too.
 */
function markedList(
  lines: readonly string[],
  from: number,
  to: number,
): { first: number; options: MenuOption[] } | undefined {
  for (let i = from; i < to; i++) {
    const row = columnsOf(lines[i]!);
    const m = MARKED_RE.exec(row);
    if (!m) continue;
    const col = m[1]!.length + m[2]!.length + m[3]!.length;
    const sibling = (j: number): string | undefined => {
      if (j < from || j >= to) return undefined;
      const r = columnsOf(lines[j]!);
      if (r.length <= col || r.slice(0, col).trim() !== "" || r[col] === " ") return undefined;
      return r.slice(col).trim();
    };
    let first = i;
    while (sibling(first - 1) !== undefined) first--;
    let last = i;
    while (sibling(last + 1) !== undefined) last++;
    if (last === first) continue;
    const options: MenuOption[] = [];
    for (let j = first; j <= last; j++) {
      const label = j === i ? m[4]! : sibling(j)!;
      options.push({ number: j - first + 1, label, selected: j === i });
    }
    return { first, options };
  }
  return undefined;
}

function menuOf(options: readonly MenuOption[], context: readonly string[]): ParsedMenu {
  const marked = options.flatMap((o, i) => (o.selected ? [i] : []));
  return { options, selected: marked.length === 1 ? marked[0]! : -1, context };
}

/** The paragraph right above line `first` (blank lines just above skipped), at most `max` lines. */
function paragraphAbove(lines: readonly string[], first: number, max: number): string[] {
  const out: string[] = [];
  let i = first - 1;
  while (i >= 0 && normalizeLine(lines[i]!).trim() === "") i--;
  for (; i >= 0 && out.length < max; i--) {
    const l = normalizeLine(lines[i]!).trim();
    if (l === "" || RULE_RE.test(l)) break;
    out.unshift(l);
  }
  return out;
}

/**
 * Finds the last numbered menu (options `1..n`, n ≥ 2, at most two continuation lines
 * between options) on `screen` that is not a leftover frame (other text drawn below its
 * block) and reads which option carries the cursor marker. Its
 * context is the paragraph right above the options (the question, not a logo above it).
 * Without one, an unnumbered list with a cursor (`❯ OpenAI` over `  Anthropic`, as qwen's
 * and cline's menus are drawn) is a menu too when it is the last thing on screen (only key
 * hints below it) and its labels are short: a program showing one waits for a choice
 * whether it numbers its options or not. Pure.
 */
export function parseMenu(screen: string): ParsedMenu | undefined {
  const lines = screen.split("\n");
  const best = numberedRuns(lines, 0, lines.length)
    .filter((run) => !isStale(lines, blockEndFrom(lines, run[run.length - 1]!.line)))
    .pop();
  if (best) {
    return menuOf(
      best.map((h) => h.opt),
      paragraphAbove(lines, best[0]!.line, 3),
    );
  }
  const marked = markedList(lines, 0, lines.length);
  if (
    !marked ||
    marked.options.some((o) => o.label.length > MARKED_LABEL_MAX) ||
    isStale(lines, marked.first + marked.options.length - 1)
  )
    return undefined;
  return menuOf(marked.options, paragraphAbove(lines, marked.first, 3));
}

/** Longest label of an unnumbered menu found outside a catalogued dialog. */
const MARKED_LABEL_MAX = 60;

/** Where a catalogued dialog's question is: the lines it spans and the end of its block. */
interface Located {
  readonly start: number;
  readonly end: number;
  readonly blockEnd: number;
}

/** The screen's lines normalized and trimmed, joined by one space, with each line's offset in it. */
interface FlatScreen {
  readonly flat: string;
  readonly offsets: readonly number[];
}

function flatten(lines: readonly string[]): FlatScreen {
  const offsets: number[] = [];
  let flat = "";
  for (const l of lines) {
    offsets.push(flat.length);
    flat += `${normalizeLine(l).trim()} `;
  }
  return { flat, offsets };
}

/** Where the last match of `question` is on screen (`screen`: {@link flatten} of `lines`). */
function locateQuestion(lines: readonly string[], screen: FlatScreen, question: RegExp): Located | undefined {
  const { flat, offsets } = screen;
  const re = new RegExp(
    question.source,
    question.flags.includes("g") ? question.flags : `${question.flags}g`,
  );
  let last: RegExpExecArray | undefined;
  for (let m = re.exec(flat); m; m = re.exec(flat)) {
    last = m;
    if (m[0] === "") re.lastIndex++;
  }
  if (!last) return undefined;
  const lineAt = (off: number) => {
    let i = 0;
    while (i + 1 < offsets.length && offsets[i + 1]! <= off) i++;
    return i;
  };
  const start = lineAt(last.index);
  const end = lineAt(last.index + Math.max(0, last[0].length - 1));
  return { start, end, blockEnd: blockEndFrom(lines, end) };
}

/** The line ending the block that holds line `from`: the next box bottom or rule (at most 30 lines on). */
function blockEndFrom(lines: readonly string[], from: number): number {
  let i = from + 1;
  while (i < lines.length && i - from <= 30 && !BLOCK_END_RE.test(lines[i]!)) i++;
  return i;
}

/**
 * The last line a dialog or menu drew: its block's closing edge (box bottom or rule) when it
 * has one, else its last option's line (`lastOption`, plus that option's continuation
 * lines); without options, the block's end as found. A frame without a closing edge has no
 * other bound: the 30-line window of {@link blockEndFrom} would take in whatever the program
 * drew after it (a screen read with its scrollback keeps the answered frame above the ready
 * prompt). Pure.
 */
function drawnEnd(lines: readonly string[], blockEnd: number, lastOption: number | undefined): number {
  if ((blockEnd < lines.length && BLOCK_END_RE.test(lines[blockEnd]!)) || lastOption === undefined)
    return blockEnd;
  return optionEnd(lines, lastOption);
}

/** The option at `line` with its continuation lines: at most two, right below, indented deeper. */
function optionEnd(lines: readonly string[], line: number): number {
  const indent = (l: string) => columnsOf(l).search(/\S/);
  const own = indent(lines[line]!);
  let i = line;
  while (i + 1 < lines.length && i - line < 2 && indent(lines[i + 1]!) > own) i++;
  return i;
}

/**
 * The menu belonging to the question at `loc`: a numbered run or a marked list in the
 * question's block, whichever comes first; its context is the question's lines, `last` the
 * line of its last option. Pure.
 */
function menuBelow(lines: readonly string[], loc: Located): { menu: ParsedMenu; last: number } | undefined {
  const from = loc.end + 1;
  const numbered = numberedRuns(lines, from, loc.blockEnd)[0];
  const marked = markedList(lines, from, loc.blockEnd);
  const first = Math.min(numbered?.[0]?.line ?? Infinity, marked?.first ?? Infinity);
  if (first === Infinity) return undefined;
  const context = lines
    .slice(loc.start, first)
    .map((l) => normalizeLine(l).trim())
    .filter((l) => l !== "" && !RULE_RE.test(l))
    .slice(0, 6);
  if (numbered && numbered[0]!.line === first)
    return {
      menu: menuOf(
        numbered.map((h) => h.opt),
        context,
      ),
      last: numbered[numbered.length - 1]!.line,
    };
  return { menu: menuOf(marked!.options, context), last: marked!.first + marked!.options.length - 1 };
}

/** Result of {@link matchDialog}. `menu` is empty (no options) for an `input` dialog. */
export type DialogMatch =
  | {
      readonly status: "match";
      readonly spec: DialogSpec;
      readonly menu: ParsedMenu;
      readonly roles: readonly string[];
    }
  | {
      readonly status: "unfamiliar";
      readonly spec: DialogSpec;
      readonly reason: string;
      readonly menu?: ParsedMenu | undefined;
    };

/**
 * The first catalogued dialog of the given kinds whose question (and extra patterns) are on
 * `screen`, with its options read from the question's block. Options no spec entry knows
 * get role `other` and are tolerated; `match` only when every `required` role is offered,
 * no option is ambiguous, no role repeats and exactly one option carries the cursor.
 * Otherwise `unfamiliar` with the reason. `undefined` when no catalogued dialog is on
 * screen. Pure.
 */
export function matchDialog(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
  kinds: readonly DialogSpec["kind"][] = ["startup", "approval", "operator"],
  opts: { readonly textBelow?: boolean } = {},
): DialogMatch | undefined {
  const lines = screen.split("\n");
  const flatScreen = flatten(lines);
  // Every question needs some text: a blank screen shows no dialog (an idle pane's usual face).
  if (flatScreen.flat.trim() === "") return undefined;
  const flat = flatScreen.flat.slice(0, -1);
  // The dialog on screen is the lowest one: a dialog answered earlier may still be drawn
  // above a newer one (or above the program's input area) and must never be answered again.
  let best: { spec: DialogSpec; loc: Located; below: ReturnType<typeof menuBelow> } | undefined;
  for (const spec of catalogue) {
    if (!(spec.detect ?? []).every((re) => re.test(flat))) continue;
    const loc = locateQuestion(lines, flatScreen, spec.question);
    if (!loc) continue;
    const below = menuBelow(lines, loc);
    if (
      spec.kind !== "approval" &&
      !opts.textBelow &&
      isStale(lines, drawnEnd(lines, loc.blockEnd, below?.last))
    )
      continue;
    if (!best || loc.start > best.loc.start) best = { spec, loc, below };
  }
  if (!best || !kinds.includes(best.spec.kind)) return undefined;
  const { spec, loc, below } = best;
  if (spec.input) {
    return {
      status: "match",
      spec,
      menu: { options: [], selected: -1, context: questionLines(lines, loc) },
      roles: [],
    };
  }
  return classify(spec, below?.menu);
}

/**
 * A startup or sign-in dialog is drawn at the bottom of the screen, followed at most by key
 * hints ("Enter to confirm · Esc to cancel"); any other text below the last line it drew
 * ({@link drawnEnd}) means the program has moved on and the dialog is a leftover frame
 * (Gemini CLI restarts after its trust dialog and draws below the old box; a program that
 * clears its screen leaves the answered frame in the scrollback an exec script's `peek`
 * returns, above its ready prompt), which must never be answered again.
 */
function isStale(lines: readonly string[], drawn: number): boolean {
  return lines.slice(drawn + 1).some((l) => {
    const t = normalizeLine(l).trim();
    return t !== "" && !RULE_RE.test(t) && !KEY_HINT_RE.test(t);
  });
}

const KEY_HINT_RE = /^\(?(?:Press |Use )?(?:enter|esc|↑|↓|tab|ctrl)\b/i;

function questionLines(lines: readonly string[], loc: Located): string[] {
  return lines
    .slice(loc.start, loc.end + 1)
    .map((l) => normalizeLine(l).trim())
    .filter((l) => l !== "");
}

function classify(spec: DialogSpec, menu: ParsedMenu | undefined): DialogMatch {
  if (!menu) return { status: "unfamiliar", spec, reason: "no options under the question" };
  const roles: string[] = [];
  for (const o of menu.options) {
    const hits = spec.options.filter((os) => os.label.test(o.label));
    if (hits.length > 1) {
      return { status: "unfamiliar", spec, menu, reason: `ambiguous option ${JSON.stringify(o.label)}` };
    }
    roles.push(hits[0]?.role ?? "other");
  }
  const known = roles.filter((r) => r !== "other");
  if (new Set(known).size !== known.length) {
    return { status: "unfamiliar", spec, menu, reason: "two options with the same meaning" };
  }
  const required = spec.required ?? (spec.safeRole ? [spec.safeRole] : []);
  const missing = required.filter((r) => !roles.includes(r));
  if (missing.length > 0) {
    return {
      status: "unfamiliar",
      spec,
      menu,
      reason: `no ${missing.join("/")} option among ${menu.options.map((o) => JSON.stringify(o.label)).join(", ")}`,
    };
  }
  if (menu.selected < 0) {
    return { status: "unfamiliar", spec, menu, reason: "cannot tell which option the cursor is on" };
  }
  return { status: "match", spec, menu, roles };
}

/** Raised when a dialog could not be answered safely; nothing was confirmed. */
export class DialogRefusedError extends GcError {
  override readonly name = "DialogRefusedError";
  readonly code = "GC_DIALOG_REFUSED";
  readonly dialog: string;
  readonly reason: string;
  constructor(dialog: string, reason: string) {
    super(`dialogs: dialog ${JSON.stringify(dialog)} not answered: ${reason}`);
    this.dialog = dialog;
    this.reason = reason;
  }
}

/** Timing of dialog handling; tests shrink it. */
export interface DialogTiming {
  readonly signal?: AbortSignal | undefined;
  /**
   * How long a cursor key may go unanswered before it is taken as lost and pressed again.
   * A loaded program can take seconds to read a key; pressing again too soon moves the cursor
   * twice (and a two-option list wraps back). Default 5 000 ms.
   */
  readonly settleMs?: number | undefined;
  /**
   * The marker must have stood still this long before any key is sent, and still be on the
   * chosen option this long after the last key (and at least twice the slowest key response
   * seen) before the confirm key is pressed, so a key still in flight cannot move it away
   * under the confirmation. Default 500 ms.
   */
  readonly steadyMs?: number | undefined;
  /** Poll interval. Default 100 ms. */
  readonly pollMs?: number | undefined;
  /**
   * Time (epoch ms) after which an unfamiliar menu is no longer waited on to finish drawing
   * but refused as it stands (the start's own deadline, so the refusal is what gets reported).
   */
  readonly deadline?: number | undefined;
  /**
   * How long to wait, after confirming, for the program to take the answer (Gemini CLI
   * saves its trust setting and restarts; Claude Code took over 15 s on a loaded CI machine).
   * The key is never pressed again: a slow program would take the second press as the
   * answer to its next screen. The start's own deadline still bounds the wait. Default 60 000 ms.
   */
  readonly confirmMs?: number | undefined;
  /**
   * A marker already on the chosen option is confirmed at once (default: startup dialogs,
   * which a program may print over soon after drawing). `false`: only once it has stood still
   * for `steadyMs` — an operator's answer to a menu the program may have drawn a moment ago,
   * before it reads keys (Codex's second sign-in menu lost an Enter sent at once).
   */
  readonly confirmAtOnce?: boolean | undefined;
}

async function pollScreen<T>(
  io: ScreenIO,
  t: DialogTiming,
  test: (screen: string) => T | undefined,
  boundMs = t.settleMs ?? SETTLE_MS,
): Promise<{ value: T | undefined; screen: string }> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const screen = await io.screen();
    const value = test(screen);
    if (value !== undefined || Date.now() >= deadline) return { value, screen };
    await sleep(t.pollMs ?? 100, undefined, { signal: t.signal });
  }
}

/**
 * Reads the menu of the dialog being answered from a fresh screen (or `undefined` when gone).
 * `textBelow`: text printed below the dialog does not make it a leftover frame — used while
 * moving the cursor of a dialog already seen live (a program's stray log lines can land under
 * its own dialog), never to decide that a confirmed dialog is still there.
 */
export type MenuReader = (screen: string, opts?: { readonly textBelow?: boolean }) => ParsedMenu | undefined;

/** A reader for `spec`: the menu of that dialog only (never another list on screen). */
export function readerFor(spec: DialogSpec): MenuReader {
  return (screen, opts) => matchDialog(screen, [spec], [spec.kind], opts)?.menu;
}

const SETTLE_MS = 5_000;
const STEADY_MS = 500;
/** Rounds of cursor keys before giving up (a lost or doubled key is corrected by the next). */
const MAX_ROUNDS = 4;

/**
 * Moves the cursor to option `index` of `menu` and confirms it, never on an unverified
 * cursor. A marker already on the option is confirmed at once. Otherwise no key is sent
 * before the marker has stood still for `steadyMs` (a program that has just drawn its dialog
 * may not read keys yet; a marker that keeps moving is refused). Cursor keys are sent for the distance from where
 * the marker is, and are pressed again only when the screen has not answered for `settleMs`
 * and for twice the slowest key response seen (a lost key, e.g. one sent before the program
 * listened). Keys reach the program in order, so the confirm key lands after every cursor
 * key sent: it is pressed only when the marker is seen on the option `steadyMs` and twice
 * the slowest response after the last key; a late key that moves it away is answered by
 * moving back. Then confirms from the screen that the menu is gone (or shows other options).
 * @throws DialogRefusedError when the cursor cannot be brought to the option or the menu stays.
 */
export async function selectOption(
  io: ScreenIO,
  dialog: Pick<DialogSpec, "id" | "keys" | "confirmAfterMs">,
  read: MenuReader,
  menu: ParsedMenu,
  index: number,
  t: DialogTiming = {},
): Promise<void> {
  const up = dialog.keys?.up ?? "Up";
  const down = dialog.keys?.down ?? "Down";
  const confirm = dialog.keys?.confirm ?? "Enter";
  const settleMs = t.settleMs ?? SETTLE_MS;
  const steadyMs = t.steadyMs ?? STEADY_MS;
  const pollMs = t.pollMs ?? 100;
  const same = (m: ParsedMenu | undefined): m is ParsedMenu => m !== undefined && sameLabels(m, menu);
  // A read can catch the program mid-redraw: the dialog counts as changed only when it reads
  // otherwise for `settleMs`.
  const readMenu = async (): Promise<ParsedMenu> => {
    const { value, screen } = await pollScreen(io, t, (s) => {
      const m = read(s, { textBelow: true });
      return same(m) ? m : undefined;
    });
    if (value) return value;
    const m = read(screen, { textBelow: true });
    const now = m ? `options now ${m.options.map((o) => JSON.stringify(o.label)).join(", ")}` : "gone";
    throw new DialogRefusedError(dialog.id, `the dialog changed while moving the cursor (${now})`);
  };
  let rounds = 0;
  let lastKeyAt = Number.NEGATIVE_INFINITY;
  let lastMoveAt = Number.NEGATIVE_INFINITY;
  /** When the oldest key not yet seen to move the cursor was sent (an over-estimate is safe). */
  let unansweredSince: number | undefined;
  /** The slowest key response seen (send → marker moved). */
  let latency = 0;
  let current: number | undefined;
  /** Since when the marker has been read at `current` without moving. */
  let standingSince = 0;
  const startedAt = Date.now();
  for (;;) {
    const readAt = Date.now();
    // A marker that never settles (it moves by itself) is refused, never confirmed.
    if (
      readAt - startedAt >
      (MAX_ROUNDS + 2) * Math.max(settleMs, 2 * latency) + (dialog.confirmAfterMs ?? 0)
    )
      throw new DialogRefusedError(dialog.id, "the cursor did not settle on the chosen option");
    const m = await readMenu();
    if (m.selected !== current) {
      if (current !== undefined) {
        if (unansweredSince !== undefined) latency = Math.max(latency, readAt - unansweredSince);
        unansweredSince = undefined;
        lastMoveAt = readAt;
      }
      current = m.selected;
      standingSince = readAt;
    }
    // A dialog just drawn may not be listening yet, and one still moving is not settled: no
    // key before the marker has stood still for `steadyMs`.
    const standing = readAt - standingSince >= steadyMs;
    if (current === index) {
      // Already on the option with no key sent: confirm at once (a program may print over
      // its own dialog soon after drawing it). Otherwise keys reach the program in order, so
      // the confirm key lands after every cursor key sent: it waits until those have had
      // time to land, as seen on this read.
      // A program that drops a confirm pressed too soon after its menu appeared
      // (`confirmAfterMs`) is given that long since this answer first read the menu.
      const shownLongEnough = readAt - startedAt >= (dialog.confirmAfterMs ?? 0);
      const atOnce = lastKeyAt < 0 && (t.confirmAtOnce ?? true);
      const landed = standing && readAt >= lastKeyAt + Math.max(steadyMs, 2 * latency);
      if (shownLongEnough && (atOnce || landed)) break;
    } else if (standing && readAt - Math.max(lastKeyAt, lastMoveAt) >= Math.max(settleMs, 2 * latency)) {
      // No key sent yet, or the screen has not answered for `settleMs` (and twice the slowest
      // response seen): what was sent is taken as lost. Press for the distance left.
      if (rounds >= MAX_ROUNDS)
        throw new DialogRefusedError(dialog.id, "the cursor did not reach the chosen option");
      if (current < 0) throw new DialogRefusedError(dialog.id, "cannot tell which option the cursor is on");
      rounds++;
      const delta = index - current;
      await io.sendKeys(Array.from({ length: Math.abs(delta) }, () => (delta > 0 ? down : up)));
      lastKeyAt = Date.now();
      unansweredSince ??= lastKeyAt;
    }
    await sleep(pollMs, undefined, { signal: t.signal });
  }
  await io.sendKeys([confirm]);
  const { value: gone } = await pollScreen(
    io,
    t,
    (screen) => (same(read(screen)) ? undefined : true),
    t.confirmMs ?? 60_000,
  );
  if (!gone) throw new DialogRefusedError(dialog.id, "the dialog is still on screen after confirming");
}

function sameLabels(a: ParsedMenu, b: ParsedMenu): boolean {
  return a.options.length === b.options.length && a.options.every((o, i) => o.label === b.options[i]!.label);
}

/**
 * One step of startup-dialog handling. `pending`: a catalogued dialog's text is on screen
 * but no menu can be read yet (still drawing, or a layout without numbered options).
 */
export type DialogStep =
  | { readonly status: "none" }
  | { readonly status: "pending"; readonly dialog: string; readonly reason: string }
  | { readonly status: "handled"; readonly dialog: string; readonly chose: string }
  | { readonly status: "refused"; readonly dialog: string; readonly reason: string };

/**
 * Looks at `screen`: when a catalogued startup dialog is there, chooses its safe option
 * (verifying the cursor first). An unfamiliar layout is refused (no key is sent) once its
 * options have stood unchanged for `settleMs`: a menu caught half drawn (Gemini CLI's
 * three-option trust dialog read with two, under load) is read again every `pollMs` until it
 * is whole — or for at most three times `settleMs` while it keeps changing, never past
 * `deadline`.
 */
export async function dismissStartupDialog(
  io: ScreenIO,
  screen: string,
  opts: DialogTiming & { readonly catalogue?: readonly DialogSpec[] | undefined } = {},
): Promise<DialogStep> {
  const catalogue = opts.catalogue ?? DIALOG_CATALOGUE;
  let m = matchDialog(screen, catalogue, ["startup"]);
  const settleMs = opts.settleMs ?? SETTLE_MS;
  const giveUpAt = Math.min(Date.now() + 3 * settleMs, opts.deadline ?? Number.POSITIVE_INFINITY);
  let seen = m?.menu;
  let seenAt = Date.now();
  while (m?.status === "unfamiliar" && m.menu && Date.now() - seenAt < settleMs && Date.now() < giveUpAt) {
    await sleep(opts.pollMs ?? 100, undefined, { signal: opts.signal });
    m = matchDialog(await io.screen(), catalogue, ["startup"]);
    if (m?.menu && seen && !sameLabels(m.menu, seen)) [seen, seenAt] = [m.menu, Date.now()];
  }
  if (!m) return { status: "none" };
  if (m.status === "unfamiliar") {
    return m.menu
      ? { status: "refused", dialog: m.spec.id, reason: m.reason }
      : { status: "pending", dialog: m.spec.id, reason: m.reason };
  }
  try {
    if (m.spec.input) {
      await io.sendKeys([m.spec.keys?.confirm ?? "Enter"]);
      const spec = m.spec;
      const { value: gone } = await pollScreen(
        io,
        opts,
        (s) => (matchDialog(s, [spec], [spec.kind]) ? undefined : true),
        opts.confirmMs ?? 60_000,
      );
      if (!gone) throw new DialogRefusedError(spec.id, "the dialog is still on screen after confirming");
      return { status: "handled", dialog: spec.id, chose: "(submitted as shown)" };
    }
    const index = m.roles.indexOf(m.spec.safeRole ?? "");
    if (index < 0) return { status: "refused", dialog: m.spec.id, reason: "the safe option is not offered" };
    await selectOption(io, m.spec, readerFor(m.spec), m.menu, index, opts);
    return { status: "handled", dialog: m.spec.id, chose: m.menu.options[index]!.label };
  } catch (e) {
    if (e instanceof DialogRefusedError) return { status: "refused", dialog: e.dialog, reason: e.reason };
    throw e;
  }
}

/**
 * True when a catalogued dialog that gc never answers itself (a sign-in choice, an API-key
 * field a person must type into, an approval prompt) is on screen: start stops waiting for the ready prompt, since only an operator
 * (`gc session respond`) can get past it, and the session is reported waiting for input. Pure.
 */
export function screenNeedsOperator(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
): boolean {
  const m = matchDialog(screen, catalogue);
  if (m === undefined || m.spec.kind === "startup") return false;
  return (
    (m.status === "match" && m.spec.input === true) || (m.menu !== undefined && m.menu.options.length > 0)
  );
}

/** Result of {@link acceptStartupDialogs}. */
/** A startup dialog gc answered: its catalogue id and the option chosen. */
export interface AnsweredDialog {
  readonly dialog: string;
  readonly chose: string;
}

export type DialogOutcome =
  | { readonly status: "none" }
  | { readonly status: "handled"; readonly handled: readonly AnsweredDialog[] }
  | {
      readonly status: "refused";
      readonly dialog: string;
      readonly reason: string;
      readonly handled: readonly AnsweredDialog[];
    };

/** Options for {@link acceptStartupDialogs}. */
export interface AcceptOptions extends DialogTiming {
  /** Overall bound; the result is returned when it passes. */
  readonly timeoutMs: number;
  readonly catalogue?: readonly DialogSpec[] | undefined;
  /** Stop early when this holds for a screen without a dialog (e.g. the ready prompt). */
  readonly until?: ((screen: string) => boolean) | undefined;
}

/**
 * Watches the screen for up to `timeoutMs` and answers every catalogued startup dialog
 * that appears with its safe option. One state machine with one deadline; a dialog that
 * keeps coming back after being answered twice is refused.
 */
export async function acceptStartupDialogs(io: ScreenIO, opts: AcceptOptions): Promise<DialogOutcome> {
  const deadline = Date.now() + opts.timeoutMs;
  const handled: AnsweredDialog[] = [];
  let unread: DialogStep | undefined;
  for (;;) {
    opts.signal?.throwIfAborted();
    const screen = await io.screen();
    const step = await dismissStartupDialog(io, screen, {
      ...opts,
      deadline: Math.min(deadline, opts.deadline ?? Number.POSITIVE_INFINITY),
    });
    unread = step.status === "pending" ? step : undefined;
    if (step.status === "refused")
      return { status: "refused", dialog: step.dialog, reason: step.reason, handled };
    if (step.status === "handled") {
      if (handled.filter((d) => d.dialog === step.dialog).length >= 2) {
        return { status: "refused", dialog: step.dialog, reason: "it keeps coming back", handled };
      }
      handled.push({ dialog: step.dialog, chose: step.chose });
      continue;
    }
    if ((!unread && opts.until?.(screen)) || Date.now() >= deadline) break;
    await sleep(Math.min(opts.pollMs ?? 200, Math.max(0, deadline - Date.now())), undefined, {
      signal: opts.signal,
    });
  }
  if (unread?.status === "pending") {
    return {
      status: "refused",
      dialog: unread.dialog,
      reason: `unfamiliar layout: ${unread.reason}`,
      handled,
    };
  }
  return handled.length > 0 ? { status: "handled", handled } : { status: "none" };
}

interface FoundInteraction {
  readonly pending: PendingInteraction;
  readonly menu: ParsedMenu;
  readonly roles: readonly (string | undefined)[];
  readonly spec?: DialogSpec | undefined;
  readonly read: MenuReader;
}

function findDetailed(screen: string, catalogue: readonly DialogSpec[]): FoundInteraction | undefined {
  if (!/\S/.test(screen)) return undefined; // a blank screen (an idle pane) waits on nothing
  const m = matchDialog(screen, catalogue);
  let menu: ParsedMenu | undefined;
  let roles: (string | undefined)[] = [];
  let kind: string;
  let read: MenuReader;
  const metadata: Record<string, string> = { source: "screen" };
  if (m?.status === "match" && m.spec.input && m.spec.kind === "operator") {
    // A field a person types into: pending with no options; only `gc attach` answers it.
    menu = { ...m.menu, context: m.spec.prompt ? [m.spec.prompt] : m.menu.context };
    kind = "dialog";
    metadata.dialog = m.spec.id;
    metadata.input = "true";
    read = readerFor(m.spec);
  } else if (m && (m.status === "match" || m.menu) && !m.spec.input) {
    menu = m.menu;
    if (m.status === "match") roles = [...m.roles];
    else metadata.unfamiliar = m.reason;
    kind = m.spec.kind === "approval" ? "approval" : "dialog";
    metadata.dialog = m.spec.id;
    read = readerFor(m.spec);
  } else {
    menu = parseMenu(screen);
    if (!menu || menu.selected < 0) return undefined;
    kind = "menu";
    read = parseMenu;
  }
  if (!menu) return undefined;
  const labels = menu.options.map((o) => o.label);
  const prompt = menu.context.join("\n").slice(0, 500);
  const requestId = `scr-${createHash("sha256")
    .update([kind, metadata.dialog ?? "", prompt, ...labels].join("\0"))
    .digest("hex")
    .slice(0, 16)}`;
  if (roles.length > 0) metadata.roles = roles.join(",");
  return {
    pending: { requestId, kind, prompt, options: labels, metadata },
    menu,
    roles,
    spec: m?.spec,
    read,
  };
}

/**
 * The interaction waiting on `screen`: a catalogued approval prompt or dialog (its prompt
 * is the dialog's question, read from the question's block), or any numbered menu with a
 * cursor (`kind: "menu"`, prompt: the paragraph above it). The request id is stable while
 * the same prompt is shown (it does not depend on the cursor position). Pure.
 */
export function findInteraction(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
): PendingInteraction | undefined {
  return findDetailed(screen, catalogue)?.pending;
}

const ACTION_ALIASES: Readonly<Record<string, string>> = {
  approve: "approve",
  yes: "approve",
  allow: "approve",
  "approve-always": "approve-always",
  approve_always: "approve-always",
  "approve-accept-edits": "approve-always",
  approve_accept_edits: "approve-always",
  always: "approve-always",
  deny: "deny",
  reject: "deny",
  no: "deny",
};

/**
 * Answers the interaction on screen: `action` is a role (`approve`, `approve-always`,
 * `deny`, `accept`, …), an option label, or an option number. The cursor is moved and
 * verified before confirming, and the prompt must go away.
 * @throws ProviderError when nothing is pending, `requestId` differs from the current
 * prompt, or no option fits `action`. @throws DialogRefusedError when it could not be answered.
 */
export async function respondToInteraction(
  io: ScreenIO,
  response: InteractionResponse,
  opts: DialogTiming & { readonly catalogue?: readonly DialogSpec[] | undefined } = {},
): Promise<void> {
  const catalogue = opts.catalogue ?? DIALOG_CATALOGUE;
  const found = findDetailed(await io.screen(), catalogue);
  if (!found) throw new ProviderError("dialogs", "no interaction is pending");
  if (response.requestId && response.requestId !== found.pending.requestId) {
    throw new ProviderError(
      "dialogs",
      `the pending interaction changed (expected ${response.requestId}, found ${found.pending.requestId})`,
    );
  }
  if (found.pending.metadata?.input) {
    throw new ProviderError(
      "dialogs",
      `${found.spec?.description ?? "an input field"} takes typed text, not an option; attach to the session to enter it`,
    );
  }
  const action = response.action.trim();
  const role = ACTION_ALIASES[action.toLowerCase()] ?? action.toLowerCase();
  let index = found.roles.indexOf(role);
  if (index < 0) index = found.menu.options.findIndex((o) => o.label.toLowerCase() === action.toLowerCase());
  if (index < 0 && /^\d{1,2}$/.test(action))
    index = found.menu.options.findIndex((o) => o.number === Number(action));
  if (index < 0) {
    throw new ProviderError(
      "dialogs",
      `no option for ${JSON.stringify(action)}; options: ${found.menu.options.map((o) => o.label).join(" | ")}`,
    );
  }
  if (found.menu.selected < 0) {
    throw new DialogRefusedError(
      found.pending.metadata?.dialog ?? "menu",
      "cannot tell which option the cursor is on",
    );
  }
  await selectOption(
    io,
    { id: found.spec?.id ?? "menu", keys: found.spec?.keys, confirmAfterMs: found.spec?.confirmAfterMs },
    found.read,
    found.menu,
    index,
    { confirmAtOnce: false, ...opts },
  );
}

/** True when the screen shows an agent's "working" marker ({@link screenShowsBusyMarker}). Pure. */
export function screenLooksBusy(screen: string): boolean {
  return screenShowsBusyMarker(screen);
}

/**
 * True when a dialog, approval prompt or any menu with a cursor is on screen: typing would
 * answer it, so such a screen is never idle. Pure.
 */
export function screenAwaitsChoice(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
): boolean {
  const m = matchDialog(screen, catalogue);
  if (m?.status === "match" || (m?.menu && m.menu.selected >= 0)) return true;
  const menu = parseMenu(screen);
  return menu !== undefined && menu.selected >= 0;
}

/**
 * The one rule for "this screen is idle" (the end of a turn for `gc run`, idle for nudges):
 * no dialog, approval prompt or menu with a cursor; no agent busy marker ("esc to
 * interrupt", "(esc to cancel"); and, when the session declares a ready prompt, that prompt
 * on screen. Full-screen agents keep their prompt drawn while they work, so the busy marker
 * decides. Callers add their own "the screen stopped changing" condition. Pure.
 */
export function screenLooksIdle(screen: string, readyPrefix?: string | undefined): boolean {
  if (screenAwaitsChoice(screen) || screenLooksBusy(screen)) return false;
  return readyPrefix === undefined || readyPrefix.trim() === "" || screenShowsPrompt(screen, readyPrefix);
}

/**
 * True when some line shows the ready prompt: after NBSP → space and trimming (box borders
 * too), the line starts with `prefix` or equals the trimmed prefix. Pure.
 */
export function screenShowsPrompt(screen: string, prefix: string): boolean {
  const p = prefix.replace(/\u00a0/g, " ").trimStart();
  const trimmed = p.trim();
  if (trimmed === "") return false;
  return screen.split("\n").some((line) => {
    const l = normalizeLine(line).trim();
    return l.startsWith(p) || l === trimmed;
  });
}

/** True when the last non-blank line ends like a shell or agent prompt (`>`, `$`, `%`, `#`, `❯`). Pure. */
export function looksLikePrompt(screen: string): boolean {
  const last = screen
    .split("\n")
    .map((l) => l.replace(/\u00a0/g, " ").trimEnd())
    .filter((l) => l.trim() !== "")
    .pop();
  return last !== undefined && /[>$%#❯]$/u.test(last);
}
