/**
 * The conformance harness: what a provider under test supplies (a {@link ConformanceTarget}),
 * what each case receives (a {@link CaseContext}), and the runner shared by vitest and
 * `gc conformance`. Cases are data; the runner owns names, cleanup and timeouts.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../internal/base/errors.js";
import type { Provider, ProviderCapabilities, StartConfig } from "../internal/runtime/provider.js";

/** What a provider under test supplies to the suite. */
export interface ConformanceTarget {
  /** Provider label shown in reports (`tmux`, `exec:/path`, …). */
  readonly label: string;
  readonly provider: Provider;
  /** A prefix unique to this run; every session name the suite creates starts with it. */
  readonly namePrefix: string;
  /** Multiplies every wait (slow remote backends raise it). Default 1. */
  readonly timeScale?: number | undefined;
  /**
   * A start config that runs POSIX-sh `command` in a fresh, empty work dir (hooks run in
   * that work dir too). `extra` overrides fields.
   */
  makeConfig(command: string, extra?: Partial<StartConfig>): Promise<StartConfig>;
  /**
   * Reads a file the session wrote, relative to its work dir; `undefined` when absent.
   * Absent when the target cannot observe session files at all: cases that read one are
   * then skipped with {@link ConformanceTarget.noFilesReason}.
   */
  readFile?(name: string, config: StartConfig, rel: string): Promise<string | undefined>;
  /** Why session files cannot be read (shown as the skip reason when `readFile` is absent). */
  readonly noFilesReason?: string | undefined;
  /**
   * The exec protocol level the target speaks (exec targets only). Cases needing a higher
   * {@link ConformanceCase.protocol} are skipped. Absent: every level (native providers).
   */
  readonly protocol?: number | undefined;
  /** Whether a process id (as the session program sees it) is alive. Absent: those checks skip. */
  pidAlive?(name: string, pid: number): Promise<boolean>;
  /** Creates a session on the same backend that this city does not own; resolves to its cleanup. */
  createForeign?(name: string): Promise<() => Promise<void>>;
  /** Releases everything the target created (servers, temp dirs). */
  cleanup?(): Promise<void>;
}

/** What a case may require beyond the mandatory contract. */
export type Requirement = keyof ProviderCapabilities | "pidAlive" | "foreign";

/** Handed to every case. */
export interface CaseContext {
  readonly target: ConformanceTarget;
  readonly provider: Provider;
  /** A fresh session name, never a prefix of another (the stem, if given, is added before a unique suffix). */
  newName(stem?: string): string;
  /** `target.makeConfig`, with the session stopped after the case. */
  config(command: string, extra?: Partial<StartConfig>): Promise<StartConfig>;
  /** Starts `name` and registers its cleanup. */
  start(name: string, config: StartConfig): Promise<void>;
  /** A local temp dir removed after the case. */
  localDir(): Promise<string>;
  /** Registers cleanup run after the case, even on failure (last in, first out). */
  defer(fn: () => Promise<unknown> | unknown): void;
  /** Polls `fn` until it returns a value other than `undefined`/`false`, or throws the last failure. */
  eventually<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  /** Reads a session file. */
  read(name: string, config: StartConfig, rel: string): Promise<string | undefined>;
  /** Milliseconds scaled by the target's time scale. */
  ms(n: number): number;
}

/** One conformance case. */
export interface ConformanceCase {
  /** Stable id (`group.behaviour`), usable with `--only`. */
  readonly id: string;
  /** `"<method>: <behaviour>"`. */
  readonly title: string;
  readonly requires?: readonly Requirement[];
  /**
   * The exec protocol level the case needs: 1 (the default) = what a v1 script promises,
   * with what gc does for v1 (prompt in `command`, post-start check, framed metadata…);
   * 2 = behaviour only a v2 script can give. Native providers run every level.
   */
  readonly protocol?: 1 | 2;
  run(ctx: CaseContext): Promise<void>;
}

/** Outcome of one case. */
export interface CaseResult {
  readonly id: string;
  readonly name: string;
  readonly status: "passed" | "failed" | "skipped";
  readonly error?: string | undefined;
  readonly durationMs: number;
}

/** Outcome of a run; the shape of `gc conformance --json`. */
export interface ConformanceReport {
  readonly provider: string;
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly cases: readonly CaseResult[];
}

/** Options for {@link runConformance}. */
export interface RunOptions {
  /** Only cases whose id or title contains this text (or matches this regex). */
  readonly only?: string | RegExp | undefined;
  /** Called as each case finishes. */
  readonly onResult?: ((r: CaseResult) => void) | undefined;
  /** Per-case deadline before scaling. Default 60 s. */
  readonly caseTimeoutMs?: number | undefined;
  /** Cases run at once. Default 2. */
  readonly concurrency?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

let counter = 0;

/**
 * Thrown (by `ctx.read` when the target cannot observe session files) to end a case as
 * skipped with a reason instead of failed.
 */
export class CaseSkip extends Error {
  override readonly name = "CaseSkip";
}

/** Why `c` cannot run on `target`, or `undefined`. */
export function skipReason(c: ConformanceCase, target: ConformanceTarget): string | undefined {
  const caps = target.provider.capabilities();
  const level = c.protocol ?? 1;
  if (target.protocol !== undefined && level > target.protocol) {
    return `requires exec protocol v${level} (the script speaks v${target.protocol})`;
  }
  for (const r of c.requires ?? []) {
    if (r === "pidAlive" ? !target.pidAlive : r === "foreign" ? !target.createForeign : !caps[r]) {
      return `requires ${r}`;
    }
  }
  return undefined;
}

/** True when `c` is selected by `only`. */
export function matches(c: ConformanceCase, only: string | RegExp | undefined): boolean {
  if (only === undefined) return true;
  if (typeof only === "string") return c.id.includes(only) || c.title.includes(only);
  return only.test(c.id) || only.test(c.title);
}

/**
 * Runs one case with fresh names, a deadline and full cleanup. Never throws: failures are
 * reported in the result.
 */
export async function runCase(
  c: ConformanceCase,
  target: ConformanceTarget,
  opts: { caseTimeoutMs?: number | undefined } = {},
): Promise<CaseResult> {
  const started = Date.now();
  const skip = skipReason(c, target);
  if (skip) return { id: c.id, name: c.title, status: "skipped", error: skip, durationMs: 0 };
  const scale = target.timeScale ?? 1;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  const ctx: CaseContext = {
    target,
    provider: target.provider,
    newName(stem = "s") {
      counter++;
      return `${target.namePrefix}${String(counter).padStart(4, "0")}${stem}`;
    },
    async config(command, extra) {
      return target.makeConfig(command, extra);
    },
    async start(name, config) {
      cleanups.push(() => target.provider.stop(name));
      await target.provider.start(name, config);
    },
    async localDir() {
      const d = await mkdtemp(join(tmpdir(), "gc-conf-"));
      cleanups.push(() => rm(d, { recursive: true, force: true }));
      return d;
    },
    defer(fn) {
      cleanups.push(fn);
    },
    async eventually(what, fn, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs * scale;
      let last: unknown;
      for (;;) {
        try {
          const v = await fn();
          if (v !== undefined && v !== false) return v as never;
          last = undefined;
        } catch (e) {
          if (e instanceof CaseSkip) throw e;
          last = e;
        }
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}${last ? `: ${describeError(last)}` : ""}`);
        }
        await sleep(50);
      }
    },
    async read(name, config, rel) {
      if (!target.readFile) {
        throw new CaseSkip(`reads session files: ${target.noFilesReason ?? "the target cannot read them"}`);
      }
      return target.readFile(name, config, rel);
    },
    ms: (n) => n * scale,
  };
  let error: string | undefined;
  let skipped: string | undefined;
  const timeoutMs = (opts.caseTimeoutMs ?? 60_000) * scale;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      c.run(ctx),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`case timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (e) {
    if (e instanceof CaseSkip) skipped = e.message;
    else error = describeError(e);
  } finally {
    clearTimeout(timer);
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (e) {
        error ??= `cleanup failed: ${describeError(e)}`;
      }
    }
  }
  if (skipped !== undefined && error === undefined) {
    return { id: c.id, name: c.title, status: "skipped", error: skipped, durationMs: Date.now() - started };
  }
  return {
    id: c.id,
    name: c.title,
    status: error === undefined ? "passed" : "failed",
    error,
    durationMs: Date.now() - started,
  };
}

/** Runs the selected cases against `target` (with bounded concurrency) and reports. */
export async function runConformance(
  target: ConformanceTarget,
  cases: readonly ConformanceCase[],
  opts: RunOptions = {},
): Promise<ConformanceReport> {
  const selected = cases.filter((c) => matches(c, opts.only));
  const results: CaseResult[] = new Array(selected.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < selected.length) {
      opts.signal?.throwIfAborted();
      const i = next++;
      const r = await runCase(selected[i]!, target, opts);
      results[i] = r;
      opts.onResult?.(r);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 2) }, worker));
  return {
    provider: target.label,
    passed: results.filter((r) => r.status === "passed").length,
    failed: results.filter((r) => r.status === "failed").length,
    skipped: results.filter((r) => r.status === "skipped").length,
    cases: results,
  };
}

/** `readFile` for targets whose work dirs are local directories. */
export async function readLocalFile(dir: string, rel: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, rel), "utf8");
  } catch {
    return undefined;
  }
}
