/**
 * Template resolution: agent + provider preset + city defaults → the desired sessions
 * (name, provider, StartConfig, dependencies) the reconciler works from. Pure and
 * deterministic for a given `now`: the controller captures `now` once per process so the
 * beacon (which fingerprints ignore anyway) does not change between ticks.
 */
import { basename, resolve as resolvePath } from "node:path";
import { shellQuote } from "../base/shell-quote.js";
import type { ScreenRules } from "../runtime/agent-screens.js";
import { type RouteRules, routeSession } from "../runtime/auto/route.js";
import type { StartText } from "../runtime/fingerprint.js";
import type { CopyEntry, StartConfig } from "../runtime/provider.js";
import { sessionShapingSettings } from "../runtime/registry/index.js";
import { type EffectivePreset, lookupPreset } from "./builtins.js";
import type { CityConfig } from "./parse.js";
import { expandPlaceholders } from "./placeholders.js";
import type { AgentConfig } from "./schema.js";
import { effectivePromptMode, poolBounds, poolInstanceName } from "./validate.js";

export { poolBounds, poolInstanceName };

/** One session the city wants, fully resolved. */
export interface DesiredSession {
  /** Session name: the agent name, or `<agent>-<n>` (1-based) for pool instances. */
  readonly name: string;
  readonly agent: string;
  /** Session provider: concrete (`tmux`, `exec:/abs/path`, …) or a router (`auto`, `hybrid`). */
  readonly provider: string;
  /** Under a router: the concrete backend the session is routed to (also `config.backend`). */
  readonly backend?: string | undefined;
  /** Why this provider/backend (`gc config show`). */
  readonly placement: string;
  readonly config: StartConfig;
  /** Agent names this session's agent depends on. */
  readonly dependsOn: readonly string[];
  /** The agent (or the whole city) is suspended: declared, not to be run. */
  readonly suspended: boolean;
  /** Set for pool instances. */
  readonly pool?: { readonly index: number; readonly min: number; readonly max: number } | undefined;
  /**
   * Env keys the user declared (preset + agent `env`). Pass to `fingerprint()` so a
   * declared `GC_*`-prefixed key counts as identity like any other user key.
   */
  readonly declaredEnvKeys: readonly string[];
  /**
   * What the program is first told, as declared: the prompt without its beacon (unless its
   * mode is `none`) and the agent's own nudge. Pass to `fingerprint()` (reported, not hashed).
   */
  readonly startText: StartText;
}

/** What resolution needs from a loaded city. */
export interface CityModel {
  /** Absolute city directory; relative paths resolve against it. */
  readonly cityDir: string;
  readonly config: CityConfig;
  /** Contents of each agent's `prompt_template`, by agent name (read by loadCity). */
  readonly promptTemplates?: Readonly<Record<string, string>> | undefined;
}

/** Options of {@link resolveCity}. */
export interface ResolveOptions {
  /** Start time shown in the beacon; capture it once per controller process. */
  readonly now: Date;
}

/** Separator between the initial prompt and the agent's nudge when both go out as one nudge. */
export const PROMPT_NUDGE_SEPARATOR = "\n\n---\n\n";

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/**
 * The startup identification line: `[city] session • YYYY-MM-DDTHH:MM:SS` (local time of
 * `now`, no offset, bullet U+2022). Prepended to the initial prompt so a restarted agent's
 * transcript is recognisable. Pure.
 */
export function formatBeacon(city: string, session: string, now: Date): string {
  const d = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  const t = `${pad(now.getHours())}:${pad(now.getMinutes())}:${pad(now.getSeconds())}`;
  return `[${city}] ${session} • ${d}T${t}`;
}

/** The agent's preset with its builtin layered in and defaults decided; `undefined` for `start_command` agents. */
export function effectivePreset(config: CityConfig, agent: AgentConfig): EffectivePreset | undefined {
  if (agent.start_command !== undefined) return undefined;
  const name = agent.provider ?? config.workspace.provider;
  if (name === undefined) return undefined;
  const found = lookupPreset(name, config.providers);
  if (found === undefined) return undefined;
  const p = found.preset;
  return {
    name,
    builtin: found.builtin,
    command: p.command ?? name,
    args: p.args ?? [],
    promptMode: p.prompt_mode ?? "argument",
    promptFlag: p.prompt_flag,
    readyPromptPrefix: p.ready_prompt_prefix,
    readyDelayMs: p.ready_delay_ms,
    processNames: p.process_names ?? [],
    emitsPermissionWarning: p.emits_permission_warning ?? false,
    clearInputKeys: p.clear_input_keys,
    interruptKeys: p.interrupt_keys,
    busyMarkers: p.busy_markers,
    readyMarkers: p.ready_markers,
    errorMarkers: p.error_markers,
    turnEndMarkers: p.turn_end_markers,
    readySettleMs: p.ready_settle_ms,
    multiline: p.multiline,
    env: p.env ?? {},
  };
}

/**
 * What `agent`'s sessions show on screen, as the classifier reads it: its ready prompt and
 * ready, busy, error and turn-end markers (the agent's keys over its preset's); empty for a
 * `start_command` agent without its own. The one place these keys are layered. Pure.
 */
export function screenRulesOf(config: CityConfig, agent: AgentConfig): ScreenRules {
  return screenRulesWith(agent, effectivePreset(config, agent));
}

/** {@link screenRulesOf} with the agent's effective preset already decided. */
function screenRulesWith(agent: AgentConfig, preset: EffectivePreset | undefined): ScreenRules {
  return compact({
    readyPromptPrefix: agent.ready_prompt_prefix ?? preset?.readyPromptPrefix,
    readyMarkers: agent.ready_markers ?? preset?.readyMarkers,
    busyMarkers: agent.busy_markers ?? preset?.busyMarkers,
    errorMarkers: agent.error_markers ?? preset?.errorMarkers,
    turnEndMarkers: agent.turn_end_markers ?? preset?.turnEndMarkers,
  });
}

/** Where a session runs, and why (`gc config show`). */
export interface SessionPlacement {
  /** The provider the reconciler talks to: a concrete one, or the router (`auto`, `hybrid`). */
  readonly provider: string;
  /** Under a router: the concrete backend the router puts the session on. */
  readonly backend?: string | undefined;
  /** Why that provider (and backend). */
  readonly why: string;
}

/**
 * Where a session runs. Under `session.provider: auto|hybrid` the router is the provider and
 * the backend is decided by the routers' one rule (runtime/auto/route.ts: the agent's
 * `session` override, else `session.auto.default`; or hybrid's `remote_match`). Otherwise
 * the agent's `session` override, else `session.provider`. Pure.
 */
export function sessionPlacement(
  config: CityConfig,
  agent: AgentConfig,
  sessionName: string,
): SessionPlacement {
  const { session } = config;
  const p = session.provider;
  if (p === "auto" || p === "hybrid") {
    const rules: RouteRules =
      p === "auto"
        ? { kind: "auto", default: session.auto.default }
        : {
            kind: "hybrid",
            local: session.hybrid.local,
            remote: session.hybrid.remote,
            remoteMatch: session.hybrid.remote_match,
          };
    const r = routeSession(rules, sessionName, agent.session);
    return { provider: p, backend: r.backend, why: r.why };
  }
  if (agent.session !== undefined) return { provider: agent.session, why: "the agent's session provider" };
  return { provider: p, why: "session.provider" };
}

/** Every concrete backend the city's agents declare (`agents[].session`), for the `auto` router. */
export function declaredBackends(config: CityConfig): string[] {
  return [...new Set(config.agents.flatMap((a) => (a.session === undefined ? [] : [a.session])))];
}

function copyEntries(cityDir: string, agent: AgentConfig): CopyEntry[] {
  return agent.copy_files.map((c) => {
    const spec = typeof c === "string" ? { src: c, dst: undefined } : c;
    return { src: resolvePath(cityDir, spec.src), relDst: spec.dst ?? basename(spec.src) };
  });
}

/** Leaves out `undefined` values and empty lists so equal configs print and compare alike. */
function compact<T extends object>(obj: T): T {
  const out: Record<string, unknown> = {};
  const o = obj as Record<string, unknown>;
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = o[k];
    if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
    out[k] = v;
  }
  return out as T;
}

/**
 * Effective presets by name, decided once per resolution of a city: an agent's preset depends
 * only on the city file and the preset's name (and on whether the agent has a
 * `start_command`, which then has none), and is only read.
 */
type PresetMemo = Map<string, EffectivePreset | undefined>;

function presetOf(config: CityConfig, agent: AgentConfig, memo: PresetMemo): EffectivePreset | undefined {
  if (agent.start_command !== undefined) return undefined;
  const name = agent.provider ?? config.workspace.provider;
  if (name === undefined) return undefined;
  if (memo.has(name)) return memo.get(name);
  const preset = effectivePreset(config, agent);
  memo.set(name, preset);
  return preset;
}

function resolveSession(
  city: CityModel,
  agent: AgentConfig,
  name: string,
  pool: DesiredSession["pool"],
  opts: ResolveOptions,
  presets: PresetMemo = new Map(),
): DesiredSession {
  const { config, cityDir } = city;
  const cityName = config.workspace.name;
  const preset = presetOf(config, agent, presets);
  const vars = { city: cityName, city_dir: cityDir, agent: agent.name, session: name };
  const workDir = resolvePath(cityDir, expandPlaceholders(agent.work_dir ?? agent.dir ?? ".", vars));
  const command =
    agent.start_command ??
    [preset?.command ?? "", ...(agent.args ?? preset?.args ?? [])].map(shellQuote).join(" ");
  const declared = { ...preset?.env, ...agent.env };
  const env: Record<string, string> = {
    ...declared,
    GC_CITY: cityName,
    GC_CITY_PATH: cityDir,
    GC_AGENT: agent.name,
    GC_TEMPLATE: agent.name,
    GC_SESSION: name,
    GC_SESSION_NAME: name,
    GC_DIR: workDir,
  };
  if (preset !== undefined) env.GC_PROVIDER = preset.builtin ?? preset.name;
  if (pool !== undefined) env.GC_POOL_INDEX = String(pool.index);

  const promptText = agent.prompt ?? city.promptTemplates?.[agent.name];
  const mode = effectivePromptMode(
    agent,
    preset === undefined ? undefined : { prompt_mode: preset.promptMode },
  );
  let prompt: string | undefined;
  let nudge = agent.nudge;
  let body: string | undefined;
  if (promptText !== undefined && mode !== "none") {
    body = expandPlaceholders(promptText, { ...vars, work_dir: workDir });
    const initial = `${formatBeacon(cityName, name, opts.now)}\n\n${body}`;
    if (mode === "nudge")
      nudge = nudge === undefined ? initial : `${initial}${PROMPT_NUDGE_SEPARATOR}${nudge}`;
    else prompt = initial;
  }

  const placed = sessionPlacement(config, agent, name);
  const startConfig: StartConfig = compact({
    backend: placed.backend,
    providerSettings: sessionShapingSettings(
      config.session as unknown as Record<string, unknown>,
      placed.backend ?? placed.provider,
    ),
    command,
    workDir,
    env,
    inheritEnv: config.session.inherit_env.length > 0 ? config.session.inherit_env : undefined,
    hookDir: cityDir,
    ...screenRulesWith(agent, preset),
    readyDelayMs: agent.ready_delay_ms ?? preset?.readyDelayMs,
    processNames: agent.process_names ?? preset?.processNames,
    emitsPermissionWarning: (agent.emits_permission_warning ?? preset?.emitsPermissionWarning) || undefined,
    clearInputKeys: agent.clear_input_keys ?? preset?.clearInputKeys,
    interruptKeys: agent.interrupt_keys ?? preset?.interruptKeys,
    readySettleMs: agent.ready_settle_ms ?? preset?.readySettleMs,
    multiline: agent.multiline ?? preset?.multiline,
    nudge,
    prompt,
    promptFlag:
      prompt !== undefined && mode === "flag" ? (agent.prompt_flag ?? preset?.promptFlag) : undefined,
    preStart: agent.pre_start,
    sessionSetup: agent.session_setup,
    sessionSetupScript:
      agent.session_setup_script === undefined ? undefined : resolvePath(cityDir, agent.session_setup_script),
    sessionLive: agent.session_live,
    overlayDir: agent.overlay_dir === undefined ? undefined : resolvePath(cityDir, agent.overlay_dir),
    copyFiles: copyEntries(cityDir, agent),
    startupTimeoutMs: config.session.startup_timeout,
    setupTimeoutMs: config.session.setup_timeout,
  });
  const desired: DesiredSession = {
    name,
    agent: agent.name,
    provider: placed.provider,
    ...(placed.backend === undefined ? {} : { backend: placed.backend }),
    placement: placed.why,
    config: startConfig,
    dependsOn: agent.depends_on,
    suspended: agent.suspended || config.workspace.suspended,
    declaredEnvKeys: Object.keys(declared).sort(),
    startText: compact({ prompt: body, nudge: agent.nudge }),
  };
  return pool === undefined ? desired : { ...desired, pool };
}

/**
 * Every session the city wants now, in file order: one per agent, or instances
 * `<agent>-1` … `<agent>-<min>` for a pool (the reconciler may add instances up to `max`
 * with {@link resolvePoolInstance}). Suspended agents are included with `suspended: true`.
 * `city` must come from {@link loadCity} / `parseCity` (validated). Pure.
 */
export function resolveCity(city: CityModel, opts: ResolveOptions): DesiredSession[] {
  const out: DesiredSession[] = [];
  const presets: PresetMemo = new Map();
  for (const agent of city.config.agents) {
    const bounds = poolBounds(agent);
    if (bounds === undefined) {
      out.push(resolveSession(city, agent, agent.name, undefined, opts, presets));
      continue;
    }
    for (let n = 1; n <= bounds.min; n++) {
      out.push(
        resolveSession(city, agent, poolInstanceName(agent.name, n), { index: n, ...bounds }, opts, presets),
      );
    }
  }
  return out;
}

/**
 * Pool instance `n` (1-based) of agent `agentName`, or `undefined` when the agent is not
 * a pool or `n` is outside `1..max`. Pure.
 */
export function resolvePoolInstance(
  city: CityModel,
  agentName: string,
  n: number,
  opts: ResolveOptions,
): DesiredSession | undefined {
  const agent = city.config.agents.find((a) => a.name === agentName);
  const bounds = agent === undefined ? undefined : poolBounds(agent);
  if (agent === undefined || bounds === undefined || !Number.isInteger(n) || n < 1 || n > bounds.max) {
    return undefined;
  }
  return resolveSession(city, agent, poolInstanceName(agent.name, n), { index: n, ...bounds }, opts);
}

/** The `daemon:` section in the reconciler's terms (camelCase, `Ms` suffixes). */
export interface DaemonSettings {
  readonly intervalMs: number;
  readonly startBudget: number;
  readonly concurrency: number;
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
  readonly quarantineThreshold: number;
  readonly quarantineWindowMs: number;
  readonly drainTimeoutMs: number;
  readonly minHealthyUptimeMs: number;
  /** `daemon.mass_stop_percent`: the mass-stop guard's threshold. */
  readonly massStopPercent: number;
  /** `daemon.events.max_age`: events older than this are pruned. */
  readonly eventMaxAgeMs: number;
  /** `daemon.events.max_count`: at most this many events are kept. */
  readonly eventMaxCount: number;
  /** `session.startup_timeout`: deadline for one start. */
  readonly startupTimeoutMs: number;
  /** `session.setup_timeout`: deadline for each hook command. */
  readonly setupTimeoutMs: number;
}

/** Controller knobs from the city file (structurally a superset of the reconciler's plan policy). Pure. */
export function daemonSettings(config: CityConfig): DaemonSettings {
  const d = config.daemon;
  return {
    intervalMs: d.interval,
    startBudget: d.start_budget,
    concurrency: d.concurrency,
    backoffMinMs: d.backoff.min,
    backoffMaxMs: d.backoff.max,
    quarantineThreshold: d.quarantine.threshold,
    quarantineWindowMs: d.quarantine.window,
    drainTimeoutMs: d.drain_timeout,
    minHealthyUptimeMs: d.min_healthy_uptime,
    massStopPercent: d.mass_stop_percent,
    eventMaxAgeMs: d.events.max_age,
    eventMaxCount: d.events.max_count,
    startupTimeoutMs: config.session.startup_timeout,
    setupTimeoutMs: config.session.setup_timeout,
  };
}
