/**
 * "Did you mean" suggestions for unknown keys, providers and agent names in the city
 * file. Pure; used by the schema decoder and the semantic validator.
 */

/** Edit distance between `a` and `b` (optimal string alignment: a swap of neighbours costs 1). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
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
