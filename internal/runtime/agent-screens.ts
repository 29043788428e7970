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
  // After one Escape: "esc again to interrupt" (a second Escape ends the turn).
  opencode: {
    busy: [/\besc interrupt\b/i, /\besc again to interrupt\b/i],
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
 * Which busy markers `screen` shows: the builtin ones (anywhere) and the session's own
 * (`own`, on the bottom lines as {@link screenShowsMarker} reads them), as their sources;
 * empty when it shows none. Pure.
 */
export function busyMarkersShown(screen: string, own: readonly string[] = []): string[] {
  const tail = own.length > 0 ? markerWindow(screen) : "";
  return [
    ...new Set([
      ...ALL_BUSY.filter((re) => re.test(screen)).map((re) => re.source),
      ...own.filter((m) => markerRegExp(m).test(tail)),
    ]),
  ];
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
  /**
   * Printed when a turn ends (opencode's `▣ Build · model · 1.2s`): `gc run` counts its turn
   * over only once the screen shows one the screen before the prompt did not
   * ({@link showsNewMarker}).
   */
  readonly turnEndMarkers?: readonly string[] | undefined;
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

/** Every text matching one of `markers` on `screen` (matched per line, as often as it shows). Pure. */
function markerHits(screen: string, markers: readonly string[]): string[] {
  const hits: string[] = [];
  for (const line of screen.replace(/\r\n?/g, "\n").split("\n")) {
    for (const m of markers) {
      const hit = markerRegExp(m).exec(line);
      if (hit) hits.push(hit[0]);
    }
  }
  return hits;
}

/**
 * True when `screen` shows a text matching one of `markers` more often than `before` did: a
 * marker printed since (an old one that scrolled away makes room for a new one of the same
 * text only when the screen holds more of it than before). Only the matched text counts, not
 * the rest of its line (a full-screen program draws a sidebar beside its transcript).
 * `false` when there are no markers. Pure.
 */
export function showsNewMarker(
  before: string,
  screen: string,
  markers: readonly string[] | undefined,
): boolean {
  if (!markers || markers.length === 0) return false;
  const seen = new Map<string, number>();
  for (const h of markerHits(before, markers)) seen.set(h, (seen.get(h) ?? 0) + 1);
  for (const h of markerHits(screen, markers)) {
    const n = seen.get(h) ?? 0;
    if (n === 0) return true;
    seen.set(h, n - 1);
  }
  return false;
}
