/**
 * When the controller looks at a session's work between its passes, and what it remembers of
 * the screens it saw. Pure: the controller's work watcher (controller/work-watch.ts) does the
 * I/O. A pass comes every `interval` (30 s by default); a turn's end is wanted within half a
 * second, so sessions in a turn are looked at every {@link TURN_LOOK_MS}, the others every
 * {@link IDLE_LOOK_MS} (a turn that starts is seen within it; on tmux and subprocess a quiet
 * session costs no screen read, their looks read only screens that printed).
 *
 * False idles are avoided by the rule, not by slowness: a screen with the agent's busy marker
 * is working however long the model stays silent; a program that has shown its marker is not
 * working once the marker is gone and the screen stood still {@link TURN_END_QUIET_MS}; one
 * that never showed a marker keeps the `WORK_QUIET_MS` rule (runtime/screen/work.ts).
 */

import type { ScreenRules } from "../runtime/agent-screens.js";
import type { SessionLook } from "../runtime/provider.js";
import {
  type ClassifyOptions,
  classifyLook,
  lookShowsBusyMarker,
  type ObservedWork,
} from "../runtime/screen/work.js";
import { advanceWork, type WorkEvent, type WorkRecord } from "./work.js";

/** Looks at a session in a turn (working, error) this often. */
export const TURN_LOOK_MS = 100;
/** Looks at every other running session this often. */
export const IDLE_LOOK_MS = 1_000;

/** A running session as the watcher plans it. */
export interface WatchedSession {
  readonly name: string;
  /** Its recorded work (reconcile/work.ts), if any. */
  readonly work: WorkRecord | undefined;
  /** When the watcher (or a pass) last looked at it, epoch ms; absent = never. */
  readonly lookedAt: number | undefined;
}

/** How often a session with `work` is looked at. Pure. */
export function lookEveryMs(work: WorkRecord | undefined): number {
  return work !== undefined && (work.state === "working" || work.state === "error")
    ? TURN_LOOK_MS
    : IDLE_LOOK_MS;
}

/**
 * The sessions due for a look at `now`, and when the next one falls due (`undefined` when
 * there is none). A session never looked at is due at once. Pure.
 */
export function planWorkLooks(
  sessions: readonly WatchedSession[],
  now: number,
): { readonly due: string[]; readonly wakeAt: number | undefined } {
  const due: string[] = [];
  let wakeAt: number | undefined;
  for (const s of sessions) {
    const at = s.lookedAt === undefined ? now : s.lookedAt + lookEveryMs(s.work);
    if (at <= now) due.push(s.name);
    const next = at <= now ? now + lookEveryMs(s.work) : at;
    wakeAt = wakeAt === undefined ? next : Math.min(wakeAt, next);
  }
  return { due, wakeAt };
}

/** What the watcher remembers of a session's screen: the text and its first look of it. */
export interface ScreenSeen {
  /** The session's incarnation (record generation) it was seen on. */
  readonly generation: number;
  readonly screen: string;
  /** The first look (epoch ms) of this exact screen in an unbroken run of looks. */
  readonly since: number;
  /** This screen was classified `idle`: unchanged, it stays idle (no turn reopened by its age). */
  readonly idle?: true | undefined;
  /** Whether this screen shows a busy marker under `busyRules` (read once per screen). */
  readonly busy?: boolean | undefined;
  readonly busyRules?: ScreenRules | undefined;
}

/**
 * The memory after seeing `screen` at `now`: `since` stays while the screen (and the
 * incarnation) does; anything else starts over at `now`. Pure.
 */
export function seeScreen(
  prev: ScreenSeen | undefined,
  screen: string,
  generation: number,
  now: number,
): ScreenSeen {
  return prev !== undefined && prev.generation === generation && prev.screen === screen
    ? prev
    : { generation, screen, since: now };
}

/**
 * A program that has shown its busy marker (`WorkRecord.marked`), now without it: the screen
 * must stand unchanged this long before it counts as not working, so a capture taken in the
 * middle of a redraw (the marker erased, the next frame not drawn yet) is not a turn's end.
 */
export const TURN_END_QUIET_MS = 150;

/**
 * One look of a watched session, decided: the screen remembered ({@link seeScreen}), the look
 * classified (runtime/screen/work.ts `classifyLook`), and the record advanced (reconcile/work.ts
 * `advanceWork`). Two rules need the looks before this one:
 * - a program that has shown its busy marker (`prev.marked`), or whose rules declare its busy
 *   markers (a preset's `busy_markers`), works exactly while a marker shows: without it, what `classifyLook` calls working only for recent output or text
 *   after the prompt (typing, a redraw, the reply being drawn) is idle once the screen has
 *   stood still for {@link TURN_END_QUIET_MS}, and keeps the previous state until then. A
 *   turn also ends only on a screen that stood still: one look that seems idle (a frame
 *   caught half drawn on a loaded machine, its footer not written yet, leaves the bare
 *   prompt on the last line) keeps the turn open until the screen settles;
 * - a screen judged idle stays idle while it does not change (its output growing old never
 *   reopens a turn).
 * `prev` is the session's recorded work, `seen` the watcher's memory of its screen. Pure.
 */
export function observeLook(
  prev: WorkRecord | undefined,
  seen: ScreenSeen | undefined,
  look: SessionLook,
  at: {
    readonly now: number;
    readonly generation: number;
    /** The session's ready prompt and markers (its preset's). */
    readonly rules?: ScreenRules | undefined;
    /** runtime/screen/work.ts `classifyScreen`, or a `ScreenWorkMemo`'s for the session. */
    readonly classifyScreen?: ClassifyOptions["classifyScreen"];
  },
): { next: WorkRecord; events: WorkEvent[]; seen: ScreenSeen | undefined } {
  const { now, generation } = at;
  const p = prev?.generation === generation ? prev : undefined;
  const mem = look.screen === undefined ? undefined : seeScreen(seen, look.screen, generation, now);
  const lastActivity = look.lastActivity?.getTime();
  // An unchanged screen under the same rules is not searched for markers again.
  const busyMarker =
    mem !== undefined && mem === seen && mem.busy !== undefined && mem.busyRules === at.rules
      ? mem.busy
      : lookShowsBusyMarker(look, at.rules);
  let obs: ObservedWork;
  if (mem?.idle && look.turn === undefined && look.interaction === undefined) obs = { state: "idle" };
  else {
    obs = classifyLook(look, { now, rules: at.rules, classifyScreen: at.classifyScreen });
    const inTurn = p?.state === "working" || p?.state === "error";
    const settling = obs.state === "working" || (obs.state === "idle" && inTurn);
    // A preset that declares its busy markers vouches for them from the first look.
    const marked = p?.marked === true || (at.rules?.busyMarkers?.length ?? 0) > 0;
    if (marked && mem !== undefined && look.turn === undefined && settling && !busyMarker) {
      // Output the provider saw after this screen's first look (a change and back) counts.
      const still = now - Math.max(mem.since, lastActivity ?? Number.NEGATIVE_INFINITY);
      obs =
        still >= TURN_END_QUIET_MS || p === undefined
          ? { state: "idle" }
          : { state: p.state, message: p.message };
    }
  }
  const { next, events } = advanceWork(prev, obs, { now, generation, lastActivity, busyMarker });
  let seenNext = mem;
  if (mem !== undefined && (mem.busy !== busyMarker || mem.busyRules !== at.rules))
    seenNext = { ...mem, busy: busyMarker, busyRules: at.rules };
  if (seenNext && obs.state === "idle" && !seenNext.idle) seenNext = { ...seenNext, idle: true as const };
  return { next, events, seen: seenNext };
}
