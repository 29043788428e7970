/** Quoting of one word for `/bin/sh`: the one way a shell command line is built from a value. */

const SAFE_WORD_RE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** `word` quoted for `/bin/sh` (unchanged when it needs no quoting). Pure. */
export function shellQuote(word: string): string {
  if (SAFE_WORD_RE.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
