/**
 * `gc config validate [FILE] | show [FILE] | schema`: check the city file (exit 2 with
 * every issue, each with file:line:col), print what it resolves to (secrets redacted,
 * with the chosen session provider and why), or print the JSON Schema of the city file.
 */

import { ConfigError, formatConfigIssue, UsageError } from "../../../internal/base/errors.js";
import {
  type DesiredSession,
  daemonSettings,
  type LoadedCity,
  loadCity,
  redactDeep,
  resolveCity,
} from "../../../internal/config/index.js";
import { citySchemaJson } from "../../../internal/config/schema.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";

const USAGE = `Usage: gc config validate [FILE]   check the city file; exit 2 listing every problem
       gc config show [FILE]       print the resolved sessions (secrets redacted)
       gc config schema            print the JSON Schema of the city file

FILE defaults to --config, else <city>/city.yaml (--city, GC_CITY, or the nearest
directory upward holding city.yaml). --json prints machine-readable output.`;

function load(ctx: CommandContext, file: string | undefined): Promise<LoadedCity> {
  return loadCity({ cityDir: ctx.cityFlag, configFile: file ?? ctx.configFlag, env: ctx.env, cwd: ctx.cwd });
}

async function validate(ctx: CommandContext, json: boolean, file: string | undefined): Promise<number> {
  try {
    const city = await load(ctx, file);
    const sessions = resolveCity(city, { now: new Date() });
    if (json) ctx.out(JSON.stringify({ valid: true, file: city.file, issues: [] }, null, 2));
    else {
      const agents = city.config.agents.length;
      ctx.out(
        `${city.file}: ok (${agents} agent${agents === 1 ? "" : "s"}, ${sessions.length} session${sessions.length === 1 ? "" : "s"})`,
      );
    }
    return EXIT.ok;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    if (json) ctx.out(JSON.stringify({ valid: false, file: e.issues[0]?.file, issues: e.issues }, null, 2));
    else {
      for (const i of e.issues) ctx.err(formatConfigIssue(i));
      ctx.err(`${e.issues.length} problem${e.issues.length === 1 ? "" : "s"}; nothing was changed`);
    }
    return EXIT.usage;
  }
}

function list(values: readonly string[] | undefined): string | undefined {
  return values === undefined || values.length === 0 ? undefined : values.join(" ; ");
}

function firstLines(text: string, max: number): string {
  const lines = text.trimEnd().split("\n");
  const head = lines.slice(0, max).join("\n    ");
  return lines.length > max ? `${head}\n    … (${lines.length - max} more lines)` : head;
}

function describeSession(d: DesiredSession): string[] {
  const c = d.config;
  const pool = d.pool ? `, pool ${d.pool.index} of ${d.pool.min}..${d.pool.max}` : "";
  const flags = d.suspended ? " [suspended]" : "";
  const rows: [string, string | undefined][] = [
    ["runs on", `${d.backend ?? d.provider} — ${d.placement}`],
    ["command", c.command || "(provider default shell)"],
    ["work_dir", c.workDir],
    ["env", d.declaredEnvKeys.map((k) => `${k}=${c.env[k]}`).join(" ") || undefined],
    ["depends_on", d.dependsOn.length > 0 ? d.dependsOn.join(", ") : undefined],
    [
      "ready",
      c.readyPromptPrefix !== undefined ? `prompt prefix ${JSON.stringify(c.readyPromptPrefix)}` : undefined,
    ],
    ["ready_delay", c.readyDelayMs !== undefined ? `${c.readyDelayMs} ms` : undefined],
    ["process_names", c.processNames?.join(", ")],
    ["pre_start", list(c.preStart)],
    ["session_setup", list(c.sessionSetup)],
    ["setup_script", c.sessionSetupScript],
    ["session_live", list(c.sessionLive)],
    ["overlay_dir", c.overlayDir],
    ["copy_files", c.copyFiles?.map((f) => `${f.src} → ${f.relDst || "."}`).join(", ")],
    [
      "prompt",
      c.prompt !== undefined
        ? `${c.promptFlag ? `${c.promptFlag} ` : ""}${firstLines(c.prompt, 4)}`
        : undefined,
    ],
    ["nudge", c.nudge !== undefined ? firstLines(c.nudge, 4) : undefined],
  ];
  return [
    `session ${d.name} (agent ${d.agent}, provider ${d.provider}${pool})${flags}`,
    ...rows.filter(([, v]) => v !== undefined).map(([k, v]) => `  ${k.padEnd(14)}${v}`),
  ];
}

async function show(ctx: CommandContext, json: boolean, file: string | undefined): Promise<number> {
  const city = await load(ctx, file);
  const sessions = redactDeep(resolveCity(city, { now: new Date() }), city.secrets);
  const { config } = city;
  if (json) {
    const doc = {
      city: config.workspace.name,
      cityDir: city.cityDir,
      file: city.file,
      revision: city.revision,
      provider: { name: config.session.provider, reason: city.defaultProviderReason },
      daemon: daemonSettings(config),
      sessions,
    };
    ctx.out(JSON.stringify(doc, null, 2));
    return EXIT.ok;
  }
  ctx.out(`city      ${config.workspace.name}${config.workspace.suspended ? " [suspended]" : ""}`);
  ctx.out(`dir       ${city.cityDir}`);
  ctx.out(`file      ${city.file}`);
  ctx.out(`provider  ${config.session.provider} (${city.defaultProviderReason})`);
  if (config.session.provider === "auto") ctx.out(`          auto.default = ${config.session.auto.default}`);
  if (config.session.provider === "hybrid") {
    const h = config.session.hybrid;
    ctx.out(
      `          hybrid.local = ${h.local}, hybrid.remote = ${h.remote}, remote_match = ${h.remote_match ?? "(none)"}`,
    );
  }
  const pools = config.agents.filter(
    (a) => a.min_active_sessions !== undefined || a.max_active_sessions !== undefined,
  );
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? "" : "s"}`;
  ctx.out(
    `sessions  ${sessions.length} desired from ${n(config.agents.length, "agent")} (${n(pools.length, "pool")})`,
  );
  for (const d of sessions) {
    ctx.out("");
    for (const line of describeSession(d)) ctx.out(line);
  }
  return EXIT.ok;
}

/** Runs `gc config <sub>`; resolves to the exit code. */
export async function runConfig(
  ctx: CommandContext,
  { positionals }: { positionals: string[] },
): Promise<number> {
  const json = ctx.json;
  const [sub, file, ...extra] = positionals;
  if (extra.length > 0 || (sub === "schema" && file !== undefined)) {
    throw new UsageError(`too many arguments\n\n${USAGE}`);
  }
  switch (sub) {
    case "validate":
      return validate(ctx, json, file);
    case "show":
      return show(ctx, json, file);
    case "schema":
      ctx.out(JSON.stringify(citySchemaJson(), null, 2));
      return EXIT.ok;
    default:
      throw new UsageError(
        `${sub === undefined ? "missing" : `unknown`} subcommand${sub ? ` ${JSON.stringify(sub)}` : ""}\n\n${USAGE}`,
      );
  }
}

export const command = defineCommand({ usage: USAGE, options: {}, run: runConfig });
