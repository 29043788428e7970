/**
 * The one polling helper of the tests (beside vitest's `expect.poll` and `vi.waitFor`, for
 * when the caller needs the value found): calls `fn` until it returns a truthy value and
 * resolves that value. A throw counts as "not yet" and is reported if time runs out.
 */

/** Polls `fn` every `pollMs` until it is truthy; throws naming `what` after `timeoutMs`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T> | T,
  timeoutMs = 30_000,
  pollMs = 50,
): Promise<Exclude<T, false | null | undefined | 0 | "">> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as Exclude<T, false | null | undefined | 0 | "">;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
