/**
 * One session's drift as `gc drift --json` and the dashboard show it: each changed field
 * old → new (secret-derived values masked) with its effect (`restart`, or `live` re-apply).
 */

import { driftOf } from "../reconcile/drift.js";
import { type FieldDrift, LIVE_FIELD } from "../runtime/fingerprint.js";
import type { SessionRecord } from "../session/store.js";
import type { WantedSession } from "./digest-cache.js";

/**
 * A drifted field with what applying it takes: `restart`, `live` (re-applied without a
 * restart), or `next-start` (a start-only field: waits for the session's next start).
 */
export type FieldChange = FieldDrift & { readonly effect: "live" | "restart" | "next-start" };

/** The drift report of one session. */
export type SessionDrift =
  | { readonly session: string; readonly drift: "none" | "core" | "live"; readonly fields: FieldChange[] }
  | { readonly session: string; readonly drift: "unknown"; readonly reason: string; readonly fields: [] };

/** The drift of session `name` from its record and desired session (either may be missing). Pure. */
export function sessionDrift(
  name: string,
  rec: SessionRecord | undefined,
  d: WantedSession | undefined,
): SessionDrift {
  if (!d || !rec || rec.coreHash === null) {
    return {
      session: name,
      drift: "unknown",
      reason: !d ? "not in the city file" : "never started",
      fields: [],
    };
  }
  const decided = driftOf(rec, d);
  // Under a core drift the restart applies every field, session_live included.
  const fields = decided.fields.map(
    (f): FieldChange => ({
      ...f,
      effect: f.field === LIVE_FIELD && decided.kind === "live" ? "live" : "restart",
    }),
  );
  const waiting = decided.nextStart.map((f): FieldChange => ({ ...f, effect: "next-start" }));
  return { session: name, drift: decided.kind, fields: [...fields, ...waiting] };
}
