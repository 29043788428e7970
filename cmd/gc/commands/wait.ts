/**
 * `gc wait SESSION (--idle | --working | --needs-input | --match REGEX | --state STATE | --exit)`: blocks until the
 * condition holds, recording a durable wait in the store, and reports what the session
 * printed since this observer's previous observation. Observing only reads: it never types
 * into, pauses, resumes or restarts the session, and many waits may run on one session.
 */
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { formatDuration } from "../../../internal/base/duration.js";
import { describeError, isGcError, UsageError } from "../../../internal/base/errors.js";
import {
  checkObserverId,
  DEFAULT_OBSERVER,
  loadCursor,
  observe,
  saveCursor,
  screenLines,
} from "../../../internal/controller/observe.js";
import { resolveSession } from "../../../internal/controller/sessions.js";
import type { Target } from "../../../internal/operate/target.js";
import { probeIdle } from "../../../internal/reconcile/nudge-delivery.js";
import { lookSessions, looksAtWork } from "../../../internal/reconcile/work.js";
import { supportsExitStatus } from "../../../internal/runtime/provider.js";
import { classifyLook, type ObservedWork } from "../../../internal/runtime/screen/work.js";
import { isLifecycleState, LIFECYCLE_STATES } from "../../../internal/session/lifecycle.js";
import type { JsonObject, Wait } from "../../../internal/session/store.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";
import { durationFlag, printJson, withTarget } from "../operate.js";

const USAGE = `Usage: gc wait SESSION (--idle | --working | --needs-input | --match REGEX | --state STATE | --exit)
               [--timeout DUR] [--observer ID] [--json]
       gc wait list [SESSION] [--all] [--json]

Blocks until the condition holds:
  --idle          the session is idle (at its empty prompt / quiet; never while it waits for input)
  --working       its agent is working (a busy marker, or printing; work state "working")
  --needs-input   its agent waits on a question (approval prompt, dialog, menu): the result
                  carries the question
  --match REGEX   the session printed a line matching REGEX (JavaScript syntax) since this
                  observer's previous observation
  --state STATE   the session's lifecycle state is STATE (${LIFECYCLE_STATES.join(", ")})
  --exit          the session's program has ended

The result is {status, output, cursor}: output is what the session printed since this
observer's (--observer, default "${DEFAULT_OBSERVER}") previous observation; cursor counts the lines
this observer has been shown. Each wait is recorded in the store (gc wait list).

Exit: 0 completed · 4 still_working (the --timeout passed first) · 5 terminated (the
session ended first) · 1 error · 2 usage · 3 unknown session · 130 interrupted.`;

const POLL_MS = 200;

/** What gc status shows that is not a lifecycle state, and what to wait on instead. */
const STATUS_VIEWS: Readonly<Record<string, string>> = {
  new: "how gc status shows a session never started (wait for pending, starting or running)",
  untracked: "how gc status shows a running session with no record",
  "waiting-for-input":
    "how gc status shows a running session with a question on screen (gc wait --needs-input completes on it; --idle never does)",
};

type Condition =
  | { kind: "idle" }
  | { kind: "working" }
  | { kind: "needs-input" }
  | { kind: "match"; regex: RegExp }
  | { kind: "state"; state: string }
  | { kind: "exit" };

/** The report of one wait. */
export interface WaitResult {
  readonly status: "completed" | "still_working" | "terminated" | "error";
  readonly output: string;
  readonly cursor: number;
  readonly gap: boolean;
  readonly reason?: string | undefined;
  readonly state?: string | undefined;
  readonly exit?: { code: number | null; signal: string | null } | undefined;
  /** `--working` / `--needs-input`: the work seen (internal/runtime/screen/work.ts), with the question. */
  readonly work?: ObservedWork | undefined;
}

export const command = defineCommand({
  usage: USAGE,
  options: {
    idle: { type: "boolean" },
    working: { type: "boolean" },
    "needs-input": { type: "boolean" },
    match: { type: "string" },
    state: { type: "string" },
    exit: { type: "boolean" },
    timeout: { type: "string" },
    observer: { type: "string" },
    all: { type: "boolean" },
  },
  async run(ctx, { positionals, values }) {
    const json = ctx.json;
    if (positionals[0] === "list") return list(ctx, positionals.slice(1), values.all === true, json);
    if (positionals.length !== 1) {
      // `gc wait NAME idle`: the condition given as a word instead of a flag.
      const cond = positionals
        .slice(1)
        .find((p) => ["idle", "working", "needs-input", "match", "state", "exit"].includes(p));
      const hint = cond !== undefined ? ` (a condition is a flag: --${cond})` : "";
      throw new UsageError(`gc wait takes one session${hint}\n\n${USAGE}`);
    }
    const given = [
      values.idle,
      values.working,
      values["needs-input"],
      values.match !== undefined,
      values.state !== undefined,
      values.exit,
    ].filter(Boolean);
    if (given.length !== 1) {
      throw new UsageError(
        `give exactly one of --idle, --working, --needs-input, --match, --state, --exit\n\n${USAGE}`,
      );
    }
    let cond: Condition;
    if (values.match !== undefined) {
      try {
        cond = { kind: "match", regex: new RegExp(values.match, "m") };
      } catch (e) {
        throw new UsageError(`--match: ${describeError(e)}`);
      }
    } else if (values.state !== undefined) {
      if (!isLifecycleState(values.state)) {
        // gc status also shows views that are not lifecycle states; say what to wait on instead.
        const view = STATUS_VIEWS[values.state];
        throw new UsageError(
          `--state: ${view ? `${JSON.stringify(values.state)} is ${view}, not a lifecycle state` : `unknown state ${JSON.stringify(values.state)}`} (${LIFECYCLE_STATES.join(", ")})`,
        );
      }
      cond = { kind: "state", state: values.state };
    } else if (values.working) cond = { kind: "working" };
    else if (values["needs-input"]) cond = { kind: "needs-input" };
    else cond = values.idle ? { kind: "idle" } : { kind: "exit" };
    const timeoutMs = values.timeout === undefined ? undefined : durationFlag("timeout", values.timeout, 0);
    const observer = values.observer ?? DEFAULT_OBSERVER;
    checkObserverId(observer);
    return withTarget(ctx, positionals[0]!, async (t) => {
      const condition: JsonObject = {
        ...(cond.kind === "match" ? { regex: cond.regex.source } : {}),
        ...(cond.kind === "state" ? { state: cond.state } : {}),
        observer,
        pid: process.pid,
        host: hostname(),
      };
      // The incarnation waited on: a session killed, lost or restarted from here on has ended
      // for this wait, even when the controller already runs it again.
      const generation = (await t.store.get(t.name))?.generation;
      const startedAt = Date.now();
      const w = await t.store.createWait({
        session: t.name,
        kind: cond.kind,
        condition,
        note: `gc wait --${cond.kind} (pid ${process.pid})`,
        expiresAt: timeoutMs === undefined ? null : startedAt + timeoutMs,
      });
      let result: WaitResult;
      try {
        result = await waitFor(ctx, t, cond, observer, timeoutMs, generation);
      } catch (e) {
        if (ctx.signal.aborted) {
          await t.store.cancelWait(w.id, "interrupted").catch(() => undefined);
          // Reported like every interrupted command (main.ts): a JSON error under --json.
          throw ctx.signal.reason;
        }
        result = { status: "error", output: "", cursor: 0, gap: false, reason: describeError(e) };
      }
      const stored = {
        status: result.status,
        cursor: result.cursor,
        ...(result.reason ? { reason: result.reason } : {}),
      };
      if (result.status === "still_working") {
        await t.store.expireWait(w.id, `timeout after ${formatDuration(timeoutMs ?? 0)}: still working`);
      } else if (result.status === "error") {
        await t.store.cancelWait(w.id, result.reason ?? "error");
      } else {
        await t.store.resolveWait(w.id, stored);
      }
      if (json) {
        printJson(ctx, { session: t.name, waitId: w.id, kind: cond.kind, observer, ...result });
      } else {
        if (result.output) ctx.stdout.write(`${result.output}\n`);
        const extra =
          result.status === "still_working"
            ? ` after ${formatDuration(timeoutMs ?? 0)}`
            : result.reason
              ? `: ${result.reason}`
              : "";
        ctx.err(`gc wait: ${result.status}${extra} (cursor ${result.cursor})`);
      }
      switch (result.status) {
        case "completed":
          return EXIT.ok;
        case "still_working":
          return EXIT.stillWorking;
        case "terminated":
          return EXIT.terminated;
        default:
          return EXIT.failed;
      }
    });
  },
});

/** Polls until the condition holds, the session ends, or the timeout passes. */
async function waitFor(
  ctx: CommandContext,
  t: Target,
  cond: Condition,
  observer: string,
  timeoutMs: number | undefined,
  generation: number | undefined,
): Promise<WaitResult> {
  const signal = ctx.signal;
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
  const cursor = await loadCursor(t.city.stateDir, t.name, observer);
  let screen: string[] | undefined;
  const look = async (): Promise<boolean> => {
    try {
      screen = screenLines(await t.provider.peek(t.name, 0, { signal }));
      return true;
    } catch (e) {
      if (isGcError(e, "GC_SESSION_NOT_FOUND")) return false;
      throw e;
    }
  };
  const finish = async (
    status: WaitResult["status"],
    extra: Partial<WaitResult> = {},
  ): Promise<WaitResult> => {
    if (screen === undefined)
      return { status, output: "", cursor: cursor?.offset ?? 0, gap: false, ...extra };
    const { delta, next } = observe(cursor, screen, Date.now());
    // A terminated incarnation's cursor is not kept: its output history is gone (a kill
    // drops every cursor of the session, possibly while this wait is finishing).
    if (status !== "terminated") await saveCursor(t.city.stateDir, t.name, observer, next);
    return { status, output: delta.lines.join("\n"), cursor: next.offset, gap: delta.gap, ...extra };
  };
  const exitInfo = async () => {
    if (!supportsExitStatus(t.provider)) return undefined;
    const e = await t.provider.lastExit(t.name, { signal }).catch(() => undefined);
    return e ? { code: e.code, signal: e.signal } : undefined;
  };
  const sameIncarnation = async () =>
    (await t.provider.isRunning(t.name, { signal })) &&
    (await t.store.get(t.name))?.generation === generation;
  let hadRecord = false;
  // "ended" only for a session this wait saw running; one down from the start never ran here.
  let seenRunning = false;
  let restarted = false;
  const down = () =>
    restarted
      ? "the session ended (the controller has started it again)"
      : seenRunning
        ? "the session ended"
        : "the session is not running";
  for (;;) {
    signal.throwIfAborted();
    const before = screen;
    const up = (await t.provider.isRunning(t.name, { signal })) && (await look());
    // Killed or lost and started again (by the controller) between two polls: the program
    // this wait is on has ended, though a session of that name runs again (whose screen is
    // not this wait's output).
    restarted = up && (await t.store.get(t.name))?.generation !== generation;
    if (restarted) screen = before;
    const running = up && !restarted;
    if (running) seenRunning = true;
    switch (cond.kind) {
      case "exit":
        if (restarted) return finish("completed", { reason: down() });
        if (!running) return finish("completed", { exit: await exitInfo() });
        break;
      case "state": {
        // A session not started yet has no record: wait for the controller to make one
        // (`gc scale` then `gc wait NEW --state running`); a record that goes away ends the wait.
        const rec = await t.store.get(t.name);
        if (rec) hadRecord = true;
        else if (hadRecord) return finish("terminated", { reason: "the session's record was removed" });
        if (rec?.state === cond.state) return finish("completed", { state: rec.state });
        break;
      }
      case "match": {
        if (screen && cond.regex.test(observe(cursor, screen, 0).delta.lines.join("\n"))) {
          return finish("completed");
        }
        if (!running) return finish("terminated", { reason: down(), exit: await exitInfo() });
        break;
      }
      case "working":
      case "needs-input": {
        if (!running) return finish("terminated", { reason: down(), exit: await exitInfo() });
        const look = (await lookSessions(t.provider, [t.name], signal)).get(t.name);
        if (!looksAtWork(look)) break;
        const work = classifyLook(look, { now: Date.now(), rules: t.config });
        if (work.state === cond.kind && (await sameIncarnation())) return finish("completed", { work });
        break;
      }
      case "idle": {
        if (!running) return finish("terminated", { reason: down(), exit: await exitInfo() });
        const left = deadline - Date.now();
        const r = await probeIdle(t.provider, t.name, {
          readyPromptPrefix: t.config?.readyPromptPrefix,
          busyMarkers: t.config?.busyMarkers,
          readyMarkers: t.config?.readyMarkers,
          boundMs: Math.max(1, Math.min(left, 60_000)),
          signal,
        });
        // A session killed or lost during the probe can read as quiet: idle counts only while
        // the same incarnation still runs.
        if (r === "idle" && (await sameIncarnation())) {
          await look();
          return finish("completed");
        }
        if (r === "idle" || r === "gone")
          return finish("terminated", { reason: down(), exit: await exitInfo() });
        break;
      }
    }
    if (Date.now() >= deadline) return finish("still_working");
    await sleep(Math.max(1, Math.min(POLL_MS, deadline - Date.now())), undefined, { signal });
  }
}

function waitView(w: Wait) {
  return {
    id: w.id,
    session: w.session,
    kind: w.kind,
    condition: w.condition,
    state: w.state,
    createdAt: new Date(w.createdAt).toISOString(),
    expiresAt: w.expiresAt === null ? null : new Date(w.expiresAt).toISOString(),
    settledAt: w.settledAt === null ? null : new Date(w.settledAt).toISOString(),
    result: w.result,
    reason: w.reason,
  };
}

async function list(ctx: CommandContext, rest: string[], all: boolean, json: boolean): Promise<number> {
  if (rest.length > 1) throw new UsageError(`gc wait list takes at most one session\n\n${USAGE}`);
  const city = await openCity(ctx);
  try {
    // A name the city does not know is exit 3 with a did-you-mean, not an empty list.
    if (rest[0] !== undefined) await resolveSession(city, rest[0], ctx.signal);
    const store = await city.store();
    const waits = await store.listWaits({
      ...(rest[0] ? { session: rest[0] } : {}),
      ...(all ? {} : { states: ["pending"] as const }),
    });
    const views = waits.map(waitView);
    if (json) {
      printJson(ctx, { waits: views });
      return EXIT.ok;
    }
    if (views.length === 0) {
      ctx.out(all ? "(no waits)" : "(no pending waits)");
      return EXIT.ok;
    }
    for (const v of views) {
      const cond = v.condition && typeof v.condition === "object" ? JSON.stringify(v.condition) : "";
      ctx.out(
        `#${v.id} ${v.session} ${v.kind} ${v.state}${v.reason ? ` (${v.reason})` : ""} since ${v.createdAt} ${cond}`,
      );
    }
    return EXIT.ok;
  } finally {
    await city.close();
  }
}
