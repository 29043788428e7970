/**
 * Plain-text tables for the CLI: columns padded to their widest cell, two spaces apart,
 * no trailing blanks. Widths are terminal display widths (CJK and emoji take two columns,
 * combining marks none), not `.length`. Pure.
 */
import { createRequire } from "node:module";

/** string-width, loaded on the first non-ASCII cell (its Unicode tables cost ~10 ms to load). */
let stringWidth: ((s: string) => number) | undefined;
function unicodeWidth(s: string): number {
  stringWidth ??= (createRequire(import.meta.url)("string-width") as { default: (s: string) => number })
    .default;
  return stringWidth(s);
}

/** Printable ASCII only: one column per character. */
const PLAIN = /^[\x20-\x7e]*$/;

/** Display width of `s` (plain ASCII without the Unicode tables, which cost milliseconds to warm). Pure. */
function displayWidth(s: string): number {
  return PLAIN.test(s) ? s.length : unicodeWidth(s);
}

/** `s` padded with spaces to display width `width`. Pure. */
export function padDisplay(s: string, width: number): string {
  return s + " ".repeat(Math.max(0, width - displayWidth(s)));
}

/** The lines of a table: the header, then one line per row. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) =>
    Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ""))),
  );
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => padDisplay(c, widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/**
 * A RUNNING cell: `?` when the session's provider could not be observed (the command says why
 * on stderr, `cannot observe provider …`), never a "no" that reads as a dead session. Pure.
 */
export function runningCell(running: boolean | null): string {
  return running === null ? "?" : running ? "yes" : "no";
}
