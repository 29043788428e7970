/**
 * `${VAR}` / `${VAR:-default}` / `${VAR-default}` expansion in city-file strings. The
 * environment is passed in (never read from `process.env` here). `$$` is a literal `$`,
 * and a `$` not followed by `{` is left alone so `$HOME` reaches the shell untouched. Pure.
 */

/** One variable a string used, with the value substituted. */
export interface UsedVariable {
  readonly name: string;
  readonly value: string;
}

/** The outcome of {@link interpolate}. */
export type InterpolationResult =
  | { readonly ok: true; readonly value: string; readonly used: readonly UsedVariable[] }
  | { readonly ok: false; readonly error: string };

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Expands `text` against `env`. A variable that is unset (for `:-`, also empty) takes its
 * default; unset without a default is an error, as are an unterminated `${` and a bad
 * variable name. Defaults are literal text (no nesting).
 */
export function interpolate(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
): InterpolationResult {
  if (!text.includes("$")) return { ok: true, value: text, used: [] };
  let out = "";
  const used: UsedVariable[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch !== "$") {
      out += ch;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === "$") {
      out += "$";
      i += 2;
      continue;
    }
    if (next !== "{") {
      out += "$";
      i++;
      continue;
    }
    const end = text.indexOf("}", i + 2);
    if (end < 0) return { ok: false, error: `unterminated "\${" in ${JSON.stringify(text)}` };
    const body = text.slice(i + 2, end);
    const m = /^([^:-]*)(:-|-)?(.*)$/s.exec(body)!;
    const name = m[1]!;
    const op = m[2];
    if (!NAME_RE.test(name)) {
      return { ok: false, error: `invalid variable name ${JSON.stringify(name)} in "\${${body}}"` };
    }
    const raw = env[name];
    let value: string;
    if (op === ":-") value = raw === undefined || raw === "" ? m[3]! : raw;
    else if (op === "-") value = raw === undefined ? m[3]! : raw;
    else if (raw === undefined) {
      return {
        ok: false,
        error: `environment variable ${name} is not set (use \${${name}:-default} for a default, or $\${${name}} to pass it through to the shell)`,
      };
    } else value = raw;
    if (raw !== undefined && value === raw) used.push({ name, value });
    out += value;
    i = end + 1;
  }
  return { ok: true, value: out, used };
}
