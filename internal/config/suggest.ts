/**
 * "Did you mean" suggestions for unknown keys, providers and agent names in the city
 * file. Pure; used by the schema decoder and the semantic validator.
 */

/** Levenshtein edit distance between `a` and `b` (case-sensitive). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The candidate closest to `input`, or `undefined` when none is close enough (distance at
 * most a third of the longer string, minimum 1, or `input` is a prefix of the candidate;
 * case-insensitive, and `-`/`_` swaps count as exact). Ties go to the earlier candidate.
 */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  const norm = (s: string) => s.toLowerCase().replaceAll("-", "_");
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const a = norm(input);
    const b = norm(c);
    // A prefix of a longer candidate ("arg" for "argument") counts as close.
    const prefix = a.length >= 2 && b.startsWith(a) ? 0.5 : Number.POSITIVE_INFINITY;
    const d = a === b ? 0 : Math.min(editDistance(a, b), prefix);
    const limit = Math.max(1, Math.floor(Math.max(input.length, c.length) / 3));
    if (d <= limit && d < bestScore) {
      best = c;
      bestScore = d;
    }
  }
  return best;
}

/** `" (did you mean \"x\"?)"` or `""`. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const c = closest(input, candidates);
  return c === undefined ? "" : ` (did you mean ${JSON.stringify(c)}?)`;
}
