/**
 * `gc nudge SESSION TEXT` delivers text to a session and submits it — by default once the
 * session is idle (bounded wait), with `--now` at once, with `--queue` durably through the
 * controller at the session's next idle moment. `gc nudge list` shows the queue: attempts,
 * the last failure, and dead letters. A nudge that was not confirmed exits non-zero.
 */
import { parseArgs } from "node:util";
import { formatDuration } from "../../../internal/config/duration.js";
import { requestControl } from "../../../internal/controller/control.js";
import { controllerPaths, findController } from "../../../internal/controller/controller.js";
import { probeIdle } from "../../../internal/reconcile/nudge-delivery.js";
import { UsageError } from "../../../internal/runtime/errors.js";
import { supportsInteraction, supportsNudgeNow } from "../../../internal/runtime/provider.js";
import type { Nudge } from "../../../internal/session/store.js";
import { type Command, type CommandContext, EXIT } from "../context.js";
import { openCity } from "../deps.js";
import {
  durationFlag,
  intFlag,
  lockSession,
  printJson,
  readStdin,
  requireRunning,
  type Target,
  withTarget,
} from "../operate.js";
import { formatTable } from "../table.js";

const USAGE = `Usage: gc nudge SESSION TEXT... [--now | --queue [--ttl DUR] [--attempts N]] [--wait DUR]
       gc nudge SESSION - ...          (reads the text from stdin)
       gc nudge list [SESSION] [--all] [--json]

Delivers TEXT to the session and submits it (Enter). Delivery modes:
  (default)   wait until the session is idle (at most --wait, default 30s), then deliver;
              exits 1 without delivering if it does not become idle in time
  --now       deliver immediately, whatever the session is doing
  --queue     record the nudge; the controller delivers it at the session's next idle
              moment. --ttl (default 24h) and --attempts (default 10) bound it; a nudge
              that runs out becomes a dead letter with its reason (see gc nudge list)

gc nudge list shows queued nudges with their attempts and last failure, and dead letters
(--all adds delivered ones). "list" is reserved: it is never taken as a session name here.

Exit: 0 delivered (or queued) · 1 not delivered · 2 usage · 3 unknown session.`;

/** Default bound on waiting for idle before delivering. */
const DEFAULT_WAIT_MS = 30_000;
/** Default TTL of a queued nudge. */
const DEFAULT_TTL_MS = 24 * 60 * 60_000;
/** Default attempts of a queued nudge (each idle check that finds the session busy is one). */
const DEFAULT_ATTEMPTS = 10;

export const command: Command = {
  name: "nudge",
  summary: "deliver text to a session",
  usage: USAGE,
  async run(ctx, args) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        now: { type: "boolean" },
        queue: { type: "boolean" },
        wait: { type: "string" },
        ttl: { type: "string" },
        attempts: { type: "string" },
        all: { type: "boolean" },
        json: { type: "boolean" },
      },
    });
    const json = ctx.json || values.json === true;
    if (positionals[0] === "list") return list(ctx, positionals.slice(1), values.all === true, json);
    if (positionals.length < 2) throw new UsageError(`gc nudge needs a session and text\n\n${USAGE}`);
    if (values.now && values.queue) throw new UsageError("--now and --queue exclude each other");
    if (!values.queue && (values.ttl !== undefined || values.attempts !== undefined)) {
      throw new UsageError("--ttl and --attempts only apply to --queue");
    }
    const [name, ...words] = positionals as [string, ...string[]];
    const text = words.length === 1 && words[0] === "-" ? await readStdin(ctx) : words.join(" ");
    if (text.trim() === "") throw new UsageError("the nudge text is empty");
    const waitMs = durationFlag("wait", values.wait, DEFAULT_WAIT_MS);
    const ttlMs = durationFlag("ttl", values.ttl, DEFAULT_TTL_MS);
    const attempts = intFlag("attempts", values.attempts, DEFAULT_ATTEMPTS);
    return withTarget(ctx, name, async (t) => {
      if (values.queue) return queue(ctx, t, text, ttlMs, attempts, json);
      await requireRunning(t, ctx.signal);
      if (values.now) {
        if (supportsNudgeNow(t.provider)) await t.provider.nudgeNow(t.name, text, { signal: ctx.signal });
        else await t.provider.nudge(t.name, text, { signal: ctx.signal });
        return delivered(ctx, t, "now", json);
      }
      const lock = await lockSession(t, "gc nudge");
      try {
        const state = await probeIdle(t.provider, t.name, {
          readyPromptPrefix: t.config?.readyPromptPrefix,
          boundMs: waitMs,
          signal: ctx.signal,
        });
        if (state !== "idle") {
          const why = await notIdleReason(t, state, waitMs, ctx.signal);
          if (json) printJson(ctx, { session: t.name, mode: "wait-idle", delivered: false, reason: why });
          ctx.err(`gc: nudge not delivered: ${why}`);
          return EXIT.failed;
        }
        await t.provider.nudge(t.name, text, { signal: ctx.signal });
        return delivered(ctx, t, "wait-idle", json);
      } finally {
        await lock.release();
      }
    });
  },
};

async function notIdleReason(t: Target, state: string, waitMs: number, signal: AbortSignal): Promise<string> {
  switch (state) {
    case "gone":
      return `session ${t.name} is not running`;
    case "waiting-for-input": {
      const p = supportsInteraction(t.provider)
        ? await t.provider.pending(t.name, { signal }).catch(() => undefined)
        : undefined;
      return (
        `session ${t.name} is waiting for input${p?.prompt ? `: ${p.prompt}` : ""} ` +
        `(answer it with \`gc session respond ${t.name} ACTION\`)`
      );
    }
    default:
      return (
        `session ${t.name} did not become idle within ${formatDuration(waitMs)}; ` +
        "--now delivers anyway, --queue delivers at its next idle moment"
      );
  }
}

async function delivered(ctx: CommandContext, t: Target, mode: string, json: boolean): Promise<number> {
  await t.store.appendEvent({ session: t.name, type: "nudge.sent", payload: { mode } });
  if (json) printJson(ctx, { session: t.name, mode, delivered: true });
  else ctx.out(`nudged ${t.name}`);
  return EXIT.ok;
}

async function queue(
  ctx: CommandContext,
  t: Target,
  text: string,
  ttlMs: number,
  attempts: number,
  json: boolean,
): Promise<number> {
  const n = await t.store.enqueueNudge({
    session: t.name,
    text,
    ttlMs,
    maxAttempts: attempts,
    source: "cli",
  });
  await t.store.appendEvent({
    session: t.name,
    type: "nudge.queued",
    payload: { id: n.id, ttlMs, maxAttempts: attempts },
  });
  const ctl = await findController(t.city.stateDir);
  if (ctl.running) {
    // Ask for a pass now; the poke registers at once, so don't wait for the pass to end.
    await requestControl(controllerPaths(t.city.stateDir).socket, { op: "poke" }, { timeoutMs: 500 }).catch(
      () => undefined,
    );
  }
  if (json) {
    printJson(ctx, {
      session: t.name,
      mode: "queue",
      queued: nudgeView(n, Date.now()),
      controller: ctl.running,
    });
  } else {
    ctx.out(
      `queued nudge #${n.id} for ${t.name} (expires in ${formatDuration(ttlMs)}, up to ${attempts} attempts); ` +
        "the controller delivers it when the session is idle",
    );
    if (!ctl.running)
      ctx.err("gc: no controller is running for this city: `gc start` runs one to deliver it");
  }
  return EXIT.ok;
}

/** A nudge as shown by `gc nudge list`: the state aged to now (a lapsed TTL reads as dead). */
function nudgeView(n: Nudge, now: number) {
  const expired = (n.state === "queued" || n.state === "claimed") && now >= n.expiresAt;
  return {
    id: n.id,
    session: n.session,
    state: expired ? "dead" : n.state,
    attempts: n.attempts,
    maxAttempts: n.maxAttempts,
    createdAt: new Date(n.createdAt).toISOString(),
    expiresAt: new Date(n.expiresAt).toISOString(),
    nextAttemptAt: n.state === "queued" && !expired ? new Date(n.notBefore).toISOString() : null,
    lastError: n.lastError,
    deadReason: expired ? "expired (ttl)" : n.deadReason,
    deliveredAt: n.deliveredAt === null ? null : new Date(n.deliveredAt).toISOString(),
    source: n.source,
    text: n.text,
  };
}

function clip(s: string, max: number): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

async function list(ctx: CommandContext, rest: string[], all: boolean, json: boolean): Promise<number> {
  if (rest.length > 1) throw new UsageError(`gc nudge list takes at most one session\n\n${USAGE}`);
  const city = await openCity(ctx);
  try {
    const store = await city.store();
    const states = all
      ? undefined
      : (["queued", "claimed", "dead"] as const satisfies readonly Nudge["state"][]);
    const nudges = await store.listNudges({
      ...(rest[0] ? { session: rest[0] } : {}),
      ...(states ? { states } : {}),
    });
    const now = Date.now();
    const views = nudges.map((n) => nudgeView(n, now));
    if (json) {
      printJson(ctx, { nudges: views });
      return EXIT.ok;
    }
    if (views.length === 0) {
      ctx.out(all ? "(no nudges)" : "(no queued nudges and no dead letters)");
      return EXIT.ok;
    }
    const header = ["ID", "SESSION", "STATE", "ATTEMPTS", "NEXT", "LAST FAILURE / DEAD REASON", "TEXT"];
    const rows = views.map((v) => [
      String(v.id),
      v.session,
      v.state,
      `${v.attempts}/${v.maxAttempts}`,
      v.nextAttemptAt ? relative(Date.parse(v.nextAttemptAt) - now) : "-",
      clip(
        v.state === "dead"
          ? `${v.deadReason ?? "dead"}${v.lastError ? ` (last: ${v.lastError})` : ""}`
          : (v.lastError ?? "-"),
        60,
      ),
      clip(v.text, 40),
    ]);
    for (const line of formatTable(header, rows)) ctx.out(line);
    return EXIT.ok;
  } finally {
    await city.close();
  }
}

function relative(ms: number): string {
  if (ms <= 0) return "due";
  return `in ${formatDuration(Math.ceil(ms / 1000) * 1000)}`;
}
