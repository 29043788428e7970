/**
 * Shared plumbing of the commands that operate one session (`peek`, `nudge`, `attach`,
 * `wait`, `run`, `exec`, `session …`): open the city and resolve the name
 * (internal/operate/target.ts), parse flags, read stdin, print JSON.
 */
import { parseDuration } from "../../internal/base/duration.js";
import { UsageError } from "../../internal/base/errors.js";
import { type Target, targetIn } from "../../internal/operate/target.js";
import type { CommandContext } from "./context.js";
import { openCity } from "./deps.js";

/**
 * Opens the city and resolves `name` (exit 3 with a did-you-mean when unknown), then runs
 * `fn`; the city is closed however `fn` ends.
 */
export async function withTarget<T>(
  ctx: CommandContext,
  name: string,
  fn: (t: Target) => Promise<T>,
): Promise<T> {
  const city = await openCity(ctx);
  try {
    return await fn(await targetIn(city, name, ctx.signal));
  } finally {
    await city.close();
  }
}

/** Parses a duration flag (`30s`, `2m`, `1500ms`, `0`). @throws UsageError when malformed. */
export function durationFlag(flag: string, value: string | undefined, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  const ms = parseDuration(value);
  if (ms === undefined) {
    throw new UsageError(`--${flag}: ${JSON.stringify(value)} is not a duration (e.g. 30s, 2m, 1500ms)`);
  }
  return ms;
}

/** Parses a positive integer flag. @throws UsageError otherwise. */
export function intFlag(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${flag}: expected a positive integer`);
  return n;
}

/** Prints a value as indented JSON. */
export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.out(JSON.stringify(value, null, 2));
}

/** Reads all of stdin as UTF-8 (for `gc nudge SESSION -`). */
export async function readStdin(ctx: CommandContext): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of ctx.stdin) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The text of a `-` argument (`echo hi | gc nudge S -`): stdin without one trailing newline
 * (`\n` or `\r\n`), which `echo` and heredocs add and which would otherwise press Enter
 * once more. Other newlines are kept.
 */
export async function readTextArg(ctx: CommandContext): Promise<string> {
  return (await readStdin(ctx)).replace(/\r?\n$/, "");
}

/** A duration for people: `850ms`, `4.2s`, `3m05s`. Pure. */
export function humanDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const s = Math.round(ms / 1_000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}
