/**
 * `gc run SESSION PROMPT`: one turn — confirm the session is idle, deliver the prompt as a
 * verified nudge, wait until the session is idle again, and report
 * `{status, output, durationMs}`. Ctrl-C or `--timeout` interrupts the agent (not the
 * session) and reports `cancelled`/`timeout` with the partial output; the next run continues
 * the same session. Runs on one session never overlap: the per-session lock is taken
 * without waiting and a second run is refused with who holds it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { formatDuration } from "../../../internal/base/duration.js";
import { describeError, isGcError, UsageError } from "../../../internal/base/errors.js";
import { deltaSince, screenLines } from "../../../internal/controller/observe.js";
import { pokeController } from "../../../internal/operate/actions.js";
import { lockSession, type Target } from "../../../internal/operate/target.js";
import {
  type IdleProbe,
  type IdleProbeOptions,
  looksLikePromptLine,
  probeIdle,
} from "../../../internal/reconcile/nudge-delivery.js";
import { recordTurns } from "../../../internal/reconcile/turns.js";
import { showsNewMarker } from "../../../internal/runtime/agent-screens.js";
import {
  interruptTurn,
  supportsInteraction,
  supportsTurns,
  type TurnProvider,
} from "../../../internal/runtime/provider.js";
import type { SessionLock } from "../../../internal/session/store.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";
import { durationFlag, humanDuration, printJson, readTextArg, withTarget } from "../operate.js";

const USAGE = `Usage: gc run SESSION PROMPT... [--timeout DUR] [--idle-wait DUR] [--json]
       gc run SESSION - ...            (reads the prompt from stdin)

One turn: waits (at most --idle-wait, default 30s) for the session to be idle, delivers
PROMPT and submits it, then waits until the session is idle again. Reports
{status, output, durationMs}; output is what the session printed during the turn, durationMs
the turn's time from the prompt's delivery (the idle wait before it is not counted).
  completed   the turn ended (whatever the agent answered, errors included)
  timeout     --timeout passed: the agent was interrupted (Ctrl-C), partial output kept
  cancelled   you pressed Ctrl-C: the agent was interrupted, partial output kept
  error       the turn could not run (session not running or busy, delivery failed, the
              session ended during the turn)
The session itself keeps running; the next gc run continues it. Only one control operation
runs on a session at a time: a second gc run is refused while one is in progress.

Exit: 0 completed · 4 timeout · 130 cancelled · 1 error · 2 usage · 3 unknown session.`;

/** Default bound on waiting for the session to be idle before the prompt is delivered. */
const DEFAULT_IDLE_WAIT_MS = 30_000;
/** After an interrupt: how long to wait for the agent to settle and show its prompt. */
const SETTLE_AFTER_INTERRUPT_MS = 3_000;
/** Bound on the interrupt call itself. */
const INTERRUPT_TIMEOUT_MS = 5_000;

/** The report of one turn. */
export interface RunReport {
  readonly session: string;
  readonly status: "completed" | "cancelled" | "timeout" | "error";
  readonly output: string;
  readonly durationMs: number;
  readonly reason?: string | undefined;
  /** Structured turns (ACP): the turn's id, stop reason and tool calls. */
  readonly turn?: number | undefined;
  readonly stopReason?: string | undefined;
  readonly toolCalls?: readonly { id: string; title: string; kind: string; status: string }[] | undefined;
}

class TurnTimeout extends Error {
  override readonly name = "TurnTimeout";
}

export const command = defineCommand({
  usage: USAGE,
  options: {
    timeout: { type: "string" },
    "idle-wait": { type: "string" },
  },
  async run(ctx, { positionals, values }) {
    const json = ctx.json;
    if (positionals.length < 2) throw new UsageError(`gc run needs a session and a prompt\n\n${USAGE}`);
    const timeoutMs = values.timeout === undefined ? undefined : durationFlag("timeout", values.timeout, 0);
    if (timeoutMs === 0) throw new UsageError("--timeout must be more than 0");
    const idleWaitMs = durationFlag("idle-wait", values["idle-wait"], DEFAULT_IDLE_WAIT_MS);
    const [name, ...words] = positionals as [string, ...string[]];
    const prompt = words.length === 1 && words[0] === "-" ? await readTextArg(ctx) : words.join(" ");
    if (prompt.trim() === "") throw new UsageError("the prompt is empty");
    return withTarget(ctx, name, async (t) => {
      const report = await turn(ctx, t, prompt, idleWaitMs, timeoutMs);
      await t.store
        .appendEvent({
          session: t.name,
          type: "run.finished",
          payload: {
            status: report.status,
            durationMs: report.durationMs,
            ...(report.reason ? { reason: report.reason } : {}),
          },
        })
        .catch(() => undefined);
      if (json) printJson(ctx, report);
      else {
        if (report.output) ctx.stdout.write(`${report.output}\n`);
        const took = report.durationMs > 0 ? ` in ${humanDuration(report.durationMs)}` : "";
        ctx.err(`gc run: ${report.status}${took}${report.reason ? `: ${report.reason}` : ""}`);
      }
      switch (report.status) {
        case "completed":
          return EXIT.ok;
        case "timeout":
          return EXIT.stillWorking;
        case "cancelled":
          return EXIT.cancelled;
        default:
          return EXIT.failed;
      }
    });
  },
});

/**
 * How to tell the turn has ended, learned from the idle screen before it: a program whose
 * idle screen ends with its prompt (a REPL, a shell) is done when that bare prompt is the
 * last line again — the declared ready prompt, or for an undeclared one the idle line itself
 * when it looks like a prompt (a shell's prompt may change with its cwd, so any prompt-like
 * last line that stays put counts too). Anything else (full-screen agents whose prompt sits
 * in a box above a status line) is left to the provider's idle heuristic. Pure.
 */
export function turnIdleMode(
  declared: string | undefined,
  idleLastLine: string,
): Pick<IdleProbeOptions, "readyPromptPrefix" | "promptOnly" | "promptLike"> {
  const prompt = declared?.trimEnd() || undefined;
  if (prompt !== undefined) {
    return idleLastLine === prompt ? { readyPromptPrefix: prompt, promptOnly: true } : {};
  }
  return looksLikePromptLine(idleLastLine)
    ? { readyPromptPrefix: idleLastLine, promptOnly: true, promptLike: true }
    : {};
}

/** Runs one turn under the session lock; always resolves a report (rejects only on store failure). */
async function turn(
  ctx: CommandContext,
  t: Target,
  prompt: string,
  idleWaitMs: number,
  timeoutMs: number | undefined,
): Promise<RunReport> {
  const error = (reason: string, output = "", durationMs = 0): RunReport => ({
    session: t.name,
    status: "error",
    output,
    durationMs,
    reason,
  });
  if (ctx.signal.aborted) return { ...error("cancelled before it started"), status: "cancelled" };
  if (!(await t.provider.isRunning(t.name, { signal: ctx.signal }))) {
    return error(
      `session ${t.name} is not running${t.session.record ? ` (state: ${t.session.record.state})` : ""}`,
    );
  }
  let lock: SessionLock;
  try {
    lock = await lockSession(t, "gc run");
  } catch (e) {
    if (isGcError(e, "GC_LOCKED")) return error(`${describeError(e)}; try again when it has finished`);
    throw e;
  }
  let report: RunReport;
  try {
    report = supportsTurns(t.provider)
      ? await structured(ctx, t, t.provider, prompt, timeoutMs, error)
      : await locked(ctx, t, prompt, idleWaitMs, timeoutMs, error);
  } finally {
    await lock.release();
  }
  // The controller left the session alone while this held it (e.g. a crash under the turn):
  // after a failed turn, ask it for a pass now rather than at its next interval.
  if (report.status === "error") await pokeController(t.city);
  return report;
}

/**
 * One turn on a provider with structured turns (ACP): the prompt becomes a turn (queued
 * behind a running one), the turn's own end is awaited (its stop reason, not a screen
 * heuristic), and the report carries the agent's reply. Every finished turn of the session
 * is recorded as a `turn.finished` event before returning.
 */
async function structured(
  ctx: CommandContext,
  t: Target,
  provider: TurnProvider,
  prompt: string,
  timeoutMs: number | undefined,
  error: (reason: string, output?: string, durationMs?: number) => RunReport,
): Promise<RunReport> {
  const timer = new AbortController();
  const clock =
    timeoutMs === undefined ? undefined : setTimeout(() => timer.abort(new TurnTimeout()), timeoutMs);
  const signal = AbortSignal.any([ctx.signal, timer.signal]);
  const startedAt = Date.now();
  const elapsed = () => Date.now() - startedAt;
  let id: number;
  try {
    id = await provider.prompt(t.name, prompt, { signal });
  } catch (e) {
    clearTimeout(clock);
    if (ctx.signal.aborted)
      return { ...error("cancelled before the prompt was delivered"), status: "cancelled" };
    return error(describeError(e));
  }
  const report = (
    turn: Awaited<ReturnType<TurnProvider["waitTurn"]>>,
    extra: Partial<RunReport> = {},
  ): RunReport => ({
    session: t.name,
    status: turn?.error ? "error" : "completed",
    output: turn?.reply ?? "",
    durationMs: elapsed(),
    turn: id,
    ...(turn?.stopReason ? { stopReason: turn.stopReason } : {}),
    ...(turn?.error ? { reason: turn.error } : {}),
    toolCalls: turn?.toolCalls ?? [],
    ...extra,
  });
  try {
    let announced = false;
    for (;;) {
      const done = await provider.waitTurn(t.name, id, 1_000, { signal });
      if (done) return report(done);
      if (!announced && supportsInteraction(t.provider)) {
        const p = await t.provider.pending(t.name, { signal }).catch(() => undefined);
        if (p) {
          announced = true;
          ctx.err(
            `gc run: ${t.name} is waiting for input${p.prompt ? `: ${p.prompt}` : ""} ` +
              `(the approval policy or \`gc session respond ${t.name} ACTION\` answers it)`,
          );
        }
      }
    }
  } catch (e) {
    if (!signal.aborted) return error(describeError(e), "", elapsed());
    // Cancelled or timed out: session/cancel, then report the turn as the agent ended it.
    const status = ctx.signal.aborted ? "cancelled" : "timeout";
    const durationMs = elapsed();
    await t.provider
      .interrupt(t.name, { signal: AbortSignal.timeout(INTERRUPT_TIMEOUT_MS) })
      .catch(() => undefined);
    const last = await provider.waitTurn(t.name, id, SETTLE_AFTER_INTERRUPT_MS).catch(() => undefined);
    return report(last, {
      status,
      durationMs,
      reason:
        status === "timeout"
          ? `no answer within ${formatDuration(timeoutMs ?? 0)}; the turn was cancelled (session/cancel)`
          : "interrupted by the operator; the turn was cancelled (session/cancel)",
    });
  } finally {
    clearTimeout(clock);
    await recordTurns(t.provider as typeof t.provider & TurnProvider, t.store, t.name).catch(() => undefined);
  }
}

async function locked(
  ctx: CommandContext,
  t: Target,
  prompt: string,
  idleWaitMs: number,
  timeoutMs: number | undefined,
  error: (reason: string, output?: string, durationMs?: number) => RunReport,
): Promise<RunReport> {
  const readyPrompt = t.config?.readyPromptPrefix;
  let before: IdleProbe;
  try {
    before = await probeIdle(t.provider, t.name, {
      readyPromptPrefix: readyPrompt,
      busyMarkers: t.config?.busyMarkers,
      readyMarkers: t.config?.readyMarkers,
      boundMs: idleWaitMs,
      signal: ctx.signal,
    });
  } catch (e) {
    if (ctx.signal.aborted)
      return { ...error("cancelled before the prompt was delivered"), status: "cancelled" };
    return error(describeError(e));
  }
  if (before === "gone") return error(`session ${t.name} is not running`);
  if (before === "waiting-for-input") {
    return error(
      `session ${t.name} is waiting for input; answer it with \`gc session respond ${t.name} ACTION\``,
    );
  }
  if (before === "busy")
    return error(`session ${t.name} is busy (not idle within ${formatDuration(idleWaitMs)})`);

  const baseline = screenLines(await t.provider.peek(t.name, 0, { signal: ctx.signal }));
  const turn = turnIdleMode(readyPrompt, baseline.at(-1) ?? "");
  // The turn is over only once it visibly happened: the prompt was echoed and a fresh prompt
  // follows (prompt-driven programs), or at least the screen changed (others); for a program
  // that prints a line when a turn ends (preset `turn_end_markers`), once a new one shows.
  const minLines = turn.promptOnly ? 2 : 1;
  const endMarkers = t.config?.turnEndMarkers;
  const baselineText = baseline.join("\n");
  const progressed = (screen: string) => {
    const d = deltaSince(baseline, screenLines(screen));
    return d.gap || d.lines.length >= minLines;
  };
  const ended = (screen: string) =>
    progressed(screen) &&
    (endMarkers === undefined || endMarkers.length === 0 || showsNewMarker(baselineText, screen, endMarkers));
  const outputNow = async (): Promise<string> => {
    try {
      return deltaSince(baseline, screenLines(await t.provider.peek(t.name, 0))).lines.join("\n");
    } catch {
      return "";
    }
  };

  const timer = new AbortController();
  const clock =
    timeoutMs === undefined ? undefined : setTimeout(() => timer.abort(new TurnTimeout()), timeoutMs);
  const signal = AbortSignal.any([ctx.signal, timer.signal]);
  const startedAt = Date.now();
  const elapsed = () => Date.now() - startedAt;
  try {
    await t.provider.nudge(t.name, prompt, { signal, multiline: t.config?.multiline });
    let announced = false;
    for (;;) {
      const r = await probeIdle(t.provider, t.name, {
        ...turn,
        busyMarkers: t.config?.busyMarkers,
        readyMarkers: t.config?.readyMarkers,
        boundMs: 60_000,
        accept: ended,
        signal,
      });
      if (r === "idle")
        return { session: t.name, status: "completed", output: await outputNow(), durationMs: elapsed() };
      if (r === "gone") return error(`session ${t.name} ended during the turn`, await outputNow(), elapsed());
      if (r === "waiting-for-input" && !announced) {
        announced = true;
        const p = supportsInteraction(t.provider)
          ? await t.provider.pending(t.name, { signal }).catch(() => undefined)
          : undefined;
        ctx.err(
          `gc run: ${t.name} is waiting for input${p?.prompt ? `: ${p.prompt}` : ""} ` +
            `(the approval policy or \`gc session respond ${t.name} ACTION\` answers it)`,
        );
      }
      if (r === "waiting-for-input") await sleep(500, undefined, { signal });
    }
  } catch (e) {
    if (!signal.aborted) return error(describeError(e), await outputNow(), elapsed());
    // Cancelled or timed out while the turn runs: interrupt the agent with its own interrupt
    // key (Escape where Ctrl-C would quit it), let it settle, report.
    const status = ctx.signal.aborted ? "cancelled" : "timeout";
    const durationMs = elapsed();
    await interruptTurn(t.provider, t.name, t.config?.interruptKeys, {
      busyMarkers: t.config?.busyMarkers,
      signal: AbortSignal.timeout(INTERRUPT_TIMEOUT_MS),
    }).catch(() => undefined);
    await probeIdle(t.provider, t.name, {
      ...turn,
      boundMs: SETTLE_AFTER_INTERRUPT_MS,
      accept: progressed,
    }).catch(() => undefined);
    // An agent that put the interrupted prompt back into its input box: empty it, or the
    // next nudge is typed after it.
    const clear = t.config?.clearInputKeys ?? [];
    if (clear.length > 0)
      await t.provider
        .sendKeys(t.name, clear, { signal: AbortSignal.timeout(INTERRUPT_TIMEOUT_MS) })
        .catch(() => undefined);
    return {
      session: t.name,
      status,
      output: await outputNow(),
      durationMs,
      reason:
        status === "timeout"
          ? `no answer within ${formatDuration(timeoutMs ?? 0)}; the agent was interrupted`
          : "interrupted by the operator; the agent was interrupted",
    };
  } finally {
    clearTimeout(clock);
  }
}
