/**
 * Builtin provider presets and the layering rule for `providers:` entries. Agent CLIs
 * (claude, codex, gemini, copilot, opencode) and plain programs (bash, sh, python) work with no
 * `providers:` section at all. Pure; used by validation and template resolution.
 */
import { AGENT_SCREEN_MARKERS } from "../runtime/agent-screens.js";
import type { PromptMode, ProviderPreset } from "./schema.js";

/** A preset with every launch field decided (what resolution works from). */
export interface EffectivePreset {
  /** The preset's name as the agent wrote it. */
  readonly name: string;
  /** The builtin it layers over, if any (`claude`, `python`, …). */
  readonly builtin: string | undefined;
  readonly command: string;
  readonly args: readonly string[];
  readonly promptMode: PromptMode;
  readonly promptFlag: string | undefined;
  readonly readyPromptPrefix: string | undefined;
  readonly readyDelayMs: number | undefined;
  readonly processNames: readonly string[];
  readonly emitsPermissionWarning: boolean;
  readonly clearInputKeys: readonly string[] | undefined;
  readonly interruptKeys: readonly string[] | undefined;
  readonly busyMarkers: readonly string[] | undefined;
  readonly readyMarkers: readonly string[] | undefined;
  readonly errorMarkers: readonly string[] | undefined;
  readonly turnEndMarkers: readonly string[] | undefined;
  readonly readySettleMs: number | undefined;
  readonly multiline: "paste" | "lines" | undefined;
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Codex 0.171's screen while a turn runs past its first token (a regular expression source for
 * `busy_markers`, matched on the screen's last lines, see the codex preset): a cell that starts
 * a line with `•`, `◦` or `›` — a submitted prompt, a streamed reply, a command — then lines
 * that start no other cell (`•`, `◦`, `›`, `■`, `⚠`) and are not "Worked for …", then the input
 * box (`› `, not `› 1.` of an approval prompt) and nothing but its footer (indented lines).
 */
export const CODEX_TURN_OPEN = String.raw`(?:^|\n)[•◦›] [^\n]*(?:\n(?![•◦›■⚠]|\s*Worked for )[^\n]*)*\n› (?!\d+\. )[^\n]*(?:\n(?:[ \t][^\n]*)?)*$`;

/**
 * The busy markers gc knows for a builtin agent CLI (runtime/agent-screens.ts), as
 * `busy_markers` sources: a preset that declares them tells the work watcher its program
 * works exactly while one shows (reconcile/work-watch.ts), from the session's first look.
 */
function knownBusy(cli: string): string[] {
  return (AGENT_SCREEN_MARKERS[cli]?.busy ?? []).map((re) => re.source);
}

/**
 * Builtin presets. Agent CLIs take the prompt as an argument; plain programs (shells and
 * the Python REPL) take no prompt, since a beacon line typed into a shell is a command.
 * No builtin adds permission-bypassing flags: put them in `args` if you want them.
 */
export const BUILTIN_PRESETS: Readonly<Record<string, ProviderPreset>> = {
  // Checked against Claude Code 2.1.332, Codex 0.171.0 and Gemini CLI 0.61.0 (recorded
  // screens in test/fixtures/screens/). Ready prompts: Claude "❯ " in its input box, Codex
  // "› " ("› Ask Codex to do anything"), Gemini ">" before "Type your message".
  claude: {
    command: "claude",
    prompt_mode: "argument",
    ready_prompt_prefix: "❯ ",
    ready_delay_ms: 10_000,
    process_names: ["claude", "claude.exe", "node"],
    // An interrupted turn's prompt comes back into the input box; Ctrl-U empties it.
    clear_input_keys: ["C-u"],
    // "esc to interrupt" (Ctrl-C twice quits).
    interrupt_keys: ["Escape"],
    busy_markers: knownBusy("claude"),
  },
  codex: {
    command: "codex",
    prompt_mode: "argument",
    ready_prompt_prefix: "› ",
    ready_delay_ms: 3_000,
    // Codex 0.171 draws "› " at once but swallows Enter while "Waiting for startup" (≈ 1 s).
    ready_settle_ms: 1_500,
    process_names: ["codex", "node"],
    // Escape ("esc to interrupt") ends the turn: "■ Conversation interrupted", the stream dropped.
    interrupt_keys: ["Escape"],
    // "Working (… esc to interrupt)" shows only until the first token; while the reply streams
    // (and through a silence mid-stream) the screen shows the partial reply and the input box
    // alone. A turn is over when "Worked for Ns • HH:MM" (done) or a "■" line (interrupted,
    // failed) follows it: busy while the last cell, a submitted prompt (`› …`) or an output
    // cell (`• …`), is followed by neither before the input box (the last `› ` line, not a
    // numbered option of an approval prompt). Checked against live turns
    // (test/runtime/codex-screens.test.ts).
    // "Waiting for startup" (its MCP start, seconds on a busy machine) also counts as busy:
    // a prompt submitted meanwhile sits in the input box until it is over.
    busy_markers: [...knownBusy("codex"), CODEX_TURN_OPEN, "Waiting for startup"],
    // `gc run` also waits for the turn's own closing line: under load Codex can draw the
    // submitted prompt late, and a screen that has not shown it yet looks idle.
    turn_end_markers: [String.raw`Worked for [^\n]*`, String.raw`^■ [^\n]*`],
  },
  gemini: {
    command: "gemini",
    prompt_mode: "argument",
    ready_prompt_prefix: "> ",
    ready_delay_ms: 5_000,
    process_names: ["gemini", "node"],
    // "esc to cancel" ends the turn (Ctrl-C twice quits). Its busy screens (the spinner, a
    // prompt queued while it initialises) are in agent-screens.ts; an Enter it takes as a
    // newline right after a paste is handled by delivery (runtime/screen/delivery.ts).
    interrupt_keys: ["Escape"],
    busy_markers: knownBusy("gemini"),
    // `gc run` ends a turn only once the turn drew its reply (`✦`), an error (`✕`) or a
    // cancellation: for a moment after Enter (longer on a busy machine) the screen looks idle.
    turn_end_markers: [String.raw`✦ [^\n]*`, String.raw`✕ [^\n]*`, String.raw`Request cancelled[^\n]*`],
  },
  // Checked against GitHub Copilot CLI 1.0.102 and opencode 1.18.33 (recorded screens).
  // Copilot: "❯ " in its input box (it needs `/login` before it takes a turn); opencode: the
  // agent line under its input box ("┃  Build · <model> <provider>", the default agent), there
  // at start and after every turn (the "Ask anything…" placeholder is gone after the first
  // turn: test/agents/turns.e2e.test.ts); busy is told by "esc interrupt" (agent-screens.ts).
  copilot: {
    command: "copilot",
    prompt_mode: "flag",
    prompt_flag: "--interactive",
    ready_prompt_prefix: "❯ ",
    ready_delay_ms: 5_000,
    process_names: ["copilot", "node"],
    interrupt_keys: ["Escape"],
  },
  opencode: {
    command: "opencode",
    prompt_mode: "flag",
    prompt_flag: "--prompt",
    ready_prompt_prefix: "Build · ",
    ready_delay_ms: 3_000,
    process_names: ["opencode"],
    // Its busy marker shows a moment after the prompt is taken (the prompt is drawn in the
    // transcript first); a turn has ended once a new reply tag with the turn's time (or
    // "interrupted") shows: "▣  Build · Test model · 451ms".
    turn_end_markers: [
      String.raw`▣\s+[^·]+(?:·[^·]+)*?·\s*(?:(?:\d+h\s*)?(?:\d+m\s*)?\d+(?:\.\d+)?m?s|interrupted)\b`,
    ],
    // Ctrl-C quits opencode; Escape twice ("esc interrupt", then "esc again to interrupt")
    // ends the turn.
    interrupt_keys: ["Escape", "Escape"],
    busy_markers: knownBusy("opencode"),
  },
  bash: {
    command: "bash",
    args: ["--noprofile", "--norc", "-i"],
    prompt_mode: "none",
    process_names: ["bash"],
  },
  sh: { command: "sh", args: ["-i"], prompt_mode: "none", process_names: ["sh"] },
  python: {
    command: "python3",
    args: ["-i", "-q"],
    prompt_mode: "none",
    ready_prompt_prefix: ">>> ",
    process_names: ["python3"],
  },
  // ACP agents (session.provider: acp): the prompt is the first session/prompt (nudge).
  // Run live (test/agents/acp-live.e2e.test.ts) against Gemini CLI 0.61.0,
  // @zed-industries/claude-code-acp 0.16.2 and @zed-industries/codex-acp 0.16.0 (docs/acp.md).
  "gemini-acp": {
    command: "gemini",
    args: ["--acp"],
    prompt_mode: "nudge",
    process_names: ["gemini", "node"],
  },
  "claude-acp": {
    command: "claude-code-acp",
    prompt_mode: "nudge",
    process_names: ["claude-code-acp", "node"],
  },
  "codex-acp": { command: "codex-acp", prompt_mode: "nudge", process_names: ["codex-acp", "node"] },
};

/** Names of the builtin presets. */
export const BUILTIN_PRESET_NAMES: readonly string[] = Object.keys(BUILTIN_PRESETS);

function commandBase(command: string | undefined): string | undefined {
  if (command === undefined) return undefined;
  return command.split("/").pop();
}

/**
 * The builtin a city preset layers over: the builtin of the same name, else the builtin
 * whose command is the preset's command (`command: python3` → `python`), else none.
 */
export function builtinBaseOf(name: string, preset: ProviderPreset | undefined): string | undefined {
  if (BUILTIN_PRESETS[name] !== undefined) return name;
  const cmd = commandBase(preset?.command);
  if (cmd === undefined) return undefined;
  return BUILTIN_PRESET_NAMES.find((b) => BUILTIN_PRESETS[b]!.command === cmd || b === cmd);
}

/**
 * Layers `over` on `base`: scalars and lists of `over` replace when present, `env` maps
 * merge (`over` wins). Pure.
 */
export function layerPreset(base: ProviderPreset, over: ProviderPreset): ProviderPreset {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    out[k] = k === "env" ? { ...base.env, ...(v as Record<string, string>) } : v;
  }
  return out as ProviderPreset;
}

/**
 * The declared preset `name` (city entry layered over its builtin, or the builtin alone),
 * or `undefined` when neither exists. Pure.
 */
export function lookupPreset(
  name: string,
  cityPresets: Readonly<Record<string, ProviderPreset>>,
): { readonly preset: ProviderPreset; readonly builtin: string | undefined } | undefined {
  const city = cityPresets[name];
  const builtin = builtinBaseOf(name, city);
  if (city === undefined) {
    return builtin === undefined ? undefined : { preset: BUILTIN_PRESETS[builtin]!, builtin };
  }
  return { preset: builtin === undefined ? city : layerPreset(BUILTIN_PRESETS[builtin]!, city), builtin };
}

/** All preset names an agent may use: the city's and the builtins. */
export function presetNames(cityPresets: Readonly<Record<string, ProviderPreset>>): string[] {
  return [...new Set([...Object.keys(cityPresets), ...BUILTIN_PRESET_NAMES])];
}
