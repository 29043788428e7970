/**
 * Observing a session without disturbing it: what it printed since an observer's previous
 * look. Screen text (from `peek`) is compared with the tail remembered for that observer,
 * and the cursor is kept in a small file per session and observer under
 * `<city>/.gc/observers/`. Used by `gc wait`, `gc run` and `gc session logs -f`.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { UsageError } from "../base/errors.js";
import { nameProblem } from "../base/names.js";

export { screenLines } from "../reconcile/nudge-delivery.js";

/** Lines of an observer's last look kept to find where new output starts. */
export const CURSOR_TAIL_LINES = 200;
/** The observer used when `--observer` is not given. */
export const DEFAULT_OBSERVER = "default";

/** What was printed since a previous look. */
export interface Delta {
  /** New lines, oldest first. The previous look's last line is repeated when it grew. */
  readonly lines: string[];
  /**
   * True when the previous look could not be found in the current screen (cleared,
   * scrolled out of the history, or a full-screen redraw): `lines` is then everything.
   */
  readonly gap: boolean;
}

function sameRun(a: readonly string[], ai: number, b: readonly string[], bi: number, n: number): boolean {
  for (let k = 0; k < n; k++) if (a[ai + k] !== b[bi + k]) return false;
  return true;
}

/**
 * The lines of `now` that come after the previous look `prev` (both from
 * {@link screenLines}). The previous look's complete lines (all but its last, which may
 * still be growing, like a prompt being typed on) are located in `now`: first as a whole,
 * earliest position first; else the longest suffix of them that starts `now` (the top
 * scrolled out of the history). Its last line is then skipped when unchanged and repeated
 * in full when it grew. `prev === undefined` (first look) returns everything, no gap. Pure.
 */
export function deltaSince(prev: readonly string[] | undefined, now: readonly string[]): Delta {
  if (prev === undefined || prev.length === 0) return { lines: [...now], gap: false };
  const complete = prev.slice(0, -1);
  const last = prev[prev.length - 1]!;
  let at: number | undefined;
  const n = complete.length;
  if (n === 0) {
    at = 0;
  } else {
    for (let p = 0; p + n <= now.length; p++) {
      if (sameRun(now, p, complete, 0, n)) {
        at = p + n;
        break;
      }
    }
    if (at === undefined) {
      for (let k = 1; k < n; k++) {
        const len = n - k;
        if (len <= now.length && sameRun(now, 0, complete, k, len)) {
          at = len;
          break;
        }
      }
    }
  }
  if (at === undefined) return { lines: [...now], gap: true };
  const next = now[at];
  if (next === undefined) return { lines: [], gap: false };
  if (next === last) return { lines: now.slice(at + 1), gap: false };
  if (next.startsWith(last)) return { lines: now.slice(at), gap: false };
  // The line the previous look ended on was rewritten (progress bar, redraw): show it.
  return { lines: now.slice(at), gap: false };
}

/** An observer's position in a session's output. */
export interface ObserverCursor {
  /** Lines this observer has been shown so far (its cursor). */
  readonly offset: number;
  /** The last {@link CURSOR_TAIL_LINES} lines it saw. */
  readonly tail: string[];
  /** When it last looked, epoch ms. */
  readonly at: number;
}

/** @throws UsageError unless `observer` is a valid observer id (same rule as session names). */
export function checkObserverId(observer: string): void {
  const why = nameProblem(observer);
  if (why) throw new UsageError(`invalid observer id ${JSON.stringify(observer)}: ${why}`);
}

function cursorPath(stateDir: string, session: string, observer: string): string {
  return join(stateDir, "observers", session, `${observer}.json`);
}

/** The observer's cursor, or `undefined` when it never looked (or the file is unreadable). */
export async function loadCursor(
  stateDir: string,
  session: string,
  observer: string,
): Promise<ObserverCursor | undefined> {
  try {
    const raw = JSON.parse(await readFile(cursorPath(stateDir, session, observer), "utf8")) as unknown;
    if (!raw || typeof raw !== "object") return undefined;
    const c = raw as Partial<ObserverCursor>;
    if (typeof c.offset !== "number" || !Array.isArray(c.tail) || typeof c.at !== "number") return undefined;
    return { offset: c.offset, tail: c.tail.filter((l): l is string => typeof l === "string"), at: c.at };
  } catch {
    return undefined;
  }
}

/** Writes the observer's cursor atomically (0600 file in 0700 directories). */
export async function saveCursor(
  stateDir: string,
  session: string,
  observer: string,
  cursor: ObserverCursor,
): Promise<void> {
  const path = cursorPath(stateDir, session, observer);
  const tmp = `${path}.${randomUUID()}.tmp`;
  // A concurrent dropCursors (session kill) may remove the directory between the steps:
  // recreate it and write again; the write is atomic either way.
  for (let attempt = 1; ; attempt++) {
    try {
      await mkdir(join(stateDir, "observers", session), { recursive: true, mode: 0o700 });
      await writeFile(tmp, `${JSON.stringify(cursor)}\n`, { mode: 0o600 });
      await rename(tmp, path);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 3) throw e;
    }
  }
}

/** Forgets every observer cursor of `session` (its output history is gone). Idempotent. */
export async function dropCursors(stateDir: string, session: string): Promise<void> {
  await rm(join(stateDir, "observers", session), { recursive: true, force: true });
}

/**
 * One observation by `observer`: the delta since its cursor, and the cursor to store next.
 * Pure (the caller loads and saves).
 */
export function observe(
  cursor: ObserverCursor | undefined,
  now: readonly string[],
  at: number,
): { delta: Delta; next: ObserverCursor } {
  const delta = deltaSince(cursor?.tail, now);
  const offset = (cursor?.offset ?? 0) + delta.lines.length;
  return { delta, next: { offset, tail: now.slice(-CURSOR_TAIL_LINES), at } };
}
