/**
 * Duration strings in the city file (`30s`, `5m`, `1500ms`, `1h30m`). Parsed into
 * milliseconds by the schema decoder and formatted back for `gc config show`. Pure.
 */

const PART_RE = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Regular expression (JSON Schema dialect) every duration string matches. */
export const DURATION_PATTERN = "^(0|([0-9]+(\\.[0-9]+)?(ms|s|m|h))+)$";

/**
 * Milliseconds for a duration string made of number+unit parts (units `ms`, `s`, `m`,
 * `h`; `"0"` alone is allowed), or `undefined` when `text` is not one. Fractions of a
 * millisecond are rounded.
 */
export function parseDuration(text: string): number | undefined {
  if (text === "0") return 0;
  if (text.length === 0) return undefined;
  let total = 0;
  PART_RE.lastIndex = 0;
  while (PART_RE.lastIndex < text.length) {
    const m = PART_RE.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return Math.round(total);
}

/** Shortest exact rendering of `ms` as a duration string (`90000` → `1m30s`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0";
  let rest = ms;
  let out = "";
  for (const [unit, size] of [
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1_000],
  ] as const) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  if (rest > 0) out += `${rest}ms`;
  return out;
}
