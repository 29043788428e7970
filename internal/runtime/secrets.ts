/**
 * Secret detection for env-like keys. Values of matching keys are never printed by
 * status, show, logs, drift or events. Pure.
 */

/**
 * Key names whose values are secrets, matched case-insensitively anywhere in the key
 * (`GITHUB_TOKEN`, `db.password`, `x-api-key`). `AUTH` matches `AUTHORIZATION` but not
 * `AUTHOR`. The one pattern every layer uses (config display, drift, the session store).
 */
export const SECRET_KEY_PATTERN =
  /TOKEN|SECRET|PASSW(?:OR)?D|PASSPHRASE|API[_.-]?KEY|CREDENTIAL|AUTH(?!OR(?!IZ))|PRIVATE[_.-]?KEY|ACCESS[_.-]?KEY|COOKIE/i;

/** Text shown in place of a secret value. */
export const REDACTED = "[redacted]";

/** True when values of env key `key` must never be shown or persisted in clear. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

/** A copy of `env` with secret values replaced by {@link REDACTED}. Pure. */
export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) out[k] = isSecretKey(k) ? REDACTED : v;
  return out;
}
