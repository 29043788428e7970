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
  // Each cell's width is measured once (a status table has thousands of cells); a table of
  // printable ASCII only (one test of all its text) measures by length.
  const width = PLAIN.test(header.join("") + rows.map((r) => r.join("")).join(""))
    ? (s: string) => s.length
    : displayWidth;
  const headerWidths = header.map(width);
  const widths = [...headerWidths];
  const cellWidths = rows.map((r) => {
    const ws = r.map(width);
    for (let i = 0; i < widths.length; i++) {
      const w = ws[i] ?? 0;
      if (w > widths[i]!) widths[i] = w;
    }
    return ws;
  });
  const line = (r: readonly string[], ws: readonly number[]) => {
    let out = "";
    for (let i = 0; i < r.length; i++) {
      if (i > 0) out += "  ";
      out += r[i]! + " ".repeat(Math.max(0, (widths[i] ?? 0) - ws[i]!));
    }
    return out.trimEnd();
  };
  const out = [line(header, headerWidths)];
  for (let i = 0; i < rows.length; i++) out.push(line(rows[i]!, cellWidths[i]!));
  return out;
}

/**
 * A RUNNING cell: `?` when the session's provider could not be observed (the command says why
 * on stderr, `cannot observe provider …`), never a "no" that reads as a dead session. Pure.
 */
export function runningCell(running: boolean | null): string {
  return running === null ? "?" : running ? "yes" : "no";
}
