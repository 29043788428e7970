/**
 * Drift, decided in one place: whether a running session's recorded start differs from what
 * the city file wants now, and how. The planner restarts on `core` and re-applies
 * session_live on `live`; `gc status` and `gc drift` report exactly the same answer.
 */
import {
  diffBreakdown,
  type FieldDrift,
  type FieldFingerprint,
  isNextStartField,
  type LegacyFingerprints,
  LIVE_FIELD,
  NEXT_START_FIELDS,
} from "../runtime/fingerprint.js";

/** What a record keeps of its last start. */
export interface StartedAs {
  readonly provider: string;
  readonly coreHash: string | null;
  readonly liveHash: string | null;
  readonly breakdown: Readonly<Record<string, FieldFingerprint>>;
}

/** What the city file wants now. */
export interface WantedAs {
  readonly provider: string;
  readonly core: string;
  readonly live: string;
  readonly breakdown: Readonly<Record<string, FieldFingerprint>>;
  /** The unkeyed hashes of a config holding secrets ({@link LegacyFingerprints}); never stored. */
  readonly legacy?: LegacyFingerprints | undefined;
}

/** The drift of one session. */
export interface Drift {
  /** `core`: restart; `live`: re-apply session_live; `none`: in sync. */
  readonly kind: "none" | "core" | "live";
  /**
   * Changed fields, old → new (`provider` included when the provider changed). Under `core`
   * also the start-only fields (the restart applies them).
   */
  readonly fields: readonly FieldDrift[];
  /**
   * Changed start-only fields (work dir, prompt, nudge) that nothing applies until the
   * session next starts; empty under `core`, whose restart applies them.
   */
  readonly nextStart: readonly FieldDrift[];
  /** One line for logs and plans (`provider changed: tmux → subprocess`, `config drift: command`). */
  readonly reason: string;
}

/**
 * Whether recorded core hash `recorded` is the start `d` wants: its keyed hash, or the
 * unkeyed one of the same config ({@link WantedAs.legacy}). Pure.
 */
export function sameCore(recorded: string | null | undefined, d: WantedAs): boolean {
  return recorded === d.core || (d.legacy !== undefined && recorded === d.legacy.core);
}

/** Whether recorded live hash `recorded` is the session_live `d` wants, keyed or unkeyed. Pure. */
export function sameLive(recorded: string | null | undefined, d: WantedAs): boolean {
  return recorded === d.live || (d.legacy !== undefined && recorded === d.legacy.live);
}

/**
 * `d`'s breakdown as compared with `stored`: where `stored` holds a field's unkeyed hash
 * ({@link WantedAs.legacy}), that is the same value recorded before the city had a key, so
 * the field counts as unchanged. Pure.
 */
function comparable(
  stored: Readonly<Record<string, FieldFingerprint>>,
  d: WantedAs,
): Readonly<Record<string, FieldFingerprint>> {
  const unkeyed = d.legacy?.fields;
  if (unkeyed === undefined) return d.breakdown;
  const out = { ...d.breakdown };
  for (const [f, h] of Object.entries(unkeyed)) {
    const cur = out[f];
    if (cur !== undefined && stored[f]?.hash === h) out[f] = { ...cur, hash: h };
  }
  return out;
}

/**
 * True when `rec` runs what `d` wants: same provider, core and live fingerprints — exactly
 * when {@link driftOf} says `none` (without the start-only fields it also reports). Pure.
 */
export function inSync(rec: StartedAs, d: WantedAs): boolean {
  return rec.provider === d.provider && sameCore(rec.coreHash, d) && sameLive(rec.liveHash, d);
}

/** Decides the drift of a started session against its desired start. Pure. */
export function driftOf(rec: StartedAs, d: WantedAs): Drift {
  const current = comparable(rec.breakdown, d);
  if (inSync(rec, d)) {
    // In sync (the common case, once per session per pass and status): only the start-only
    // fields can have changed. Matched by unkeyed hashes: plan.ts `recordedUnkeyed` re-records them.
    const nextStart = diffBreakdown(rec.breakdown, current, NEXT_START_FIELDS);
    return { kind: "none", fields: [], nextStart, reason: "in sync" };
  }
  const changed = diffBreakdown(rec.breakdown, current);
  if (rec.provider !== d.provider) {
    return {
      kind: "core",
      fields: [{ field: "provider", from: rec.provider, to: d.provider }, ...changed],
      nextStart: [],
      reason: `provider changed: ${rec.provider} → ${d.provider}`,
    };
  }
  if (!sameCore(rec.coreHash, d)) {
    // Every changed field is reported (session_live too: the restart applies it as well), but
    // only the core fields name the restart's cause.
    const core = changed.filter((f) => f.field !== LIVE_FIELD && !isNextStartField(f.field));
    const names = core.length > 0 ? core.map((f) => f.field) : ["(fingerprint)"];
    return { kind: "core", fields: changed, nextStart: [], reason: `config drift: ${names.join(", ")}` };
  }
  // Core is the same, so only session_live changed.
  return {
    kind: "live",
    fields: changed.filter((f) => f.field === LIVE_FIELD),
    nextStart: changed.filter((f) => isNextStartField(f.field)),
    reason: "session_live changed",
  };
}
