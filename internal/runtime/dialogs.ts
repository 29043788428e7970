/**
 * Screen-reading for agent terminals, shared by every provider that can peek and send keys:
 * a data-driven catalogue of startup dialogs and approval prompts, a menu parser that reads
 * which option the cursor is on, safe dialog dismissal that refuses unfamiliar layouts, the
 * pending-interaction matcher, and the prompt/busy heuristics used for readiness and idleness.
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { GcError, ProviderError } from "./errors.js";
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
  /** Matched against the option's label (the text after `N.`). */
  readonly label: RegExp;
}

/** A catalogued dialog: how to recognise it, what its options mean, which one is safe. */
export interface DialogSpec {
  /** Stable id, e.g. `claude.trust-folder`. */
  readonly id: string;
  /** `startup` dialogs are answered automatically during start; `approval` prompts are pending interactions. */
  readonly kind: "startup" | "approval";
  readonly description: string;
  /** Every pattern must be on the screen. */
  readonly detect: readonly RegExp[];
  /** Every rendered option must match exactly one of these, or the layout is unfamiliar. */
  readonly options: readonly DialogOptionSpec[];
  /** Startup dialogs: the role gc chooses. */
  readonly safeRole?: string | undefined;
  /** Key names; default `Up`, `Down`, `Enter`. */
  readonly keys?: { readonly up?: string; readonly down?: string; readonly confirm?: string } | undefined;
}

/**
 * The built-in catalogue. Startup dialogs: folder trust (Claude, Codex, Gemini), Claude's
 * bypass-permissions warning, the custom API key notice and the usage-limit notice.
 * Approval prompts: Claude-style "Do you want to …?" menus.
 */
export const DIALOG_CATALOGUE: readonly DialogSpec[] = [
  {
    id: "trust-folder",
    kind: "startup",
    description: "workspace trust (Claude Code, Codex, Gemini CLI)",
    detect: [
      /Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)\?|trust this folder|Quick safety check|Is this a project you created or one you trust/i,
    ],
    options: [
      { role: "accept", label: /^(?:Yes, (?:proceed|continue|I trust this folder)|Trust folder)\b/i },
      { role: "accept-parent", label: /^Trust parent folder\b/i },
      { role: "exit", label: /^(?:No, (?:exit|quit|cancel)|Don't trust)\b/i },
    ],
    safeRole: "accept",
  },
  {
    id: "bypass-permissions",
    kind: "startup",
    description: "Claude Code bypass-permissions warning",
    detect: [/Bypass Permissions mode/i],
    options: [
      { role: "exit", label: /^No, exit\b/i },
      { role: "accept", label: /^Yes, I accept\b/i },
    ],
    safeRole: "accept",
  },
  {
    id: "custom-api-key",
    kind: "startup",
    description: "custom API key found in the environment",
    detect: [/Detected a custom API key in your environment|Do you want to use this API key\?/i],
    options: [
      { role: "accept", label: /^Yes\b/i },
      { role: "decline", label: /^No\b/i },
    ],
    safeRole: "accept",
  },
  {
    id: "usage-limit",
    kind: "startup",
    description: "usage/rate limit reached (chooses to stop and wait)",
    detect: [/(?:Usage|Rate) limit reached|You've hit your (?:usage|rate) limit/i],
    options: [
      { role: "stop", label: /^Stop and wait\b/i },
      { role: "upgrade", label: /^(?:Upgrade|Switch to|Add funds|Use extra usage)\b/i },
    ],
    safeRole: "stop",
  },
  {
    id: "tool-approval",
    kind: "approval",
    description: "tool or edit approval prompt",
    detect: [
      /Do you want to (?:proceed|make this edit to|create|allow)\b|This command requires approval|Approve edits\?/i,
    ],
    options: [
      { role: "approve", label: /^Yes$/i },
      {
        role: "approve-always",
        label:
          /^Yes, (?:and )?(?:don't|do not) ask again\b|^Yes, allow all\b|^Yes, and (?:allow|auto-accept)\b/i,
      },
      { role: "deny", label: /^No\b/i },
    ],
  },
];

/** One numbered option as rendered. */
export interface MenuOption {
  /** The number shown (`2` for `2. No, exit`). */
  readonly number: number;
  readonly label: string;
  /** The cursor marker is on this option. */
  readonly selected: boolean;
}

/** A numbered menu found on screen. */
export interface ParsedMenu {
  readonly options: readonly MenuOption[];
  /** Index into `options` of the option under the cursor; -1 when not exactly one has it. */
  readonly selected: number;
  /** Up to six non-empty lines above the first option (the question and its context). */
  readonly context: readonly string[];
}

const CURSOR_MARKS = "❯›>▶►→➜";
const OPTION_RE = new RegExp(`^(?:([${CURSOR_MARKS}])\\s*)?(\\d{1,2})[.)]\\s+(\\S.*?)\\s*$`, "u");
const BORDER_RE = /^[\s│┃║╎┆|]+|[\s│┃║╎┆|]+$/gu;

/** NBSP → space, box borders and surrounding blanks removed. Pure. */
export function normalizeLine(line: string): string {
  return line.replace(/\u00a0/g, " ").replace(BORDER_RE, "");
}

/**
 * Finds the last numbered menu (options `1..n`, n ≥ 2, at most two continuation lines
 * between options) on `screen` and reads which option carries the cursor marker. Pure.
 */
export function parseMenu(screen: string): ParsedMenu | undefined {
  const lines = screen.split("\n").map(normalizeLine);
  type Hit = { line: number; opt: MenuOption };
  const runs: Hit[][] = [];
  let run: Hit[] = [];
  for (const [i, text] of lines.entries()) {
    const m = OPTION_RE.exec(text);
    if (!m) continue;
    const opt: MenuOption = { number: Number(m[2]), label: m[3]!, selected: m[1] !== undefined };
    const prev = run[run.length - 1];
    if (prev && opt.number === prev.opt.number + 1 && i - prev.line <= 3) run.push({ line: i, opt });
    else {
      if (run.length > 0) runs.push(run);
      run = opt.number === 1 ? [{ line: i, opt }] : [];
    }
  }
  if (run.length > 0) runs.push(run);
  const best = runs.filter((r) => r.length >= 2).pop();
  if (!best) return undefined;
  const options = best.map((h) => h.opt);
  const marked = options.flatMap((o, i) => (o.selected ? [i] : []));
  const first = best[0]!.line;
  const context = lines
    .slice(Math.max(0, first - 12), first)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !/^[─━═╭╮╰╯┌┐└┘\s-]+$/u.test(l))
    .slice(-6);
  return { options, selected: marked.length === 1 ? marked[0]! : -1, context };
}

/** Result of {@link matchDialog}. */
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
 * The first catalogued dialog of the given kinds whose detect patterns are all on `screen`.
 * `match` only when every option is known and exactly one carries the cursor; otherwise
 * `unfamiliar` with the reason. `undefined` when no catalogued dialog is on screen. Pure.
 */
export function matchDialog(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
  kinds: readonly DialogSpec["kind"][] = ["startup", "approval"],
): DialogMatch | undefined {
  const flat = screen.replace(/\u00a0/g, " ");
  const spec = catalogue.find((s) => kinds.includes(s.kind) && s.detect.every((re) => re.test(flat)));
  if (!spec) return undefined;
  const menu = parseMenu(screen);
  if (!menu) return { status: "unfamiliar", spec, reason: "no numbered options on screen" };
  const roles: string[] = [];
  for (const o of menu.options) {
    const hits = spec.options.filter((os) => os.label.test(o.label));
    if (hits.length !== 1) {
      const why = hits.length === 0 ? "unknown option" : "ambiguous option";
      return { status: "unfamiliar", spec, menu, reason: `${why} ${JSON.stringify(o.label)}` };
    }
    roles.push(hits[0]!.role);
  }
  if (new Set(roles).size !== roles.length) {
    return { status: "unfamiliar", spec, menu, reason: "two options with the same meaning" };
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
  /** How long to wait for the cursor to move or the dialog to go away. Default 2000 ms. */
  readonly settleMs?: number | undefined;
  /** Poll interval. Default 100 ms. */
  readonly pollMs?: number | undefined;
}

async function pollScreen<T>(
  io: ScreenIO,
  t: DialogTiming,
  test: (screen: string) => T | undefined,
): Promise<{ value: T | undefined; screen: string }> {
  const deadline = Date.now() + (t.settleMs ?? 2_000);
  for (;;) {
    const screen = await io.screen();
    const value = test(screen);
    if (value !== undefined || Date.now() >= deadline) return { value, screen };
    await sleep(t.pollMs ?? 100, undefined, { signal: t.signal });
  }
}

/**
 * Moves the cursor of the matched dialog to option `index`, re-reads the screen to verify
 * the cursor is really there, and only then confirms. Resolves once the dialog is gone
 * (or shows different options). Never presses the confirm key on an unverified cursor.
 * @throws DialogRefusedError when the cursor cannot be verified or the dialog stays.
 */
export async function selectOption(
  io: ScreenIO,
  match: DialogMatch & { status: "match" },
  index: number,
  t: DialogTiming = {},
): Promise<void> {
  const { spec } = match;
  const up = spec.keys?.up ?? "Up";
  const down = spec.keys?.down ?? "Down";
  const confirm = spec.keys?.confirm ?? "Enter";
  const sameMenu = (m: DialogMatch | undefined): m is DialogMatch & { status: "match" } =>
    m?.status === "match" && m.spec.id === spec.id && sameLabels(m.menu, match.menu);
  let current = match;
  for (let attempt = 0; current.menu.selected !== index; attempt++) {
    if (attempt >= 3) throw new DialogRefusedError(spec.id, "the cursor did not reach the chosen option");
    const delta = index - current.menu.selected;
    await io.sendKeys(Array.from({ length: Math.abs(delta) }, () => (delta > 0 ? down : up)));
    const want = index;
    const { value } = await pollScreen(io, t, (screen) => {
      const m = matchDialog(screen, [spec], [spec.kind]);
      return sameMenu(m) && m.menu.selected === want ? m : undefined;
    });
    if (value) current = value;
    else {
      const again = matchDialog(await io.screen(), [spec], [spec.kind]);
      if (!sameMenu(again))
        throw new DialogRefusedError(spec.id, "the dialog changed while moving the cursor");
      current = again;
    }
  }
  await io.sendKeys([confirm]);
  const { value: gone } = await pollScreen(io, t, (screen) => {
    const m = matchDialog(screen, [spec], [spec.kind]);
    return sameMenu(m) ? undefined : true;
  });
  if (!gone) throw new DialogRefusedError(spec.id, "the dialog is still on screen after confirming");
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
 * Looks at `screen` once: when a catalogued startup dialog is there, chooses its safe
 * option (verifying the cursor first). An unfamiliar layout is refused: no key is sent.
 */
export async function dismissStartupDialog(
  io: ScreenIO,
  screen: string,
  opts: DialogTiming & { readonly catalogue?: readonly DialogSpec[] | undefined } = {},
): Promise<DialogStep> {
  const m = matchDialog(screen, opts.catalogue ?? DIALOG_CATALOGUE, ["startup"]);
  if (!m) return { status: "none" };
  if (m.status === "unfamiliar") {
    return m.menu
      ? { status: "refused", dialog: m.spec.id, reason: m.reason }
      : { status: "pending", dialog: m.spec.id, reason: m.reason };
  }
  const index = m.roles.indexOf(m.spec.safeRole ?? "");
  if (index < 0) return { status: "refused", dialog: m.spec.id, reason: "the safe option is not offered" };
  try {
    await selectOption(io, m, index, opts);
  } catch (e) {
    if (e instanceof DialogRefusedError) return { status: "refused", dialog: e.dialog, reason: e.reason };
    throw e;
  }
  return { status: "handled", dialog: m.spec.id, chose: m.menu.options[index]!.label };
}

/** Result of {@link acceptStartupDialogs}. */
export type DialogOutcome =
  | { readonly status: "none" }
  | { readonly status: "handled"; readonly handled: readonly string[] }
  | {
      readonly status: "refused";
      readonly dialog: string;
      readonly reason: string;
      readonly handled: readonly string[];
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
  const handled: string[] = [];
  let unread: DialogStep | undefined;
  for (;;) {
    opts.signal?.throwIfAborted();
    const screen = await io.screen();
    const step = await dismissStartupDialog(io, screen, opts);
    unread = step.status === "pending" ? step : undefined;
    if (step.status === "refused")
      return { status: "refused", dialog: step.dialog, reason: step.reason, handled };
    if (step.status === "handled") {
      if (handled.filter((d) => d === step.dialog).length >= 2) {
        return { status: "refused", dialog: step.dialog, reason: "it keeps coming back", handled };
      }
      handled.push(step.dialog);
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
}

function findDetailed(screen: string, catalogue: readonly DialogSpec[]): FoundInteraction | undefined {
  const m = matchDialog(screen, catalogue);
  let menu: ParsedMenu | undefined;
  let roles: (string | undefined)[] = [];
  let kind: string;
  const metadata: Record<string, string> = { source: "screen" };
  if (m?.status === "match") {
    menu = m.menu;
    roles = [...m.roles];
    kind = m.spec.kind === "approval" ? "approval" : "dialog";
    metadata.dialog = m.spec.id;
  } else if (m?.status === "unfamiliar" && m.menu) {
    menu = m.menu;
    kind = m.spec.kind === "approval" ? "approval" : "dialog";
    metadata.dialog = m.spec.id;
    metadata.unfamiliar = m.reason;
  } else {
    menu = parseMenu(screen);
    if (!menu || menu.selected < 0) return undefined;
    kind = "menu";
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
  };
}

/**
 * The interaction waiting on `screen`: a catalogued approval prompt or dialog, or any
 * numbered menu with a cursor (`kind: "menu"`). The request id is stable while the same
 * prompt is shown (it does not depend on the cursor position). Pure.
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
  const spec: DialogSpec = found.spec ?? {
    id: "menu",
    kind: "approval",
    description: "generic menu",
    detect: [],
    options: [],
  };
  const synthetic: DialogSpec = {
    ...spec,
    // Re-match by labels only: the generic menu and unfamiliar dialogs have no role table.
    detect: [],
    options: found.menu.options.map((o) => ({
      role: `#${o.number}`,
      label: new RegExp(`^${escapeRe(o.label)}$`),
    })),
  };
  const match = {
    status: "match" as const,
    spec: synthetic,
    menu: found.menu,
    roles: found.menu.options.map((o) => `#${o.number}`),
  };
  await selectOption(io, match, index, opts);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const BUSY_RE = /esc to interrupt|Press Esc or Ctrl\+C to cancel|ctrl\+c to interrupt/i;

/** True when the screen shows an agent's "working" marker. Pure. */
export function screenLooksBusy(screen: string): boolean {
  return BUSY_RE.test(screen);
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
