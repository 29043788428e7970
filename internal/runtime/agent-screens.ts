/**
 * What a full-screen agent CLI's own screen says about its turn: the busy markers it shows
 * while working (Claude Code and Codex "esc to interrupt", Gemini CLI "(esc to cancel, Ns)",
 * opencode "esc interrupt")
 * and the idle markers of its input area. Checked against the recorded screens in
 * test/fixtures/screens/ (versions in versions.json there). Pure data and pure functions;
 * the providers' idle checks and `gc run`'s end-of-turn detection use them.
 */

/** The markers of one agent CLI. */
export interface AgentScreenMarkers {
  /** Shown only while a turn is running. */
  readonly busy: readonly RegExp[];
  /** Shown by the input area when the agent waits for the next prompt. */
  readonly idle: readonly RegExp[];
}

/** Markers per builtin agent preset. */
export const AGENT_SCREEN_MARKERS: Readonly<Record<string, AgentScreenMarkers>> = {
  claude: {
    busy: [/\besc to interrupt\b/i],
    idle: [/shift\+tab to cycle|\? for shortcuts/i],
  },
  codex: {
    busy: [/\besc to interrupt\b/i],
    idle: [/\? for shortcuts|Ask Codex to do anything/i],
  },
  gemini: {
    busy: [/\(esc to cancel\b/i],
    idle: [/Type your message or @path\/to\/file/i],
  },
  // opencode 1.18: "esc interrupt" in the footer while a turn runs; "ctrl+p commands" always.
  opencode: {
    busy: [/\besc interrupt\b/i],
    idle: [/ctrl\+p commands/i],
  },
  // GitHub Copilot CLI has no entry: offline (no sign-in) it never starts a turn, so no busy
  // screen could be recorded; its turn state is left to the generic markers.
};

/** Generic busy markers (other CLIs that say so the same way). */
const GENERIC_BUSY: readonly RegExp[] = [/Press Esc or Ctrl\+C to cancel/i, /\bctrl\+c to interrupt\b/i];

const ALL_BUSY: readonly RegExp[] = [
  ...new Set([...Object.values(AGENT_SCREEN_MARKERS).flatMap((m) => m.busy), ...GENERIC_BUSY]),
];

/** True when the screen shows any known agent's "working" marker. Pure. */
export function screenShowsBusyMarker(screen: string): boolean {
  return ALL_BUSY.some((re) => re.test(screen));
}

/**
 * The turn state `screen` shows for agent `agent` (a builtin preset name): `busy` while a
 * busy marker is on screen, `idle` when only its idle markers are, `unknown` otherwise
 * (including for agents without markers). Pure.
 */
export function agentTurnState(agent: string, screen: string): "busy" | "idle" | "unknown" {
  const m = AGENT_SCREEN_MARKERS[agent];
  if (!m) return screenShowsBusyMarker(screen) ? "busy" : "unknown";
  if (m.busy.some((re) => re.test(screen))) return "busy";
  return m.idle.some((re) => re.test(screen)) ? "idle" : "unknown";
}
