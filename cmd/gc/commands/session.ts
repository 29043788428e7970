/**
 * `gc session list | kill | restart | reset | logs | respond`: bookkeeping views and operator
 * actions on single sessions. kill, restart and reset take the session's control lock (they
 * never overlap a `gc run`); restart and reset clear the operator hold set by `gc stop NAME`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  describeError,
  isGcError,
  SessionNotRunningError,
  UsageError,
} from "../../../internal/base/errors.js";
import { deltaSince, screenLines } from "../../../internal/controller/observe.js";
import { collectCity, resolveSession } from "../../../internal/controller/sessions.js";
import {
  forgetIncarnation,
  LIVE_STATES,
  pokeController,
  resetSession,
  respondSession,
  restartSession,
} from "../../../internal/operate/actions.js";
import { reconcileNow } from "../../../internal/operate/pass.js";
import { lockSession, type Target } from "../../../internal/operate/target.js";
import { HOLD_KEY } from "../../../internal/reconcile/plan.js";
import { walkTo } from "../../../internal/reconcile/walk.js";
import { clearRecovery, readRecovery } from "../../../internal/session/recovery.js";
import { casUpdate, type SessionEvent } from "../../../internal/session/store.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";
import { printJson, withTarget } from "../operate.js";
import { formatTable, runningCell } from "../table.js";

const USAGE = `Usage: gc session list [--json]
       gc session kill SESSION [--json]
       gc session restart SESSION [--json]
       gc session reset SESSION [--json]
       gc session reset --all [--json]
       gc session logs SESSION [-f] [-n LINES] [--events] [--json]
       gc session respond SESSION ACTION [--text TEXT] [--request ID] [--json]

  list      every session: state, running, generation, restarts, why, who holds its lock
  kill      stop the session's runtime now; a running controller starts it again at once
            (\`gc stop SESSION\` keeps it down instead)
  restart   stop it and start it fresh now (through the controller when one runs); clears a
            hold from \`gc stop SESSION\`
  reset     forget crash history, quarantine and holds so the controller may start it again
            (a running session keeps running); --all: every session's crash history and
            quarantine, and acknowledges a recovered state.db (holds stay)
  logs      the session's output (scrollback); -f follows new output; --events shows the
            session's event log instead (-f tails it)
  respond   answer the interaction the session waits on (approve, deny, an option label…)

kill, restart and reset are refused while another control operation (gc run…) holds the
session. Exit: 0 ok · 1 failed · 2 usage · 3 unknown session · 130 interrupted (a followed
log ends with Ctrl-C).`;

const SUBCOMMANDS = ["list", "kill", "restart", "reset", "logs", "respond"] as const;

export const command = defineCommand({
  usage: USAGE,
  options: {
    follow: { type: "boolean", short: "f" },
    lines: { type: "string", short: "n" },
    events: { type: "boolean" },
    text: { type: "string" },
    request: { type: "string" },
    all: { type: "boolean" },
  },
  async run(ctx, { positionals, values }) {
    const json = ctx.json;
    const [sub, name, ...rest] = positionals;
    if (!sub || !(SUBCOMMANDS as readonly string[]).includes(sub)) {
      throw new UsageError(`${sub ? `unknown subcommand ${JSON.stringify(sub)}\n\n` : ""}${USAGE}`);
    }
    if (sub === "list") {
      if (name) throw new UsageError("gc session list takes no session");
      return list(ctx, json);
    }
    if (values.all) {
      if (sub !== "reset" || name)
        throw new UsageError(`--all goes with \`gc session reset\` only\n\n${USAGE}`);
      return resetAll(ctx, json);
    }
    if (!name) throw new UsageError(`gc session ${sub} needs a session\n\n${USAGE}`);
    if (sub === "respond") {
      if (rest.length !== 1) throw new UsageError(`gc session respond needs SESSION ACTION\n\n${USAGE}`);
    } else if (rest.length > 0) {
      throw new UsageError(`gc session ${sub} takes one session\n\n${USAGE}`);
    }
    if (sub === "logs" && values.events) {
      const lines = values.lines === undefined ? 0 : Number(values.lines);
      if (!Number.isSafeInteger(lines) || lines < 0) throw new UsageError("-n: expected a whole number ≥ 0");
      try {
        return await withTarget(ctx, name, (t) => eventLog(ctx, t, values.follow === true, lines, json));
      } catch (e) {
        if (!isGcError(e, "GC_SESSION_NOT_FOUND")) throw e;
        return goneEventLog(ctx, name, e, values.follow === true, lines, json);
      }
    }
    if (sub === "kill") {
      try {
        return await withTarget(ctx, name, (t) => kill(ctx, t, json));
      } catch (e) {
        if (!isGcError(e, "GC_STORE")) throw e;
        return killFromTags(ctx, name, describeError(e), json);
      }
    }
    return withTarget(ctx, name, async (t) => {
      switch (sub) {
        case "kill":
          return kill(ctx, t, json);
        case "restart":
          return restart(ctx, t, json);
        case "reset":
          return reset(ctx, t, json);
        case "logs": {
          const lines = values.lines === undefined ? 0 : Number(values.lines);
          if (!Number.isSafeInteger(lines) || lines < 0)
            throw new UsageError("-n: expected a whole number ≥ 0");
          return values.events
            ? eventLog(ctx, t, values.follow === true, lines, json)
            : outputLog(ctx, t, values.follow === true, lines, json);
        }
        default:
          return respond(ctx, t, rest[0]!, values.text, values.request, json);
      }
    });
  },
});

async function list(ctx: CommandContext, json: boolean): Promise<number> {
  const city = await openCity(ctx);
  try {
    const view = await collectCity(city, ctx.signal);
    const store = await city.store();
    const recordOf = new Map(view.records.map((r) => [r.name, r]));
    const rows = await Promise.all(
      view.sessions.map(async (s) => {
        const r = recordOf.get(s.name);
        const holder = await store.lockHolder(s.name);
        return {
          name: s.name,
          agent: s.agent,
          provider: s.provider,
          state: s.state,
          reason: s.reason,
          running: s.running,
          desired: s.desired,
          generation: r?.generation ?? 0,
          restarts: s.restarts,
          drift: s.drift,
          lastActivity: s.lastActivity,
          attached: s.attached,
          held: r?.metadata[HOLD_KEY] ?? null,
          lastError: r?.lastError ?? null,
          lockedBy: holder ? { pid: holder.pid, host: holder.host, purpose: holder.purpose } : null,
          interaction: s.interaction ?? null,
        };
      }),
    );
    // RUNNING is unknown ("?", null in JSON) for sessions of a provider that could not be
    // observed: say why, as gc status does.
    for (const o of view.observeErrors) ctx.err(`cannot observe provider ${o.provider}: ${o.error}`);
    if (json) {
      printJson(ctx, { city: city.name, sessions: rows, observeErrors: view.observeErrors });
      return EXIT.ok;
    }
    if (rows.length === 0) {
      ctx.out("(no sessions)");
      return EXIT.ok;
    }
    const header = ["NAME", "AGENT", "STATE", "RUNNING", "GEN", "RESTARTS", "BUSY", "REASON"];
    const table = rows.map((r) => [
      r.name,
      r.agent,
      r.state,
      runningCell(r.running),
      String(r.generation),
      String(r.restarts),
      r.lockedBy ? `${r.lockedBy.purpose} (pid ${r.lockedBy.pid})` : "-",
      r.reason.replace(/\s+/g, " ").slice(0, 80),
    ]);
    for (const line of formatTable(header, table)) ctx.out(line);
    return EXIT.ok;
  } finally {
    await city.close();
  }
}

async function kill(ctx: CommandContext, t: Target, json: boolean): Promise<number> {
  const lock = await lockSession(t, "gc session kill");
  let wasRunning: boolean;
  try {
    wasRunning = await t.provider.isRunning(t.name, { signal: ctx.signal });
    await t.provider.stop(t.name, { signal: ctx.signal });
    const rec = await t.store.get(t.name);
    if (rec && LIVE_STATES.includes(rec.state)) {
      await walkTo(t.store, t.name, "stopped", "killed by operator (gc session kill)", { pending: null });
    }
    await forgetIncarnation(t);
    await t.store.appendEvent({ session: t.name, type: "session.killed", payload: { wasRunning } });
  } finally {
    await lock.release();
  }
  // Released first: a pass does nothing to a session an operator's command holds.
  const controller = await pokeController(t.city);
  if (json) printJson(ctx, { session: t.name, killed: true, wasRunning, controller });
  else if (!wasRunning) ctx.out(`${t.name} was not running`);
  else if (controller)
    ctx.out(`killed ${t.name}; the controller starts it again now (\`gc stop ${t.name}\` keeps it down)`);
  else ctx.out(`killed ${t.name}; no controller runs: \`gc start\` starts it again`);
  return EXIT.ok;
}

/** `gc session kill` when the store is unusable: found by the city file and runtime tags, no bookkeeping. */
async function killFromTags(
  ctx: CommandContext,
  name: string,
  problem: string,
  json: boolean,
): Promise<number> {
  ctx.err(`gc: the session store is unusable (${problem}); killing ${name} from runtime tags only`);
  const city = await openCity(ctx);
  try {
    const s = await resolveSession(city, name, ctx.signal);
    const provider = await city.providerFor(s.provider);
    const wasRunning = await provider.isRunning(s.name, { signal: ctx.signal });
    await provider.stop(s.name, { signal: ctx.signal });
    if (json) printJson(ctx, { session: s.name, killed: true, wasRunning, bookkeeping: false });
    else ctx.out(wasRunning ? `killed ${s.name}` : `${s.name} was not running`);
    return EXIT.ok;
  } finally {
    await city.close();
  }
}

/** Runs a pass (through the controller when one runs) so the reconciler acts now. */
async function passNow(ctx: CommandContext, t: Target, json: boolean): Promise<void> {
  const quiet: CommandContext = { ...ctx, json: true, out: () => undefined };
  // The outcome is judged by the caller from the session itself, not from the pass summary.
  await reconcileNow(json ? quiet : ctx, t.city);
}

async function restart(ctx: CommandContext, t: Target, json: boolean): Promise<number> {
  const r = await restartSession(t, () => passNow(ctx, t, json), ctx.signal);
  if (!r) {
    ctx.err(`gc: ${t.name} is not declared in the city file, so it cannot be started again`);
    return EXIT.failed;
  }
  if (json) printJson(ctx, { session: t.name, restarted: r.running, state: r.state });
  else if (r.running) ctx.out(`restarted ${t.name} (generation ${r.generation ?? "?"})`);
  else ctx.err(`gc: ${t.name} did not come back up: ${r.why ?? "unknown"}`);
  return r.running ? EXIT.ok : EXIT.failed;
}

async function reset(ctx: CommandContext, t: Target, json: boolean): Promise<number> {
  const r = await resetSession(t, () => passNow(ctx, t, json), ctx.signal);
  if (json) printJson(ctx, { session: t.name, reset: true, state: r.state, running: r.running });
  else
    ctx.out(`reset ${t.name}: state ${r.state ?? "(no record)"}, ${r.running ? "running" : "not running"}`);
  return EXIT.ok;
}

/**
 * `gc session reset --all`: forgets every session's crash history, backoff and quarantine
 * (e.g. after an outage that was not the sessions' fault), and acknowledges a recovered
 * state.db so the controller starts sessions it has no record of. Operator holds stay.
 */
async function resetAll(ctx: CommandContext, json: boolean): Promise<number> {
  const city = await openCity(ctx);
  try {
    const store = await city.store();
    const reset: string[] = [];
    for (const rec of await store.list()) {
      const parked = rec.state === "quarantined" || rec.state === "backoff" || rec.state === "crashed";
      if (!parked && rec.recentFailures.length === 0) continue;
      await casUpdate(store, rec.name, () => ({
        recentFailures: [],
        backoffUntil: null,
        quarantineReason: null,
        lastError: null,
      }));
      if (parked)
        await walkTo(store, rec.name, "pending", "reset by operator (gc session reset --all)", {
          pending: null,
        });
      await store.appendEvent({ session: rec.name, type: "session.reset", payload: { from: rec.state } });
      reset.push(rec.name);
    }
    const acknowledged = readRecovery(city.stateDir) !== undefined;
    clearRecovery(city.stateDir);
    const quiet: CommandContext = { ...ctx, json: true, out: () => undefined };
    await reconcileNow(json ? quiet : ctx, city);
    if (json) printJson(ctx, { reset, recoveryAcknowledged: acknowledged });
    else {
      ctx.out(
        `reset ${reset.length} session${reset.length === 1 ? "" : "s"}${reset.length ? `: ${reset.join(", ")}` : ""}`,
      );
      if (acknowledged) ctx.out("state.db recovery acknowledged: sessions without a record may start again");
    }
    return EXIT.ok;
  } finally {
    await city.close();
  }
}

/** A line that never occurs on a screen: marks "the last line was not printed yet". */
const HELD = "\u0000held";

async function outputLog(ctx: CommandContext, t: Target, follow: boolean, lines: number, json: boolean) {
  const read = async () => {
    try {
      return screenLines(await t.provider.peek(t.name, 0, { signal: ctx.signal }));
    } catch (e) {
      if (isGcError(e, "GC_SESSION_NOT_FOUND")) return undefined;
      throw e;
    }
  };
  let screen = await read();
  if (screen === undefined) {
    // How it last ended (with its last output, when the provider kept it) is on record.
    const ended = t.session.record?.lastError;
    throw new SessionNotRunningError(t.name, t.session.record?.state, {
      hint: `its output is gone with it${ended ? `; it last ended: ${ended}` : ""}`,
    });
  }
  const first = lines > 0 ? screen.slice(-lines) : screen;
  if (!follow) {
    if (json) printJson(ctx, { session: t.name, lines: first });
    else for (const l of first) ctx.out(l);
    return EXIT.ok;
  }
  // Following: print complete lines only; the last screen line may still grow (a prompt).
  const emit = (ls: readonly string[]) => {
    for (const l of ls) ctx.out(json ? JSON.stringify({ line: l }) : l);
  };
  // -n counts complete lines: the last N before the line that may still grow.
  let printed = screen.slice(0, -1);
  emit(lines > 0 ? printed.slice(-lines) : printed);
  try {
    for (;;) {
      await sleep(500, undefined, { signal: ctx.signal });
      const now = await read();
      if (now === undefined) {
        emit(screen.slice(-1));
        ctx.err(`gc: ${t.name} ended`);
        return EXIT.ok;
      }
      const d = deltaSince([...printed, HELD], now);
      emit(d.lines.slice(0, -1));
      printed = now.slice(0, -1);
      screen = now;
    }
  } catch (e) {
    if (ctx.signal.aborted) return EXIT.cancelled;
    throw e;
  }
}

/**
 * `gc session logs NAME --events` for a name the city no longer knows (a pool instance scaled
 * away, a removed or renamed agent): its record is gone, its events are kept (until
 * `daemon.events` retention), and they say what happened to it. `notFound` is rethrown when
 * the store holds no event of that name either.
 */
async function goneEventLog(
  ctx: CommandContext,
  name: string,
  notFound: unknown,
  follow: boolean,
  lines: number,
  json: boolean,
): Promise<number> {
  const city = await openCity(ctx);
  try {
    const store = await city.store();
    if ((await store.queryEvents({ session: name, limit: 1 })).length === 0) throw notFound;
    ctx.err(`gc: ${name} is no longer in city ${city.name}; its recorded events:`);
    return await eventLog(ctx, { store, name }, follow, lines, json);
  } finally {
    await city.close();
  }
}

function eventLine(e: SessionEvent): string {
  const payload = Object.keys(e.payload).length > 0 ? ` ${JSON.stringify(e.payload)}` : "";
  return `${new Date(e.at).toISOString()}  #${e.seq}  ${e.type}${payload}`;
}

async function eventLog(
  ctx: CommandContext,
  t: Pick<Target, "store" | "name">,
  follow: boolean,
  lines: number,
  json: boolean,
) {
  const initial = await t.store.queryEvents({
    session: t.name,
    order: "desc",
    ...(lines > 0 ? { limit: lines } : {}),
  });
  initial.reverse();
  const emit = (es: readonly SessionEvent[]) => {
    for (const e of es) ctx.out(json ? JSON.stringify(e) : eventLine(e));
  };
  if (json && !follow) printJson(ctx, { session: t.name, events: initial });
  else emit(initial);
  if (!follow) return EXIT.ok;
  let since = initial.at(-1)?.seq ?? 0;
  try {
    for (;;) {
      await sleep(1_000, undefined, { signal: ctx.signal });
      const more = await t.store.queryEvents({ session: t.name, since });
      emit(more);
      since = more.at(-1)?.seq ?? since;
    }
  } catch (e) {
    if (ctx.signal.aborted) return EXIT.cancelled;
    throw e;
  }
}

async function respond(
  ctx: CommandContext,
  t: Target,
  action: string,
  text: string | undefined,
  requestId: string | undefined,
  json: boolean,
): Promise<number> {
  const r = await respondSession(t, { action, text, requestId }, ctx.signal);
  // Thrown, so main reports it like every failure (`{"error":…}` under --json; exit 1).
  if (!r.answered) throw new Error(r.error);
  if (json) printJson(ctx, { session: t.name, requestId: r.requestId, action, answered: true });
  else ctx.out(`answered ${t.name} (${r.kind}): ${action}`);
  return EXIT.ok;
}
