/**
 * Moving a session record to a target lifecycle state through legal transitions only.
 * The reconciler says where a record must end up ("running", "stopped"); this finds the
 * shortest legal path through the transition table and applies it with compare-and-set.
 */
import { canTransition, LIFECYCLE_STATES, type LifecycleState } from "../session/lifecycle.js";
import { casUpdate, type SessionPatch, type SessionRecord, type SessionStore } from "../session/store.js";

// Intermediate states to prefer on equally short paths: pass through `backoff` rather than
// `stopped` or `suspended`, which mean "at rest" to an operator reading the event log.
const PREFERENCE: readonly LifecycleState[] = [
  ...LIFECYCLE_STATES.filter((s) => s !== "stopped" && s !== "suspended"),
  "stopped",
  "suspended",
];

/** Shortest legal path `from → … → to` (excluding `from`); `[]` when equal; `undefined` when unreachable. Pure. */
export function pathTo(from: LifecycleState, to: LifecycleState): LifecycleState[] | undefined {
  if (from === to) return [];
  const prev = new Map<LifecycleState, LifecycleState>();
  const queue: LifecycleState[] = [from];
  while (queue.length > 0) {
    const s = queue.shift()!;
    for (const n of PREFERENCE) {
      if (n === from || prev.has(n) || !canTransition(s, n)) continue;
      prev.set(n, s);
      if (n === to) {
        const path: LifecycleState[] = [n];
        let cur = s;
        while (cur !== from) {
          path.unshift(cur);
          cur = prev.get(cur)!;
        }
        return path;
      }
      queue.push(n);
    }
  }
  return undefined;
}

/**
 * Moves `name` to `to` by legal steps, each recorded with `reason`, applying `patch` with the
 * last step (or alone when already there). Retries compare-and-set races.
 * @throws IllegalTransitionError when `to` is unreachable from the stored state.
 */
export async function walkTo(
  store: SessionStore,
  name: string,
  to: LifecycleState,
  reason: string,
  patch: Omit<SessionPatch, "transition"> = {},
): Promise<SessionRecord> {
  let rec: SessionRecord | undefined;
  for (let guard = 0; guard < LIFECYCLE_STATES.length + 1; guard++) {
    rec = await casUpdate(store, name, (cur) => {
      const path = pathTo(cur.state, to);
      if (path === undefined) {
        return { transition: { to, reason } }; // let the store throw IllegalTransitionError
      }
      if (path.length === 0) return Object.keys(patch).length > 0 ? patch : undefined;
      const step = path[0]!;
      return step === to ? { ...patch, transition: { to, reason } } : { transition: { to: step, reason } };
    });
    if (rec.state === to) return rec;
  }
  return rec!;
}
