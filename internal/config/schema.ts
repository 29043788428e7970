/**
 * The city file's schema, declared once. The TypeScript types of the config, the
 * validating decoder and the shipped JSON Schema (`gc config schema`, city.schema.json)
 * are all derived from {@link CITY_SCHEMA}; nothing else describes the file's shape.
 */

import { NAME_JSON, nameField, pathField } from "../base/fields.js";
import { nameProblem } from "../base/names.js";
import { s } from "../base/schema-builder.js";
import type { Infer, JsonSchema } from "../base/schema-core.js";
import {
  listedProviders,
  plainProviderNames,
  providerField,
  providerSettingsFields,
  routingProviderNames,
} from "../runtime/registry/index.js";

/**
 * Routers (runtime/auto/): providers composed of the concrete ones; each session's route is
 * decided by config resolution (resolve.ts, with runtime/auto/route.ts) and carried out by
 * the router. Never a backend themselves.
 */
export const ROUTER_PROVIDERS: readonly string[] = routingProviderNames();
/** Providers that run sessions themselves: the ones this build has (runtime/registry/index.ts). */
export const CONCRETE_SESSION_PROVIDERS: readonly string[] = plainProviderNames();
/** Every name `session.provider` accepts without a `:` argument. */
export const SESSION_PROVIDER_KINDS: readonly string[] = [...CONCRETE_SESSION_PROVIDERS, ...ROUTER_PROVIDERS];
/** How a preset's initial prompt reaches the program. */
export const PROMPT_MODES = ["argument", "flag", "nudge", "none"] as const;
/** A prompt delivery mode. */
export type PromptMode = (typeof PROMPT_MODES)[number];

const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

const name = nameField;
const path = pathField;
const commands = () => s.array(s.string({ nonEmpty: true }));
const env = () =>
  s.record(s.envValue(), {
    keyCheck: (k) =>
      ENV_KEY_RE.test(k) ? undefined : "environment variable names must match [A-Za-z_][A-Za-z0-9_]*",
    keyJson: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
  });

/** Fields a provider preset and an agent share (the agent's value overrides the preset's). */
const LAUNCH_FIELDS = {
  args: s.array(s.string()).optional().describe("Arguments after the command; replaces the preset's list."),
  prompt_mode: s
    .enum(PROMPT_MODES)
    .optional()
    .describe(
      "How the initial prompt is delivered: as an argument, after prompt_flag, as a nudge, or not at all.",
    ),
  prompt_flag: s
    .string({ nonEmpty: true })
    .optional()
    .describe("Flag placed before the prompt (prompt_mode: flag)."),
  ready_prompt_prefix: s
    .string({ nonEmpty: true })
    .optional()
    .describe("The program is ready when a screen line starts with this text."),
  ready_delay_ms: s
    .int({ min: 0, max: 600_000 })
    .optional()
    .describe("When no ready_prompt_prefix is set: wait this many ms before treating the program as ready."),
  process_names: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe("Process names that prove the agent is alive (zombie detection)."),
  emits_permission_warning: s
    .bool()
    .optional()
    .describe("The program shows a bypass-permissions warning at startup."),
  clear_input_keys: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe(
      "Keys that empty the program's input box (key names, e.g. C-u). gc run sends them after interrupting a turn: some agents put the interrupted prompt back there.",
    ),
  interrupt_keys: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe(
      "Keys that interrupt a running turn without quitting the program (key names; e.g. [Escape] for opencode and Ink apps, where C-c quits). gc run --timeout and Ctrl-C send them; default: C-c.",
    ),
  busy_markers: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe(
      "Regular expressions (JavaScript, case-insensitive) that appear on screen only while the program works on a turn, e.g. '\\(\\d+s · esc to cancel\\)'. A screen matching one is never idle for gc run, gc nudge and queued nudges; added to the builtin markers.",
    ),
  ready_markers: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe(
      "Regular expressions (JavaScript, case-insensitive) shown when the program waits for input, wherever it draws its prompt, e.g. 'Type your message'. Start counts the program ready when one shows (as with ready_prompt_prefix); a screen showing one and no busy marker is idle for gc run, nudges and the work state.",
    ),
  error_markers: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe(
      "Regular expressions (JavaScript, case-insensitive) of the program's error lines, e.g. 'quota exceeded'. A line near the bottom of the screen matching one makes the work state error, with that line as its message; added to the builtin markers.",
    ),
  turn_end_markers: s
    .array(s.string({ nonEmpty: true }))
    .optional()
    .describe(
      "Regular expressions (JavaScript, case-insensitive) of the line the program prints when a turn ends, e.g. opencode's '▣ Build · model · 1.2s'. gc run counts a turn over only once the screen shows one the screen before the prompt did not (for programs whose busy marker appears a moment after the prompt is taken).",
    ),
  ready_settle_ms: s
    .int({ min: 0, max: 60_000 })
    .optional()
    .describe(
      "The ready prompt (or a ready marker) must have stayed on screen this long before start counts the program ready, for programs that draw their input before they accept Enter (Codex: 1500).",
    ),
  multiline: s
    .enum(["paste", "lines"] as const)
    .optional()
    .describe(
      "How a nudge of several lines is typed: paste (default) types it as one paste — bracketed when the program enabled bracketed paste — and submits it once; lines types and submits each line on its own, each confirmed, for programs that would take a newline in a paste as Enter or drop it.",
    ),
  env: env().optional().describe("Environment variables; merged over the preset's (agent wins)."),
} as const;

/** A provider preset: how to launch one kind of program. Layered over a builtin of the same name or command. */
export const PRESET_SCHEMA = s.object({
  command: s
    .string({ nonEmpty: true })
    .optional()
    .describe("Executable (looked up on PATH). Required unless the preset layers over a builtin."),
  ...LAUNCH_FIELDS,
});

const COPY_FILE_SCHEMA = s.union(
  path().describe("Source path (relative to the city directory); copied to the work dir under its own name."),
  s.object({
    src: path().describe("Source file or directory, relative to the city directory."),
    dst: s
      .string()
      .optional()
      .describe("Destination relative to the work dir; default: the source's base name."),
  }),
);

/** One agent: a template for one session, or for a pool of `<name>-<n>` sessions. */
export const AGENT_SCHEMA = s.object({
  name: name().describe("Agent name; also the session name (pool instances are <name>-1, <name>-2, …)."),
  provider: s.string({ nonEmpty: true }).optional().describe("Preset name (providers: or a builtin)."),
  start_command: s
    .string({ nonEmpty: true })
    .optional()
    .describe("Whole shell command line; replaces any preset (no provider, no args)."),
  ...LAUNCH_FIELDS,
  prompt: s
    .string()
    .optional()
    .describe("Initial prompt text ({{city}}, {{agent}}, {{session}}, {{work_dir}} expand)."),
  prompt_template: path()
    .optional()
    .describe("File holding the initial prompt, relative to the city directory."),
  work_dir: path()
    .optional()
    .describe("Working directory, relative to the city directory (default: the city directory)."),
  dir: path().optional().describe("Alias of work_dir."),
  create_work_dir: s
    .bool()
    .default(false)
    .describe(
      "Create a work_dir outside the city directory whose parent does not exist (default: that is an error, caught by gc config validate).",
    ),
  pre_start: commands()
    .default([])
    .describe("Shell commands run before the session is created; failure aborts."),
  session_setup: commands().default([]).describe("Shell commands run once the program is ready."),
  session_setup_script: path()
    .optional()
    .describe("Script run after session_setup (path relative to the city)."),
  session_live: commands()
    .default([])
    .describe("Idempotent shell commands; re-applied without restart when they change."),
  overlay_dir: path().optional().describe("Directory copied into the work dir before start (no overwrite)."),
  copy_files: s.array(COPY_FILE_SCHEMA).default([]).describe("Files staged into the work dir before start."),
  nudge: s.string().optional().describe("Text typed into the session once it is ready."),
  min_active_sessions: s
    .int({ min: 0, max: 1000 })
    .optional()
    .describe("Makes the agent a pool: instances <name>-1 … <name>-min always run."),
  max_active_sessions: s
    .int({ min: 1, max: 1000 })
    .optional()
    .describe("Makes the agent a pool: at most this many instances."),
  depends_on: s.array(name(), { unique: true }).default([]).describe("Agents started before this one."),
  session: providerField("concrete")
    .optional()
    .describe("Session provider for this agent's sessions, overriding session.provider."),
  suspended: s.bool().default(false).describe("Declared but not run."),
});

/** What an approval rule (or the policy's fallback) does with a pending interaction. */
export const APPROVAL_ACTIONS = ["approve", "deny", "ask"] as const;

function regexProblem(v: string): string | undefined {
  try {
    new RegExp(v);
    return undefined;
  } catch (e) {
    return `invalid regular expression: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** `session.approval`: how the controller answers pending interactions (approval prompts). */
const APPROVAL_SCHEMA = s.union(
  s.enum(["allow-all", "ask"] as const),
  s.object({
    rules: s
      .array(
        s.object({
          kind: s
            .string({ nonEmpty: true })
            .optional()
            .describe(
              "Interaction kind to match (approval, or permission on acp); default: any. Only approval prompts are the policy's: sign-in and authentication choices, API-key fields and other dialogs or menus are never answered by it.",
            ),
          match: s
            .string({ nonEmpty: true, check: regexProblem })
            .optional()
            .describe("Regular expression searched in the prompt text; default: any prompt."),
          action: s
            .enum(APPROVAL_ACTIONS)
            .describe("approve, deny, or ask (leave it to `gc session respond`)."),
        }),
      )
      .default([])
      .describe("Checked in order; the first matching rule decides."),
    default: s.enum(APPROVAL_ACTIONS).default("ask").describe("What to do when no rule matches."),
  }),
);

/** The whole city file. */
export const CITY_SCHEMA = s.object(
  {
    workspace: s
      .object({
        name: name()
          .optional()
          .describe(
            "City name, for humans; with the id of the city directory it forms the ownership tag and the default tmux socket. Default: the directory name.",
          ),
        provider: s.string({ nonEmpty: true }).optional().describe("Preset for agents that name none."),
        suspended: s.bool().default(false).describe("Suspend every agent of the city."),
      })
      .default({}),
    session: s
      .object({
        provider: providerField("any")
          .optional()
          .describe(
            `${[...listedProviders(), ...ROUTER_PROVIDERS].join(" | ")}; default: tmux if on PATH, else subprocess.`,
          ),
        startup_timeout: s.duration({ min: "1s" }).default("60s").describe("Deadline for one session start."),
        inherit_env: s
          .array(s.string({ nonEmpty: true }))
          .default([])
          .describe(
            "Variables of gc's own environment sessions inherit besides PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, COLORTERM, TZ, TMPDIR, XDG_RUNTIME_DIR (`NAME` or a `PREFIX_*`). Nothing else of gc's environment reaches a session.",
          ),
        approval: APPROVAL_SCHEMA.default("allow-all").describe(
          "Answers pending interactions from the controller: allow-all (approve everything), ask (leave all to `gc session respond`), or {rules, default}.",
        ),
        setup_timeout: s
          .duration({ min: "100ms" })
          .default("10s")
          .describe("Deadline for each pre_start/setup command."),
        // session.tmux, session.exec, session.k8s, session.docker, session.auto, …: each
        // provider's own section, declared in its directory and listed by the registry.
        ...providerSettingsFields(),
      })
      .default({}),
    providers: s
      .record(PRESET_SCHEMA, { keyCheck: (k) => nameProblem(k), keyJson: NAME_JSON })
      .default({})
      .describe(
        "Provider presets, layered over the builtins (claude, codex, gemini, copilot, opencode, bash, sh, python).",
      ),
    agents: s.array(AGENT_SCHEMA).default([]),
    daemon: s
      .object({
        interval: s.duration({ min: "100ms" }).default("30s").describe("Time between reconcile passes."),
        start_budget: s
          .int({ min: 1 })
          .default(20)
          .describe("At most this many session starts (and restarts) per pass."),
        concurrency: s.int({ min: 1, max: 256 }).default(4).describe("Actions run in parallel."),
        backoff: s
          .object({
            min: s.duration({ min: "0" }).default("1s"),
            max: s.duration({ min: "0" }).default("5m"),
          })
          .default({})
          .describe("Restart delay after a crash: doubles from min up to max, with jitter."),
        quarantine: s
          .object({
            threshold: s.int({ min: 1 }).default(5),
            window: s.duration({ min: "1s" }).default("5m"),
          })
          .default({})
          .describe(
            "A session failing threshold times within window is quarantined until `gc session reset`.",
          ),
        drain_timeout: s
          .duration({ min: "0" })
          .default("2m")
          .describe("How long a drain waits for idle before stopping."),
        min_healthy_uptime: s
          .duration({ min: "0" })
          .default("10s")
          .describe("An exit with code 0 after at least this much uptime is a clean exit, not a crash."),
        events: s
          .object({
            max_age: s
              .duration({ min: "1s" })
              .default("168h")
              .describe("Events older than this are deleted from the event log (checked after every pass)."),
            max_count: s
              .int({ min: 1 })
              .default(10000)
              .describe("At most this many events are kept (the newest)."),
          })
          .default({})
          .describe("Event log retention, applied by the controller."),
        mass_stop_percent: s
          .int({ min: 1, max: 100 })
          .default(50)
          .describe(
            "A city-file change that would stop more than this percentage of the running sessions (or all of them, at least two) is not applied until `gc reconcile --allow-mass-stop`.",
          ),
      })
      .default({}),
  },
  // Top-level `x-…` keys are ignored: a place for YAML anchors shared by several agents.
  { extensions: true },
);

/** The city file as decoded: every default from the schema applied, nothing resolved yet. */
export type CityFile = Infer<typeof CITY_SCHEMA>;
/** One `agents[]` entry. */
export type AgentConfig = Infer<typeof AGENT_SCHEMA>;
/** One `providers.<name>` preset (all fields optional: presets layer over builtins). */
export type ProviderPreset = Infer<typeof PRESET_SCHEMA>;
/** One `copy_files` entry as written. */
export type CopyFileConfig = Infer<typeof COPY_FILE_SCHEMA>;
/** The `session:` section (durations in milliseconds). */
export type SessionSection = CityFile["session"];
/** The `daemon:` section (durations in milliseconds). */
export type DaemonSection = CityFile["daemon"];

/** The JSON Schema (draft-07) of the city file, as shipped in city.schema.json. */
export function citySchemaJson(): JsonSchema {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    $id: "https://gc.invalid/city.schema.json",
    title: "gc city file (city.yaml)",
    ...CITY_SCHEMA.jsonSchema(),
  };
}
