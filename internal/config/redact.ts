/**
 * Secret redaction for everything the config layer prints (`gc config show`, drift and
 * status views): env values whose keys look secret, and any value that came from the
 * environment through `${VAR}` interpolation, wherever it ended up. Pure.
 */

import type { UsedVariable } from "../base/interpolate.js";
import { isSecretKey, REDACTED, redactEnv, redactValues, secretsLongestFirst } from "../runtime/secrets.js";

export { isSecretKey, REDACTED, redactEnv };

/**
 * Values substituted into the config from the environment (`${VAR}`), whatever the
 * variable's name (`postgres://u:${DBPW}@h/db` holds a password though `DBPW` does not look
 * secret), longest first: they are sealed in fingerprints, kept out of every cache and
 * redacted from what is printed ({@link redactText}). Empty values are not secrets.
 */
export function secretValues(used: readonly UsedVariable[]): string[] {
  return secretsLongestFirst(used.map((u) => u.value).filter((v) => v !== ""));
}

/** `text` with every occurrence of each of `secrets` replaced by {@link REDACTED}. */
export const redactText: (text: string, secrets: readonly string[]) => string = redactValues;

/**
 * A deep copy of a JSON-like value with secret env values (by key, in any object whose
 * key is `env`) and interpolated secret values (anywhere in strings) redacted.
 */
export function redactDeep<T>(value: T, secrets: readonly string[]): T {
  const walk = (v: unknown, key: string | undefined): unknown => {
    if (typeof v === "string") return redactText(v, secrets);
    if (Array.isArray(v)) return v.map((x) => walk(x, undefined));
    if (v !== null && typeof v === "object") {
      const src = key === "env" ? redactEnv(v as Record<string, string>) : (v as Record<string, unknown>);
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(src)) out[k] = walk(x, k);
      return out;
    }
    return v;
  };
  return walk(value, undefined) as T;
}
