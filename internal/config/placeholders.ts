/**
 * `{{name}}` placeholders in prompts and `work_dir` (never in shell commands: hooks read
 * `$GC_SESSION`, `$GC_DIR`… from their environment instead, so no value is spliced into
 * shell text). `\{{` is a literal `{{`. Validated at load, expanded at resolution. Pure.
 */
import { didYouMean } from "../base/suggest.js";

/** Placeholders a prompt (inline or template file) may use. */
export const PROMPT_PLACEHOLDERS = ["city", "city_dir", "agent", "session", "work_dir"] as const;
/** Placeholders `work_dir` may use (it cannot name itself). */
export const WORK_DIR_PLACEHOLDERS = ["city", "agent", "session"] as const;

const TOKEN_RE = /\\\{\{|\{\{\s*([^{}]*?)\s*\}\}/g;

/** One unknown placeholder: its name and 0-based offset in the text. */
export interface PlaceholderProblem {
  readonly offset: number;
  readonly message: string;
}

/** Every `{{x}}` in `text` whose `x` is not in `allowed`. */
export function placeholderProblems(text: string, allowed: readonly string[]): PlaceholderProblem[] {
  const out: PlaceholderProblem[] = [];
  for (const m of text.matchAll(TOKEN_RE)) {
    const name = m[1];
    if (name === undefined || allowed.includes(name)) continue;
    const list = allowed.map((a) => `{{${a}}}`).join(", ");
    out.push({
      offset: m.index,
      message: `unknown placeholder {{${name}}}${didYouMean(name, allowed)}; known: ${list} (write \\{{ for a literal "{{")`,
    });
  }
  return out;
}

/** `text` with every known `{{x}}` replaced by `vars[x]` and `\{{` by `{{`. Unknown ones stay. */
export function expandPlaceholders(text: string, vars: Readonly<Record<string, string>>): string {
  if (!text.includes("{{")) return text; // both forms contain it (a work dir is usually plain)
  return text.replace(TOKEN_RE, (whole, name: string | undefined) => {
    if (name === undefined) return "{{";
    return vars[name] ?? whole;
  });
}
