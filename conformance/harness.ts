/**
 * The conformance harness: the runner shared by vitest and `gc conformance`. What a provider
 * under test supplies ({@link ConformanceTarget}) and what each case receives
 * ({@link CaseContext}) are in cases/case.ts, re-exported here. Cases are data; the runner
 * owns names, cleanup and timeouts.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../internal/base/errors.js";
import { type CaseContext, CaseSkip, type ConformanceCase, type ConformanceTarget } from "./cases/case.js";

export {
  type CaseContext,
  CaseSkip,
  type ConformanceCase,
  type ConformanceTarget,
  type Requirement,
} from "./cases/case.js";

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
