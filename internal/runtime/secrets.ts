/**
 * Secret detection for env-like keys. Values of matching keys are never printed by
 * status, show, logs, drift or events. Pure.
 */

const SECRET_KEY_RE =
  /(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|COOKIE|SESSION_KEY)/i;

/** Text shown in place of a secret value. */
export const REDACTED = "[redacted]";

/** True when values of env key `key` must never be shown or persisted in clear. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY_RE.test(key);
}

/** A copy of `env` with secret values replaced by {@link REDACTED}. Pure. */
export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) out[k] = isSecretKey(k) ? REDACTED : v;
  return out;
}
