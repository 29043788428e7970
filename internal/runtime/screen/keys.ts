/**
 * The key driver: answers dialogs and menus through a session's screen and keyboard. Moves
 * the cursor only from a verified position, confirms only once the marker stood still, refuses
 * layouts it cannot read safely (startup dialogs answered with their safe option during
 * start; an operator's answer to a pending interaction). Timing-sensitive; everything it
 * decides from a screen comes from the pure parser and classifier.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { GcError, ProviderError } from "../../base/errors.js";
import type { InteractionResponse, Provider } from "../provider.js";
import { DIALOG_CATALOGUE, type DialogSpec } from "./catalogue.js";
import { findDetailed } from "./classify.js";
import { type MenuReader, matchDialog, type ParsedMenu, readerFor, sameLabels } from "./parse.js";

/** What the dialog code needs from a session: its screen and its keyboard. */
export interface ScreenIO {
  /**
   * The current screen (or the last lines of output), newest line last. May be a styled
   * capture (SGR escapes kept, styled.ts) where only the parser reads it (answering an
   * interaction): a menu whose cursor is a highlighted row is then read and driven like one
   * with a marker glyph.
   */
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

/** A startup dialog gc answered: its catalogue id and the option chosen. */
export interface AnsweredDialog {
  readonly dialog: string;
  readonly chose: string;
}

/** Result of {@link acceptStartupDialogs}. */
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
  const spec = found.spec;
  const direct = spec?.optionKeys?.[found.roles[index] ?? ""];
  if (spec && direct !== undefined) {
    // The option's own key: no cursor to move.
    await io.sendKeys([direct]);
    const read = found.read;
    const { value: gone } = await pollScreen(
      io,
      opts,
      (screen) => {
        const m = read(screen);
        return m !== undefined && sameLabels(m, found.menu) ? undefined : true;
      },
      opts.confirmMs ?? 60_000,
    );
    if (!gone) throw new DialogRefusedError(spec.id, "the dialog is still on screen after its key");
    return;
  }
  if (found.menu.selected < 0) {
    throw new DialogRefusedError(
      found.pending.metadata?.dialog ?? "menu",
      "cannot tell which option the cursor is on",
    );
  }
  if (spec?.cursorOnFirst && index !== found.menu.selected) {
    throw new DialogRefusedError(
      spec.id,
      `the program shows its cursor by colour only, so gc chooses only ${JSON.stringify(found.menu.options[found.menu.selected]!.label)} (or an option with its own key); attach to choose ${JSON.stringify(found.menu.options[index]!.label)}`,
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
