/**
 * Whose drift `gc drift` and the dashboard show. Beside a running controller whose last pass
 * resolved the city file as it is now (city.ts currentDigestSessions), drift is the
 * controller's: it is what the controller acts on, whatever this process's environment holds.
 * Without one (or before its first pass, or while its digest is stale) this process resolves
 * the file itself, as it always did. With the controller's view, this process resolves too and
 * names the sessions its environment resolves differently (names only: the values that
 * differ may be secrets).
 */
import type { SessionRecord } from "../session/store.js";
import { type City, currentDigestSessions } from "./city.js";
import { findController } from "./controller.js";
import type { WantedSession } from "./digest-cache.js";
import { type SessionDrift, sessionDrift } from "./drift-report.js";
import type { ControllerInfo } from "./status-snapshot.js";

/** What drift is computed against. */
export interface DesiredView {
  /** `controller`: the running controller's last resolution; `local`: this process's. */
  readonly source: "controller" | "local";
  readonly desired: readonly WantedSession[];
  /**
   * With the controller's view: the sessions (sorted) this process's environment resolves
   * differently from the controller's, or declares where it does not. Empty otherwise.
   */
  readonly callerDiffers: readonly string[];
  readonly controller: ControllerInfo;
}

/** One session's drift with whose view it is. */
export type ViewedDrift = SessionDrift & {
  readonly view: DesiredView["source"];
  /** True when this process's environment resolves the session differently (controller view only). */
  readonly callerEnvDiffers: boolean;
};

/** Whether `a` and `b` resolve the session alike (provider and every fingerprint). Pure. */
function sameWanted(a: WantedSession | undefined, b: WantedSession | undefined): boolean {
  if (!a || !b) return a === b;
  return (
    a.provider === b.provider &&
    a.core === b.core &&
    a.live === b.live &&
    JSON.stringify(a.breakdown) === JSON.stringify(b.breakdown)
  );
}

/** The names of sessions `mine` resolves differently from `theirs`, sorted. Pure. */
export function differingSessions(
  theirs: readonly WantedSession[],
  mine: readonly WantedSession[],
): string[] {
  const t = new Map(theirs.map((d) => [d.name, d]));
  const m = new Map(mine.map((d) => [d.name, d]));
  return [...new Set([...t.keys(), ...m.keys()])].filter((n) => !sameWanted(t.get(n), m.get(n))).sort();
}

/**
 * The desired sessions drift is computed against: the running controller's current digest when
 * it gives one, else this process's resolution (city.loadWanted).
 * @throws ConfigError as city.loadWanted does, when no controller view stands in.
 */
export async function desiredView(city: City): Promise<DesiredView> {
  const controller = await findController(city.stateDir, { desired: true });
  const theirs = controller.desired
    ? await currentDigestSessions(city, controller.desired).catch(() => undefined)
    : undefined;
  const mine = await city.loadWanted();
  if (!theirs) return { source: "local", desired: mine, callerDiffers: [], controller };
  return {
    source: "controller",
    desired: theirs,
    callerDiffers: differingSessions(theirs, mine),
    controller,
  };
}

/** The drift of session `name` under `view`, from its record. Pure. */
export function viewedDrift(view: DesiredView, name: string, rec: SessionRecord | undefined): ViewedDrift {
  return {
    ...sessionDrift(
      name,
      rec,
      view.desired.find((d) => d.name === name),
    ),
    view: view.source,
    callerEnvDiffers: view.callerDiffers.includes(name),
  };
}

/**
 * The one line saying this process's environment resolves `names` differently from the
 * running controller (whose view is shown), or `undefined` when nothing differs. Pure.
 */
export function callerDiffersText(view: DesiredView, names: readonly string[]): string | undefined {
  const differ = view.callerDiffers.filter((n) => names.includes(n));
  if (differ.length === 0) return undefined;
  return `note: your environment resolves the city differently from the running controller for ${differ.join(", ")}; drift shown is the controller's (what it acts on)`;
}
