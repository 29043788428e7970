/**
 * `gc drift [SESSION]`: which declared fields changed since each session was started,
 * old → new (secret values redacted), and whether the change means restart or live re-apply.
 */

import { sessionDrift } from "../../../internal/controller/drift-report.js";
import { resolveSession } from "../../../internal/controller/sessions.js";
import { UsageError } from "../../../internal/runtime/errors.js";
import { defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";

const USAGE = `Usage: gc drift [SESSION] [--json]

Shows the fields whose declared value differs from what each running session was started
with: core fields (restart) and session_live (re-applied without restart).`;

/** A drift value for people: strings as they are, anything else as JSON. Pure. */
function shown(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The lines of one drifted field: `field: old → new`, or for maps (env, labels…) one line
 * per changed key, `env.GREETING: hello → bonjour`, with `(absent)` for added or removed
 * keys. Pure.
 */
export function changeLines(field: string, from: unknown, to: unknown): string[] {
  if (!isMap(from) || !isMap(to)) return [`${field}: ${shown(from)} → ${shown(to)}`];
  const keys = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  return keys
    .filter((k) => JSON.stringify(from[k]) !== JSON.stringify(to[k]))
    .map(
      (k) =>
        `${field}.${k}: ${k in from ? shown(from[k]) : "(absent)"} → ${k in to ? shown(to[k]) : "(absent)"}`,
    );
}

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
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
        out.push(sessionDrift(name, rec, d));
      }
      if (ctx.json) {
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
            else for (const line of changeLines(f.field, f.from, f.to)) ctx.out(`  ${line}`);
          }
        }
      }
      return EXIT.ok;
    } finally {
      await city.close();
    }
  },
});
