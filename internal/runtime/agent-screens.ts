/**
 * What a full-screen agent CLI's own screen says about its turn: the busy markers it shows
 * while working (Claude Code and Codex "esc to interrupt", Gemini CLI "(esc to cancel, Ns)",
 * opencode "esc interrupt"). Checked against the recorded screens in test/fixtures/screens/
 * (versions in versions.json there); and what a city's preset adds for its own CLI
 * ({@link ScreenRules}: ready, busy and error markers). Pure data and pure functions; the one idle rule
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
  // Gemini CLI 0.61: its spinner line "(esc to cancel, Ns)"; and a prompt submitted before it
  // finished initialising (it draws its input box first, its header and history only once
  // initialised) waits in its queue with no spinner: listed under "Queued (press ↑ to edit):"
  // above the input box, and noted in the history as "ℹ Initializing... Prompts will be
  // queued." (busy until the turn's first reply `✦`, error `✕` or cancellation is drawn below).
  gemini: {
    busy: [
      /\(esc to cancel\b/i,
      /\bQueued \(press ↑ to edit\):/,
      /Initializing\.\.\. Prompts will be queued\.(?![\s\S]*(?:✦|✕|Request cancelled))/,
    ],
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

/**
 * What a session's preset says about its screen, beside the builtin markers (preset and agent
 * keys `ready_prompt_prefix`, `ready_markers`, `busy_markers`, `error_markers`). Markers are
 * regular expression sources, matched case-insensitively on the last
 * {@link MARKER_WINDOW_LINES} lines of the screen (error markers on the bottom lines only:
 * work.ts `ERROR_WINDOW_LINES`). `StartConfig` carries them, so a session's config is one.
 */
export interface ScreenRules {
  /** A screen line starting with it (trimmed, box borders too) is the ready prompt. */
  readonly readyPromptPrefix?: string | undefined;
  /** Shown when the program waits for input (and no busy marker shows). */
  readonly readyMarkers?: readonly string[] | undefined;
  /** Shown only while the program works on a turn. */
  readonly busyMarkers?: readonly string[] | undefined;
  /** A line showing one is the program's error (`work: error` with that line). */
  readonly errorMarkers?: readonly string[] | undefined;
}

/** Lines at the bottom of a screen that a session's own markers are looked for in. */
export const MARKER_WINDOW_LINES = 50;

const compiled = new Map<string, RegExp>();

/** `source` as a case-insensitive regular expression (compiled once). @throws SyntaxError when invalid. */
export function markerRegExp(source: string): RegExp {
  let re = compiled.get(source);
  if (re === undefined) {
    re = new RegExp(source, "i");
    if (compiled.size > 1_000) compiled.clear();
    compiled.set(source, re);
  }
  return re;
}

/** The last {@link MARKER_WINDOW_LINES} lines of `screen` (CRLF as LF, trailing blank lines dropped). Pure. */
export function markerWindow(screen: string): string {
  const lines = screen.replace(/\r\n?/g, "\n").split("\n");
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === "") lines.pop();
  return lines.slice(-MARKER_WINDOW_LINES).join("\n");
}

/** True when one of `markers` (regular expression sources) matches the bottom of `screen`. Pure. */
export function screenShowsMarker(screen: string, markers: readonly string[] | undefined): boolean {
  if (!markers || markers.length === 0) return false;
  const tail = markerWindow(screen);
  return markers.some((m) => markerRegExp(m).test(tail));
}
