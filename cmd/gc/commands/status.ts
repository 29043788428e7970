/**
 * `gc status [--json]`: one row per session (name, agent, provider, state, running, drift,
 * restarts, last activity, attached) plus the controller, from one observation per provider.
 */
import { observeStatus, statusJson } from "../../../internal/controller/status-snapshot.js";
import { massStopText } from "../../../internal/reconcile/summary.js";
import { UsageError } from "../../../internal/runtime/errors.js";
import { defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";
import { formatTable } from "../table.js";

const USAGE = `Usage: gc status [--json]

One row per session of the city: name, agent, provider, state, running, drift, restarts,
last activity, attached — and whether the controller runs.`;

/** States whose reason `gc status` prints under the table. */
const EXPLAINED_STATES: ReadonlySet<string> = new Set([
  "quarantined",
  "backoff",
  "crashed",
  "suspended",
  "waiting-for-input",
]);

function ago(iso: string | null): string {
  if (!iso) return "-";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
    if (positionals.length > 0) throw new UsageError(`gc status takes no arguments\n\n${USAGE}`);
    const city = await openCity(ctx);
    try {
      const observed = await observeStatus(city, ctx.signal);
      const { view, ctl } = observed;
      if (ctx.json) {
        ctx.out(JSON.stringify(statusJson(city.name, observed), null, 2));
        return EXIT.ok;
      }
      ctx.out(
        `city ${city.name} (${city.cityDir}) — controller ${ctl.running ? `running (pid ${ctl.pid})` : "not running"}`,
      );
      // city.configError was reported in one line by openCity; a later failure to load is new.
      if (view.configError && view.configError !== city.configError)
        ctx.err(
          `gc: config error (sessions keep their last good config): ${view.configError.split("\n")[0]}`,
        );
      for (const o of view.observeErrors) ctx.err(`cannot observe provider ${o.provider}: ${o.error}`);
      if (ctl.status?.last?.massStop) ctx.out(massStopText(ctl.status.last.massStop));
      const header = [
        "NAME",
        "AGENT",
        "PROVIDER",
        "STATE",
        "RUNNING",
        "DRIFT",
        "RESTARTS",
        "ACTIVITY",
        "ATTACHED",
      ];
      const rows = view.sessions.map((s) => [
        s.name,
        s.agent,
        s.backend === s.provider ? s.provider : `${s.provider}→${s.backend}`,
        s.state,
        s.running ? "yes" : "no",
        s.drift,
        String(s.restarts),
        ago(s.lastActivity),
        s.attached ? "yes" : "no",
      ]);
      for (const line of formatTable(header, rows)) ctx.out(line);
      for (const s of view.sessions) {
        if (EXPLAINED_STATES.has(s.state)) {
          ctx.out(`  ${s.name}: ${s.state} — ${s.reason}`);
          if (s.state === "quarantined")
            ctx.out(
              `    once the cause is fixed: gc session reset ${s.name} (a changed start config in the city file lifts it by itself)`,
            );
          const opts = s.interaction?.options ?? [];
          if (opts.length > 0) {
            ctx.out(`    options: ${opts.map((o, i) => `${i + 1}. ${o}`).join(" · ")}`);
            ctx.out(`    answer: gc session respond ${s.name} <number|label>`);
          }
        }
      }
      if (view.sessions.length === 0) ctx.out("(no sessions)");
      return EXIT.ok;
    } finally {
      await city.close();
    }
  },
});
