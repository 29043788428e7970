/**
 * `gc drift [SESSION]`: which declared fields changed since each session was started,
 * old → new (secret values redacted), and whether the change means restart or live re-apply.
 */

import { UsageError } from "../../../internal/base/errors.js";
import type { FieldChange } from "../../../internal/controller/drift-report.js";
import { callerDiffersText, desiredView, viewedDrift } from "../../../internal/controller/drift-view.js";
import { resolveSession } from "../../../internal/controller/sessions.js";
import { massStopText } from "../../../internal/reconcile/summary.js";
import { defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";

const USAGE = `Usage: gc drift [SESSION] [--json]

Shows the fields whose declared value differs from what each running session was started
with: core fields (restart) and session_live (re-applied without restart). A changed map
shows each changed key: env.GREETING: hello → bonjour. The work dir, prompt and nudge
restart nothing (as sessions run for hours, editing a prompt should not kill them): a
change to them is listed as waiting for the session's next start (effect "next-start" in
--json); gc session restart SESSION applies it now.

Beside a running controller, drift is the controller's (what it acts on): its last pass's
resolution of the file, in its environment. When this shell resolves a session differently
(a variable the city file interpolates has another value here), a note names the sessions
(never the values; "callerEnvDiffers" in --json, and "view": "controller" or "local"). Without
a controller, drift is resolved in this shell.

While the running controller refuses the city file (the mass-stop guard), drift compares
against a file that is not applied: it says so first (on stderr with --json) and exits 1.`;

/** One changed field as `gc drift` prints it. */
function fieldLine(f: FieldChange): string {
  return f.masked
    ? `${f.field}: changed (derived from a secret; values not shown)`
    : `${f.field}: ${f.from} → ${f.to}`;
}

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
    if (positionals.length > 1) throw new UsageError(USAGE);
    const city = await openCity(ctx);
    try {
      const view = await desiredView(city);
      const store = await city.store();
      if (positionals[0]) await resolveSession(city, positionals[0], ctx.signal);
      const names = positionals[0] ? [positionals[0]] : view.desired.map((d) => d.name);
      const out = [];
      for (const name of names) {
        const drift = viewedDrift(view, name, await store.get(name));
        // Resolved with this shell's missing variables read as empty: not what it runs with.
        out.push(
          view.source === "local" && city.envIncomplete && drift.drift !== "unknown"
            ? {
                session: name,
                drift: "unknown" as const,
                reason:
                  "unknown: this shell lacks variables the city file interpolates (see above); run gc drift where they are set",
                fields: [] as [],
                view: view.source,
                callerEnvDiffers: false,
              }
            : drift,
        );
      }
      const differs = callerDiffersText(view, names);
      // The fields above compare the file with what each session runs; whether the file is
      // applied at all is the controller's call: its last pass says when the guard refused it.
      const massStop = view.controller.status?.last?.massStop;
      const refused = massStop ? massStopText(massStop) : undefined;
      if (ctx.json) {
        ctx.out(JSON.stringify(out, null, 2));
        if (refused) ctx.err(refused);
        if (differs) ctx.err(differs);
        return refused ? EXIT.failed : EXIT.ok;
      }
      if (refused) ctx.out(refused);
      if (differs) ctx.out(differs);
      for (const s of out) {
        if (s.drift === "unknown") {
          ctx.out(`${s.session}: ${"reason" in s ? s.reason : "unknown"}`);
          continue;
        }
        const now = s.fields.filter((f) => f.effect !== "next-start");
        const later = s.fields.filter((f) => f.effect === "next-start");
        if (s.drift === "none") ctx.out(`${s.session}: in sync${later.length > 0 ? " (but see below)" : ""}`);
        else
          ctx.out(
            `${s.session}: ${s.drift === "core" ? "core drift (restart)" : "live drift (re-apply, no restart)"}`,
          );
        for (const f of now) ctx.out(`  ${fieldLine(f)}`);
        if (later.length > 0) {
          ctx.out(
            `  changed, applied only when it next starts (gc session restart ${s.session} applies it now):`,
          );
          for (const f of later) ctx.out(`    ${fieldLine(f)}`);
        }
      }
      return refused ? EXIT.failed : EXIT.ok;
    } finally {
      await city.close();
    }
  },
});
