/**
 * What a full-screen agent CLI's own screen says about its turn: the busy markers it shows
 * while working (Claude Code and Codex "esc to interrupt", Gemini CLI "(esc to cancel, Ns)",
 * opencode "esc interrupt"). Checked against the recorded screens in test/fixtures/screens/
 * (versions in versions.json there). Pure data and a pure function; the one idle rule
 * (`screenLooksIdle` in screen/classify.ts: no busy marker, no dialog, the preset's ready prompt on
 * screen) uses them, so the providers' idle waits and `gc run`'s end of turn do.
 */

/** The markers of one agent CLI. */
export interface AgentScreenMarkers {
  /** Shown only while a turn is running. */
  readonly busy: readonly RegExp[];
}

/** Markers per builtin agent preset. */
export const AGENT_SCREEN_MARKERS: Readonly<Record<string, AgentScreenMarkers>> = {
  claude: {
    busy: [/\besc to interrupt\b/i],
  },
  codex: {
    busy: [/\besc to interrupt\b/i],
  },
  gemini: {
    busy: [/\(esc to cancel\b/i],
  },
  // opencode 1.18: "esc interrupt" in the footer while a turn runs; "ctrl+p commands" always.
  opencode: {
    busy: [/\besc interrupt\b/i],
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
