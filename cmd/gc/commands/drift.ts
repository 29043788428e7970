/**
 * `gc drift [SESSION]`: which declared fields changed since each session was started,
 * old → new (secret values redacted), and whether the change means restart or live re-apply.
 */
import { parseArgs } from "node:util";
import { resolveSession } from "../../../internal/controller/sessions.js";
import { UsageError } from "../../../internal/runtime/errors.js";
import { diffBreakdown, LIVE_FIELD } from "../../../internal/runtime/fingerprint.js";
import { type Command, EXIT } from "../context.js";
import { openCity } from "../deps.js";

const USAGE = `Usage: gc drift [SESSION] [--json]

Shows the fields whose declared value differs from what each running session was started
with: core fields (restart) and session_live (re-applied without restart).`;

export const command: Command = {
  name: "drift",
  summary: "which fields drifted, old → new",
  usage: USAGE,
  async run(ctx, args) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { json: { type: "boolean" } },
    });
    if (positionals.length > 1) throw new UsageError(USAGE);
    const city = await openCity(ctx);
    try {
      const desired = await city.loadDesired();
      const store = await city.store();
      if (positionals[0]) await resolveSession(city, positionals[0], ctx.signal);
      const names = positionals[0] ? [positionals[0]] : desired.map((d) => d.name);
      const out = [];
      for (const name of names) {
        const d = desired.find((x) => x.name === name);
        const rec = await store.get(name);
        if (!d || !rec || rec.coreHash === null) {
          out.push({
            session: name,
            drift: "unknown",
            reason: !d ? "not in the city file" : "never started",
            fields: [],
          });
          continue;
        }
        const fields = diffBreakdown(rec.breakdown, d.breakdown).map((f) => ({
          ...f,
          effect: f.field === LIVE_FIELD ? "live" : "restart",
        }));
        const drift = rec.coreHash !== d.core ? "core" : rec.liveHash !== d.live ? "live" : "none";
        out.push({ session: name, drift, fields });
      }
      if (ctx.json || values.json) {
        ctx.out(JSON.stringify(out, null, 2));
        return EXIT.ok;
      }
      for (const s of out) {
        if (s.drift === "none") ctx.out(`${s.session}: in sync`);
        else if (s.drift === "unknown") ctx.out(`${s.session}: ${"reason" in s ? s.reason : "unknown"}`);
        else {
          ctx.out(
            `${s.session}: ${s.drift === "core" ? "core drift (restart)" : "live drift (re-apply, no restart)"}`,
          );
          for (const f of s.fields) {
            if (f.masked) ctx.out(`  ${f.field}: changed (derived from a secret; values not shown)`);
            else ctx.out(`  ${f.field}: ${JSON.stringify(f.from)} → ${JSON.stringify(f.to)}`);
          }
        }
      }
      return EXIT.ok;
    } finally {
      await city.close();
    }
  },
};
