/**
 * Secret detection and redaction shared by every layer (config display, fingerprints and
 * `gc drift`, the session store): which env-like keys hold secrets, the one marker shown in
 * place of a secret, and the text redactions. Values of matching keys are never printed by
 * status, show, logs, drift or events. Pure.
 */

/**
 * Key names whose values are secrets, matched case-insensitively anywhere in the key
 * (`GITHUB_TOKEN`, `db.password`, `x-api-key`). `AUTH` matches `AUTHORIZATION` but not
 * `AUTHOR`. The one pattern every layer uses (config display, drift, the session store).
 */
export const SECRET_KEY_PATTERN =
  /TOKEN|SECRET|PASSW(?:OR)?D|PASSPHRASE|API[_.-]?KEY|CREDENTIAL|AUTH(?!OR(?!IZ))|PRIVATE[_.-]?KEY|ACCESS[_.-]?KEY|COOKIE/i;

/** Text shown in place of a secret value, everywhere (one marker: see {@link redactAssignments}). */
export const REDACTED = "[redacted]";

/** Shortest secret value looked for inside other text (shorter ones would mangle output). */
export const MIN_SECRET_LENGTH = 4;

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

/**
 * Values of secret-named keys anywhere in a JSON-like value (maps nested in lists too, e.g.
 * an MCP server's `env`), in document order. Pure.
 */
export function secretValuesIn(value: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (typeof x === "string" && isSecretKey(k)) out.push(x);
        else walk(x);
      }
    }
  };
  walk(value);
  return out;
}

/** `values` worth looking for in text (at least {@link MIN_SECRET_LENGTH} long), distinct, longest first. Pure. */
export function secretsLongestFirst(values: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const v of values) if (v.length >= MIN_SECRET_LENGTH) out.add(v);
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of each of `secrets` replaced by {@link REDACTED}. Pure. */
export function redactValues(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const v of secrets) if (v.length > 0) out = out.replaceAll(v, REDACTED);
  return out;
}

/**
 * Redacts `secrets` ({@link redactValues}) from the message of `e` and of each error in its
 * `cause` chain, in place, and returns `e`: whoever logs, records or shows the error later
 * (controller.log, events, state.db) never sees them — e.g. a program that printed its token
 * as it died, quoted in a start error's "last output". Anything not an Error is returned as is.
 */
export function redactError<T>(e: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return e;
  const seen = new Set<unknown>();
  for (let x: unknown = e; x instanceof Error && !seen.has(x); x = x.cause) {
    seen.add(x);
    x.message = redactValues(x.message, secrets);
  }
  return e;
}

// `KEY=value` in env arrays (`["API_TOKEN=x"]`), argv and free text (error messages, notes);
// the value ends at whitespace or its closing quote.
const TEXT_ASSIGNMENT = /([A-Za-z_][A-Za-z0-9_.-]*)=("[^"]*"|'[^']*'|[^\s"']+)/g;

/**
 * Redacts every `SECRET_KEY=value` in a string: env entries (`"API_TOKEN=abc"`) and free text
 * (`"exit 1: GH_TOKEN=abc failed"` → `"exit 1: GH_TOKEN=[redacted] failed"`). Idempotent: a
 * value that already starts with {@link REDACTED} is left as it is (with what follows it,
 * e.g. `TOKEN=[redacted]; next`), so text redacted once reads the same after any layer
 * redacts it again. Pure.
 */
export function redactAssignments(s: string): string {
  if (!s.includes("=")) return s;
  return s.replace(TEXT_ASSIGNMENT, (m: string, k: string, v: string) =>
    isSecretKey(k) && !v.startsWith(REDACTED) ? `${k}=${REDACTED}` : m,
  );
}
