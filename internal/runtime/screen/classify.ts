/**
 * The pure screen classifier shared by every provider that can peek: the interaction waiting
 * on a screen (a catalogued dialog or approval prompt, or any menu with a cursor), whether a
 * screen needs an operator, awaits a choice, looks busy (an agent's busy marker), shows the
 * ready prompt, or is idle. Built on the parser (parse.ts) and the catalogue (catalogue.ts).
 * {@link findDetailed}, {@link findInteraction}, {@link screenNeedsOperator},
 * {@link screenAwaitsChoice} and {@link screenLooksIdle} take a plain screen or a styled capture (SGR escapes kept,
 * styled.ts), whose highlighted row is the cursor of a menu drawn without a marker glyph;
 * the other functions take plain text.
 */
import { createHash } from "node:crypto";
import { screenShowsBusyMarker } from "../agent-screens.js";
import type { PendingInteraction } from "../provider.js";
import { DIALOG_CATALOGUE, type DialogSpec } from "./catalogue.js";
import {
  type MenuReader,
  matchDialog,
  normalizeLine,
  type ParsedMenu,
  parseMenu,
  readerFor,
} from "./parse.js";
import { plainScreen } from "./styled.js";

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

/** An interaction found on screen, with what the key driver needs to answer it. */
export interface FoundInteraction {
  readonly pending: PendingInteraction;
  readonly menu: ParsedMenu;
  readonly roles: readonly (string | undefined)[];
  readonly spec?: DialogSpec | undefined;
  readonly read: MenuReader;
}

/**
 * {@link findInteraction} with the menu, the options' roles, the dialog's spec and the reader
 * that reads the same menu again from a later screen. Pure.
 */
export function findDetailed(screen: string, catalogue: readonly DialogSpec[]): FoundInteraction | undefined {
  if (!/\S/.test(plainScreen(screen))) return undefined; // a blank screen (an idle pane) waits on nothing
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
 * is the dialog's question, read from the question's block), or any menu with a cursor —
 * numbered or not, the cursor a marker glyph or (on a styled capture) a highlighted row —
 * (`kind: "menu"`, prompt: the paragraph above it). The request id is stable while
 * the same prompt is shown (it does not depend on the cursor position). Pure.
 */
export function findInteraction(
  screen: string,
  catalogue: readonly DialogSpec[] = DIALOG_CATALOGUE,
): PendingInteraction | undefined {
  return findDetailed(screen, catalogue)?.pending;
}

/** True when the screen shows an agent's "working" marker ({@link screenShowsBusyMarker}). Pure. */
export function screenLooksBusy(screen: string): boolean {
  return screenShowsBusyMarker(screen);
}

/**
 * True when a dialog, approval prompt or any menu with a cursor (a marker glyph, or on a
 * styled capture a highlighted row) is on screen: typing would answer it, so such a screen
 * is never idle. Pure.
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
  if (screenAwaitsChoice(screen)) return false;
  const plain = plainScreen(screen);
  if (screenLooksBusy(plain)) return false;
  return readyPrefix === undefined || readyPrefix.trim() === "" || screenShowsPrompt(plain, readyPrefix);
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
