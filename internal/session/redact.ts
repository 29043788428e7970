/**
 * Secret redaction applied by the session store before anything reaches disk: values of
 * env-like keys that look secret (TOKEN, SECRET, PASSWORD, API_KEY, CREDENTIAL, AUTH, …) in
 * record metadata, event payloads, history entries and wait data. Small, pure and
 * independent of internal/config; the key pattern, the marker and the text redaction are the
 * shared ones in runtime/secrets.ts.
 */

import { isSecretKey, REDACTED, redactAssignments, SECRET_KEY_PATTERN } from "../runtime/secrets.js";

export { isSecretKey, REDACTED, SECRET_KEY_PATTERN };

/**
 * Redacts every `SECRET_KEY=value` in a string (`"exit 1: GH_TOKEN=abc failed"` →
 * `"exit 1: GH_TOKEN=[redacted] failed"`); idempotent. The shared implementation,
 * runtime/secrets.ts {@link redactAssignments}. Pure.
 */
export const redactText: (s: string) => string = redactAssignments;

/**
 * A copy of a string map with the value of every secret key replaced by {@link REDACTED}.
 * Values of other keys go through {@link redactText}. Pure.
 */
export function redactStringMap(map: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) out[k] = isSecretKey(k) ? REDACTED : redactText(v);
  return out;
}

/**
 * A deep copy of a JSON-like value in which every object member with a secret key has its
 * value replaced by {@link REDACTED} (whatever its type), and every string goes through
 * {@link redactText}. Non-JSON values (functions, undefined members) are dropped
 * the way `JSON.stringify` drops them. Pure.
 */
export function redactDeep(value: unknown): unknown {
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : redactDeep(v)));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined || typeof v === "function") continue;
      out[k] = isSecretKey(k) ? REDACTED : redactDeep(v);
    }
    return out;
  }
  return value;
}
