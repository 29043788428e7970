/**
 * Printing of reconcile passes: one run here (`gc start --once`, `gc reconcile` without a
 * controller, every `--dry-run`) or the controller's, streamed (internal/controller/pass.ts).
 */
import type { City } from "../controller/city.js";
import { findController } from "../controller/controller.js";
import { followControllerPass, runOnePass } from "../controller/pass.js";
import {
  massStopText,
  progressLine,
  summarizeTick,
  summaryLine,
  type TickSummary,
} from "../reconcile/summary.js";
import { EXIT } from "./exit.js";

/** Where a pass is reported: the CLI's command context, or the dashboard's. */
export interface PassOutput {
  /** Print one JSON document instead of lines. */
  readonly json: boolean;
  /** Cancels the pass (Ctrl-C). */
  readonly signal: AbortSignal;
  out(line: string): void;
  err(line: string): void;
}

/** Runs one pass here and prints progress and the summary (or the plan, for a dry run). */
export async function runPassHere(
  ctx: PassOutput,
  city: City,
  opts: { dryRun: boolean; allowMassStop?: boolean },
): Promise<number> {
  const report = await runOnePass(city, {
    dryRun: opts.dryRun,
    allowMassStop: opts.allowMassStop === true,
    signal: ctx.signal,
    onProgress: (e) => {
      if (!ctx.json && e.phase !== "begin") ctx.out(progressLine(e));
    },
  });
  const summary = summarizeTick(report);
  if (opts.dryRun) {
    if (ctx.json) {
      ctx.out(
        JSON.stringify(
          { dryRun: true, actions: report.plan.actions, configError: summary.configError ?? null },
          null,
          2,
        ),
      );
      return summary.configError ? 2 : 0;
    }
    if (summary.configError) ctx.err(summary.configError);
    if (summary.lines.length === 0) ctx.out("nothing to do: in sync");
    for (const l of summary.lines) ctx.out(`would ${l}`);
    return summary.configError ? 2 : 0;
  }
  return reportSummary(ctx, summary);
}

/** Streams a controller pass (progress lines, then the summary). Resolves the summary. */
export async function watchControllerPass(
  ctx: PassOutput,
  city: City,
  poke: boolean,
  allowMassStop = false,
): Promise<TickSummary | undefined> {
  return followControllerPass(city.stateDir, {
    poke,
    allowMassStop,
    signal: ctx.signal,
    onProgress: (e) => {
      if (!ctx.json && e.phase !== "begin") ctx.out(progressLine(e));
    },
  });
}

/**
 * Prints a summary (JSON or text); resolves the exit code: 1 when an action failed or the
 * mass-stop guard kept the city file from being applied.
 */
export function reportSummary(
  ctx: PassOutput,
  s: TickSummary | undefined,
  extra: Record<string, unknown> = {},
): number {
  if (ctx.json) {
    ctx.out(JSON.stringify({ ...extra, summary: s ?? null }, null, 2));
  } else if (s) {
    if (s.configError)
      ctx.err(`config error (last good config kept, nothing touched for it):\n${s.configError}`);
    if (s.massStop) ctx.err(massStopText(s.massStop));
    for (const o of s.observeErrors) ctx.err(`cannot observe provider ${o.provider}: ${o.error}`);
    for (const f of s.failed) ctx.err(`${f.action} ${f.name} failed: ${f.error}`);
    // What is waiting, and for what (backoff, held, a provider not observed…).
    for (const l of s.lines) if (l.startsWith("wait ")) ctx.out(`wait     ${l.slice(5)}`);
    ctx.out(summaryLine(s));
  }
  // A pass in which an action failed, that did not apply the file, or that could not observe
  // a provider (its sessions were neither started nor checked) is a failed operation: exit 1,
  // also for the background `gc start` whose controller keeps running and retrying.
  if (ctx.signal.aborted) return EXIT.cancelled; // Ctrl-C: the pass was cut short
  return s && (s.failed.length > 0 || s.massStop || s.observeErrors.length > 0) ? EXIT.failed : EXIT.ok;
}

/**
 * One pass now: through the running controller (poked, its pass streamed) or, without one,
 * in this process. Resolves the exit code of {@link reportSummary}.
 */
export async function reconcileNow(
  ctx: PassOutput,
  city: City,
  opts: { allowMassStop?: boolean } = {},
): Promise<number> {
  const allow = opts.allowMassStop === true;
  const info = await findController(city.stateDir);
  if (info.running) {
    return reportSummary(ctx, await watchControllerPass(ctx, city, true, allow), {
      controller: { pid: info.pid },
    });
  }
  return runPassHere(ctx, city, { dryRun: false, allowMassStop: allow });
}
