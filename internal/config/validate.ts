/**
 * Semantic checks of a decoded city file: what the schema alone cannot say (duplicate and
 * colliding names, unknown providers, `depends_on` targets and cycles, pool bounds,
 * options that would be silently ignored). Every issue is located by key path. Pure.
 */
import type { ConfigIssue } from "../base/errors.js";
import { nameProblem } from "../base/names.js";
import type { Position } from "../base/schema-core.js";
import { didYouMean } from "../base/suggest.js";
import { PROVIDERS } from "../runtime/registry/index.js";
import { BUILTIN_PRESETS, builtinBaseOf, lookupPreset, presetNames } from "./builtins.js";
import { PROMPT_PLACEHOLDERS, placeholderProblems, WORK_DIR_PLACEHOLDERS } from "./placeholders.js";
import type { AgentConfig, CityFile, PromptMode, ProviderPreset } from "./schema.js";

/** Env keys gc sets itself; declaring one is an error. */
export const RESERVED_ENV_KEYS: readonly string[] = [
  "GC_CITY",
  "GC_CITY_PATH",
  "GC_AGENT",
  "GC_TEMPLATE",
  "GC_SESSION",
  "GC_SESSION_NAME",
  "GC_DIR",
  "GC_PROVIDER",
  "GC_POOL_INDEX",
];

/** Adds located issues; knows which paths already have one so follow-on noise is skipped. */
export class IssueReporter {
  readonly issues: ConfigIssue[];
  private readonly file: string;
  private readonly positions: ReadonlyMap<string, Position>;

  constructor(file: string, positions: ReadonlyMap<string, Position>, issues: ConfigIssue[]) {
    this.file = file;
    this.positions = positions;
    this.issues = issues;
  }

  /** Position of `path`, or of its nearest ancestor that was in the file. */
  locate(path: string): Position {
    let p = path;
    for (;;) {
      const pos = this.positions.get(p);
      if (pos) return pos;
      const cut = Math.max(p.lastIndexOf("."), p.lastIndexOf("["));
      if (cut <= 0) return this.positions.get("") ?? { line: 1, col: 1 };
      p = p.slice(0, cut);
    }
  }

  /** Records `message` at `path`. */
  add(path: string, message: string): void {
    const { line, col } = this.locate(path);
    this.issues.push({ file: this.file, line, col, path, message });
  }

  /** True when `path` or anything under it already has an issue. */
  tainted(path: string): boolean {
    return this.issues.some(
      (i) => i.path === path || i.path.startsWith(`${path}.`) || i.path.startsWith(`${path}[`),
    );
  }

  /** `line N` of `path`, for "first defined at" hints. */
  lineOf(path: string): number {
    return this.locate(path).line;
  }
}

/** The prompt mode an agent ends up with (agent, then preset, then the default). */
export function effectivePromptMode(agent: AgentConfig, preset: ProviderPreset | undefined): PromptMode {
  if (agent.prompt_mode) return agent.prompt_mode;
  if (agent.start_command !== undefined) return "none";
  return preset?.prompt_mode ?? "argument";
}

/** Pool bounds, or `undefined` for a single-session agent. Only `max` given → min 1; only `min` → max = min. */
export function poolBounds(agent: AgentConfig): { readonly min: number; readonly max: number } | undefined {
  const { min_active_sessions: min, max_active_sessions: max } = agent;
  if (min === undefined && max === undefined) return undefined;
  const lo = min ?? 1;
  return { min: lo, max: max ?? Math.max(lo, 1) };
}

/** Session name of pool instance `n` (1-based) of `agent`: `<agent>-<n>`. */
export function poolInstanceName(agent: string, n: number): string {
  return `${agent}-${n}`;
}

function checkEnv(r: IssueReporter, env: Readonly<Record<string, string>> | undefined, path: string): void {
  for (const k of Object.keys(env ?? {})) {
    if (RESERVED_ENV_KEYS.includes(k)) r.add(`${path}.${k}`, `${k} is set by gc and cannot be declared`);
  }
}

/** The launch keys holding screen markers (regular expression sources). */
const MARKER_KEYS = ["busy_markers", "ready_markers", "error_markers", "turn_end_markers"] as const;

/** Each `busy_markers`, `ready_markers`, `error_markers` and `turn_end_markers` entry must be a valid regular expression. */
function checkMarkers(r: IssueReporter, markers: readonly string[] | undefined, path: string): void {
  (markers ?? []).forEach((m, i) => {
    try {
      new RegExp(m, "i");
    } catch (e) {
      r.add(`${path}[${i}]`, `not a valid regular expression: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
}

function checkPresetPrompt(r: IssueReporter, p: ProviderPreset, path: string): void {
  if (p.prompt_mode === "flag" && p.prompt_flag === undefined) {
    r.add(`${path}.prompt_mode`, `prompt_mode "flag" needs prompt_flag (e.g. "--prompt")`);
  }
  const mode = p.prompt_mode ?? "argument";
  if (p.prompt_flag !== undefined && mode !== "flag") {
    r.add(
      `${path}.prompt_flag`,
      `prompt_flag is only used with prompt_mode "flag" (prompt_mode is "${mode}")`,
    );
  }
}

/** Concrete backends the city will use, with who asked for each (for "required when used" checks). */
function backendsInUse(city: CityFile): Map<string, string> {
  const used = new Map<string, string>();
  const note = (b: string | undefined, by: string) => {
    if (b !== undefined && !used.has(b)) used.set(b, by);
  };
  const p = city.session.provider;
  if (p === "hybrid") {
    note(city.session.hybrid.local, "session.hybrid.local");
    note(city.session.hybrid.remote, "session.hybrid.remote");
  } else if (p === "auto") note(city.session.auto.default, "session.auto.default");
  else note(p, "session.provider");
  city.agents.forEach((a, i) => {
    note(a.session, `agents[${i}].session`);
  });
  return used;
}

function checkSession(r: IssueReporter, city: CityFile): void {
  const { session } = city;
  const match = session.hybrid.remote_match;
  if (match !== undefined) {
    try {
      new RegExp(match);
    } catch (e) {
      r.add("session.hybrid.remote_match", (e as Error).message);
    }
  }
  const used = backendsInUse(city);
  const sections = session as unknown as Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  for (const e of PROVIDERS) {
    const by = used.get(e.name);
    if (by === undefined || r.tainted(`session.${e.name}`)) continue;
    for (const key of e.requiredWhenUsed ?? []) {
      if (sections[e.name]?.[key] === undefined) {
        r.add(`session.${e.name}.${key}`, `required when the ${e.name} session provider is used (by ${by})`);
      }
    }
  }
}

function checkProviders(r: IssueReporter, city: CityFile): void {
  for (const [name, preset] of Object.entries(city.providers)) {
    const path = `providers.${name}`;
    if (
      preset.command === undefined &&
      builtinBaseOf(name, preset) === undefined &&
      !r.tainted(`${path}.command`)
    ) {
      const builtins = Object.keys(BUILTIN_PRESETS).join(", ");
      r.add(
        path,
        `missing required key "command" (only presets named after a builtin — ${builtins} — may omit it)`,
      );
    }
    const layered = lookupPreset(name, city.providers)?.preset ?? preset;
    checkPresetPrompt(r, layered, path);
    checkEnv(r, preset.env, `${path}.env`);
    for (const k of MARKER_KEYS) checkMarkers(r, preset[k], `${path}.${k}`);
  }
}

function checkAgentLaunch(r: IssueReporter, city: CityFile, a: AgentConfig, path: string): void {
  if (a.start_command !== undefined && a.provider !== undefined) {
    r.add(`${path}.start_command`, "set either start_command (the whole command line) or provider, not both");
  }
  if (a.start_command !== undefined && a.args !== undefined) {
    r.add(`${path}.args`, "args cannot be combined with start_command (put the arguments in start_command)");
  }
  let preset: ProviderPreset | undefined;
  if (a.start_command === undefined) {
    const name = a.provider ?? city.workspace.provider;
    const where = a.provider !== undefined ? `${path}.provider` : "workspace.provider";
    if (name === undefined) {
      if (
        !r.tainted(`${path}.provider`) &&
        !r.tainted(`${path}.start_command`) &&
        !r.tainted("workspace.provider")
      ) {
        r.add(path, "no provider: set provider or start_command here, or workspace.provider for every agent");
      }
    } else {
      preset = lookupPreset(name, city.providers)?.preset;
      // An unknown workspace.provider is reported once, by validateCity.
      if (preset === undefined && a.provider !== undefined) {
        r.add(
          where,
          `unknown provider ${JSON.stringify(name)}${didYouMean(name, presetNames(city.providers))}; known: ${presetNames(city.providers).join(", ")}`,
        );
      }
    }
  }
  if (a.work_dir !== undefined && a.dir !== undefined) {
    r.add(`${path}.dir`, "dir is an alias of work_dir: set only one");
  }
  if (a.prompt !== undefined && a.prompt_template !== undefined) {
    r.add(`${path}.prompt_template`, "set either prompt or prompt_template, not both");
  }
  const mode = effectivePromptMode(a, preset);
  const flag = a.prompt_flag ?? preset?.prompt_flag;
  const modeFrom =
    a.prompt_mode !== undefined
      ? ""
      : ` (from provider ${JSON.stringify(a.provider ?? city.workspace.provider)})`;
  if (mode === "flag" && flag === undefined && !r.tainted(`${path}.prompt_flag`)) {
    r.add(`${path}.prompt_mode`, `prompt_mode "flag" needs prompt_flag (e.g. "--prompt")`);
  }
  if (a.prompt_flag !== undefined && mode !== "flag") {
    r.add(
      `${path}.prompt_flag`,
      `prompt_flag is only used with prompt_mode "flag" (prompt_mode is "${mode}"${modeFrom})`,
    );
  }
  const promptKey =
    a.prompt !== undefined ? "prompt" : a.prompt_template !== undefined ? "prompt_template" : undefined;
  if (promptKey !== undefined && mode === "none" && (preset !== undefined || a.start_command !== undefined)) {
    const why =
      a.prompt_mode !== undefined
        ? ""
        : a.start_command !== undefined
          ? " (start_command defaults to it)"
          : modeFrom;
    r.add(
      `${path}.${promptKey}`,
      `the prompt would never be delivered: prompt_mode is "none"${why}; set prompt_mode to "nudge" to type it into the session`,
    );
  }
}

function checkAgentFields(r: IssueReporter, a: AgentConfig, path: string): void {
  checkEnv(r, a.env, `${path}.env`);
  for (const k of MARKER_KEYS) if (a[k] !== undefined) checkMarkers(r, a[k], `${path}.${k}`);
  if (a.prompt !== undefined) {
    for (const p of placeholderProblems(a.prompt, PROMPT_PLACEHOLDERS)) r.add(`${path}.prompt`, p.message);
  }
  const wd = a.work_dir !== undefined ? "work_dir" : "dir";
  const wdText = a.work_dir ?? a.dir;
  if (wdText !== undefined) {
    for (const p of placeholderProblems(wdText, WORK_DIR_PLACEHOLDERS)) r.add(`${path}.${wd}`, p.message);
  }
  a.copy_files.forEach((c, k) => {
    if (typeof c === "string" || c.dst === undefined) return;
    const parts = c.dst.split("/");
    if (c.dst.startsWith("/") || parts.includes("..")) {
      r.add(
        `${path}.copy_files[${k}].dst`,
        `must be a path inside the work dir (relative, no ".."), got ${JSON.stringify(c.dst)}`,
      );
    }
  });
  const { min_active_sessions: min, max_active_sessions: max } = a;
  if (min !== undefined && max !== undefined && min > max) {
    r.add(
      `${path}.min_active_sessions`,
      `min_active_sessions (${min}) is greater than max_active_sessions (${max})`,
    );
  }
}

function checkSessionOverride(r: IssueReporter, city: CityFile, a: AgentConfig, path: string): void {
  if (a.session === undefined) return;
  if (city.session.provider === "hybrid") {
    r.add(
      `${path}.session`,
      "per-agent session providers cannot be combined with session.provider hybrid (it routes by session.hybrid.remote_match); use auto",
    );
  }
}

/** Words that commands taking a SESSION read as their own subcommand (`gc wait list`). */
const RESERVED_SESSION_NAMES: ReadonlySet<string> = new Set(["list"]);

/**
 * Session names each agent claims, to find collisions between pools and single agents and
 * names that commands would read as a subcommand.
 */
function checkSessionNames(r: IssueReporter, agents: readonly AgentConfig[]): void {
  const owner = new Map<string, { agent: string; index: number }>();
  const seenAgents = new Set<string>();
  agents.forEach((a, i) => {
    // Duplicate agents are reported on their own; their sessions are the first one's.
    if (typeof a.name !== "string" || seenAgents.has(a.name)) return;
    seenAgents.add(a.name);
    const bounds = poolBounds(a);
    const names: string[] = bounds ? [] : [a.name];
    if (bounds) {
      const longest = poolInstanceName(a.name, bounds.max);
      const why = nameProblem(longest);
      if (why !== undefined) {
        r.add(`agents[${i}].name`, `pool instance name ${JSON.stringify(longest)} is invalid: ${why}`);
        return;
      }
      for (let n = 1; n <= bounds.max; n++) names.push(poolInstanceName(a.name, n));
    }
    const reserved = names.find((n) => RESERVED_SESSION_NAMES.has(n));
    if (reserved !== undefined) {
      r.add(
        `agents[${i}].name`,
        `session name ${JSON.stringify(reserved)} is reserved: \`gc wait ${reserved}\` and \`gc nudge ${reserved}\` take it as their subcommand (choose another name)`,
      );
      return;
    }
    const describe = (session: string, agent: string) =>
      session === agent
        ? `agent ${JSON.stringify(agent)}`
        : `pool instance ${session} of agent ${JSON.stringify(agent)}`;
    for (const n of names) {
      const prev = owner.get(n);
      if (prev !== undefined && prev.agent !== a.name) {
        const line = r.lineOf(`agents[${prev.index}].name`);
        r.add(
          `agents[${i}].name`,
          `session name collision: ${describe(n, a.name)} and ${describe(n, prev.agent)} (line ${line})`,
        );
        return;
      }
      owner.set(n, { agent: a.name, index: i });
    }
  });
}

function checkDependencies(r: IssueReporter, agents: readonly AgentConfig[]): void {
  const index = new Map<string, number>();
  agents.forEach((a, i) => {
    if (typeof a.name === "string" && !index.has(a.name)) index.set(a.name, i);
  });
  const names = [...index.keys()];
  const edges = new Map<number, { to: number; j: number }[]>();
  agents.forEach((a, i) => {
    const out: { to: number; j: number }[] = [];
    a.depends_on.forEach((d, j) => {
      const p = `agents[${i}].depends_on[${j}]`;
      const to = index.get(d);
      if (d === a.name) r.add(p, `agent ${JSON.stringify(a.name)} cannot depend on itself`);
      else if (to === undefined) r.add(p, `unknown agent ${JSON.stringify(d)}${didYouMean(d, names)}`);
      else out.push({ to, j });
    });
    edges.set(i, out);
  });
  // Depth-first search; a back edge closes a cycle, reported once at that edge.
  const state = new Map<number, "active" | "done">();
  const stack: number[] = [];
  const visit = (i: number): void => {
    state.set(i, "active");
    stack.push(i);
    for (const { to, j } of edges.get(i) ?? []) {
      const st = state.get(to);
      if (st === "active") {
        const cycle = [...stack.slice(stack.indexOf(to)), to].map((k) => agents[k]!.name);
        r.add(`agents[${i}].depends_on[${j}]`, `dependency cycle: ${cycle.join(" → ")}`);
      } else if (st === undefined) visit(to);
    }
    stack.pop();
    state.set(i, "done");
  };
  for (const i of edges.keys()) if (!state.has(i)) visit(i);
}

/** Adds an issue for every semantic problem of `city` (decoded, possibly partially). */
export function validateCity(city: CityFile, r: IssueReporter): void {
  const wsProvider = city.workspace.provider;
  if (wsProvider !== undefined && lookupPreset(wsProvider, city.providers) === undefined) {
    const presets = presetNames(city.providers);
    r.add(
      "workspace.provider",
      `unknown provider ${JSON.stringify(wsProvider)}${didYouMean(wsProvider, presets)}; known: ${presets.join(", ")}`,
    );
  }
  checkSession(r, city);
  checkProviders(r, city);
  const first = new Map<string, number>();
  city.agents.forEach((a, i) => {
    const path = `agents[${i}]`;
    if (typeof a.name === "string") {
      const prev = first.get(a.name);
      if (prev !== undefined) {
        r.add(
          `${path}.name`,
          `duplicate agent name ${JSON.stringify(a.name)} (first defined at line ${r.lineOf(`agents[${prev}].name`)})`,
        );
      } else first.set(a.name, i);
    }
    checkAgentLaunch(r, city, a, path);
    checkAgentFields(r, a, path);
    checkSessionOverride(r, city, a, path);
  });
  checkSessionNames(r, city.agents);
  checkDependencies(r, city.agents);
  const { backoff } = city.daemon;
  if (backoff.min > backoff.max) r.add("daemon.backoff.min", "backoff.min is greater than backoff.max");
}
