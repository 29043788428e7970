/**
 * `gc nudge SESSION TEXT` delivers text to a session and submits it — by default once the
 * session is idle (bounded wait), with `--now` at once, with `--queue` durably through the
 * controller at the session's next idle moment. `gc nudge list` shows the queue: attempts,
 * the last failure, and dead letters. A nudge that was not confirmed exits non-zero.
 */
import { formatDuration } from "../../../internal/base/duration.js";
import { UsageError } from "../../../internal/base/errors.js";
import { resolveSession } from "../../../internal/controller/sessions.js";
import { nudgeSession, nudgeView } from "../../../internal/operate/actions.js";
import { startHint, type Target } from "../../../internal/operate/target.js";
import { HOLD_KEY } from "../../../internal/reconcile/plan.js";
import type { Nudge } from "../../../internal/session/store.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";
import { durationFlag, intFlag, printJson, readTextArg, withTarget } from "../operate.js";
import { formatTable } from "../table.js";

const USAGE = `Usage: gc nudge SESSION TEXT... [--now | --queue [--ttl DUR] [--attempts N]] [--wait DUR] [--raw]
       gc nudge SESSION - ...          (reads the text from stdin)
       gc nudge list [SESSION] [--all] [--json]

Delivers TEXT to the session and submits it (Enter). Delivery modes:
  (default)   wait until the session is idle (at most --wait, default 30s), then deliver;
              exits 1 without delivering if it does not become idle in time
  --now       deliver immediately, whatever the session is doing
  --queue     record the nudge; the controller delivers it at the session's next idle
              moment. --ttl (default 24h) and --attempts (default 10) bound it; a nudge
              that runs out becomes a dead letter with its reason (see gc nudge list)

Terminal control in TEXT is neutralised: ESC shows as ␛ (so ESC[201~ cannot end a bracketed
paste), control characters as their pictures (␃ for Ctrl-C), a CR as a newline. --raw types
the text unchanged (not with --queue).

gc nudge list shows queued nudges with their attempts and last failure, and dead letters
(--all adds delivered ones). "list" is reserved: it is never taken as a session name here.

Exit: 0 delivered (or queued) · 1 not delivered · 2 usage · 3 unknown session.`;

/** Default bound on waiting for idle before delivering. */
const DEFAULT_WAIT_MS = 30_000;
/** Default TTL of a queued nudge. */
const DEFAULT_TTL_MS = 24 * 60 * 60_000;
/** Default attempts of a queued nudge (each idle check that finds the session busy is one). */
const DEFAULT_ATTEMPTS = 10;

export const command = defineCommand({
  usage: USAGE,
  options: {
    now: { type: "boolean" },
    queue: { type: "boolean" },
    wait: { type: "string" },
    ttl: { type: "string" },
    attempts: { type: "string" },
    all: { type: "boolean" },
    raw: { type: "boolean" },
  },
  async run(ctx, { positionals, values }) {
    const json = ctx.json;
    if (positionals[0] === "list") return list(ctx, positionals.slice(1), values.all === true, json);
    if (positionals.length < 2) throw new UsageError(`gc nudge needs a session and text\n\n${USAGE}`);
    if (values.now && values.queue) throw new UsageError("--now and --queue exclude each other");
    if (values.raw && values.queue)
      throw new UsageError("--raw does not apply to --queue (a queued nudge is always neutralised)");
    if (!values.queue && (values.ttl !== undefined || values.attempts !== undefined)) {
      throw new UsageError("--ttl and --attempts only apply to --queue");
    }
    const [name, ...words] = positionals as [string, ...string[]];
    const text = words.length === 1 && words[0] === "-" ? await readTextArg(ctx) : words.join(" ");
    if (text.trim() === "") throw new UsageError("the nudge text is empty");
    const waitMs = durationFlag("wait", values.wait, DEFAULT_WAIT_MS);
    const ttlMs = durationFlag("ttl", values.ttl, DEFAULT_TTL_MS);
    if (ttlMs <= 0) throw new UsageError("--ttl: a queued nudge needs a time to live above 0 (e.g. 10m)");
    const attempts = intFlag("attempts", values.attempts, DEFAULT_ATTEMPTS);
    return withTarget(ctx, name, async (t) => {
      const mode = values.queue ? "queue" : values.now ? "now" : "wait-idle";
      const r = await nudgeSession(t, text, {
        mode,
        waitMs,
        ttlMs,
        attempts,
        source: "cli",
        raw: values.raw === true,
        signal: ctx.signal,
      });
      if (r.mode === "queue") {
        // Queued for a session nothing starts (held by `gc stop NAME`, quarantined,
        // suspended): it would sit until it dead-letters, so say what brings the session back.
        const parked = parkedHint(t);
        if (json) {
          printJson(ctx, {
            session: t.name,
            mode: "queue",
            queued: nudgeView(r.queued, Date.now()),
            controller: r.controller,
            parked: parked ?? null,
          });
        } else {
          ctx.out(
            `queued nudge #${r.queued.id} for ${t.name} (expires in ${formatDuration(ttlMs)}, up to ${attempts} attempts); ` +
              "the controller delivers it when the session is idle",
          );
          if (!r.controller)
            ctx.err("gc: no controller is running for this city: `gc start` runs one to deliver it");
          if (parked)
            ctx.err(
              `gc: ${t.name} is down and nothing starts it — ${parked}; the nudge is delivered once it runs, ` +
                `or becomes a dead letter after ${formatDuration(ttlMs)}`,
            );
        }
        return EXIT.ok;
      }
      if (!r.delivered) {
        if (json) printJson(ctx, { session: t.name, mode: r.mode, delivered: false, reason: r.reason });
        else ctx.err(`gc: nudge not delivered: ${r.reason}`);
        return EXIT.failed;
      }
      if (json) printJson(ctx, { session: t.name, mode: r.mode, delivered: true });
      else ctx.out(`nudged ${t.name}`);
      return EXIT.ok;
    });
  },
});

/**
 * What brings `t` back when it is down for good (held, quarantined, suspended, not declared),
 * from {@link startHint}; `undefined` when it runs or the controller starts it by itself.
 */
function parkedHint(t: Target): string | undefined {
  const { desired, record } = t.session;
  const parked =
    !desired ||
    desired.suspended === true ||
    record?.metadata[HOLD_KEY] !== undefined ||
    record?.state === "quarantined";
  return parked ? startHint(t) : undefined;
}

function clip(s: string, max: number): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

async function list(ctx: CommandContext, rest: string[], all: boolean, json: boolean): Promise<number> {
  if (rest.length > 1) throw new UsageError(`gc nudge list takes at most one session\n\n${USAGE}`);
  const city = await openCity(ctx);
  try {
    // A name the city does not know is exit 3 with a did-you-mean, not an empty list.
    if (rest[0] !== undefined) await resolveSession(city, rest[0], ctx.signal);
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
