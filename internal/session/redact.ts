/**
 * Secret redaction applied by the session store before anything reaches disk: values of
 * env-like keys that look secret (TOKEN, SECRET, PASSWORD, API_KEY, CREDENTIAL, AUTH, …) in
 * record metadata, event payloads, history entries and wait data. Small, pure and
 * deliberately independent of internal/config so the store has no config dependency.
 */

/** What a redacted value is replaced with. */
export const REDACTED = "[REDACTED]";

/**
 * Key names whose values are secrets, matched case-insensitively anywhere in the key
 * (`GITHUB_TOKEN`, `db.password`, `x-api-key`). `AUTH` does not match `AUTHOR`.
 */
export const SECRET_KEY_PATTERN =
  /TOKEN|SECRET|PASSW(?:OR)?D|PASSPHRASE|API[_.-]?KEY|CREDENTIAL|AUTH(?!OR)|PRIVATE[_.-]?KEY|ACCESS[_.-]?KEY|COOKIE/i;

// `KEY=value` strings, as in env arrays (`["PATH=/bin", "API_TOKEN=x"]`) and argv.
const ENV_ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_.-]*)=/;

/** True when values stored under `key` must never be persisted or printed. Pure. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

/**
 * Redacts one `KEY=value` string when KEY is secret (`"API_TOKEN=abc"` → `"API_TOKEN=[REDACTED]"`);
 * any other string is returned unchanged. Pure.
 */
export function redactAssignment(s: string): string {
  const m = ENV_ASSIGNMENT.exec(s);
  if (m?.[1] && isSecretKey(m[1])) return `${m[1]}=${REDACTED}`;
  return s;
}

/**
 * A copy of a string map with the value of every secret key replaced by {@link REDACTED}.
 * Values of other keys are kept, except `KEY=value` values whose KEY is secret. Pure.
 */
export function redactStringMap(map: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) out[k] = isSecretKey(k) ? REDACTED : redactAssignment(v);
  return out;
}

/**
 * A deep copy of a JSON-like value in which every object member with a secret key has its
 * value replaced by {@link REDACTED} (whatever its type), and every string of the form
 * `SECRET_KEY=value` is redacted. Non-JSON values (functions, undefined members) are dropped
 * the way `JSON.stringify` drops them. Pure.
 */
export function redactDeep(value: unknown): unknown {
  if (typeof value === "string") return redactAssignment(value);
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
