/**
 * Codex 0.171's screens during real turns (captured with `tmux capture-pane -p` at 200×50 and
 * 120×40 while Codex talked to the model-API double, test/agents/model-api/), read with the
 * codex preset's busy marker (internal/config/builtins.ts `CODEX_TURN_OPEN`): Codex draws
 * "Working (… esc to interrupt)" only until the first token, so a streaming reply — and a
 * silence mid-stream — is told from a finished turn by what follows the last cell ("Worked for
 * …" or a "■" line) and not by a spinner.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BUILTIN_PRESETS, CODEX_TURN_OPEN } from "../../internal/config/builtins.js";
import { markerRegExp, screenShowsMarker, showsNewMarker } from "../../internal/runtime/agent-screens.js";
import { findInteraction, screenLooksIdle } from "../../internal/runtime/screen/classify.js";
import { classifyScreen, type WorkState } from "../../internal/runtime/screen/work.js";

const codex = BUILTIN_PRESETS.codex!;
const rules = { busyMarkers: codex.busy_markers, readyPromptPrefix: codex.ready_prompt_prefix };

function screen(name: string): string {
  return readFileSync(new URL(`../fixtures/screens/codex-turn/${name}.txt`, import.meta.url), "utf8");
}

/** Each recorded moment of a turn: whether the preset's busy marker shows, and the work state. */
const MOMENTS: [string, boolean, WorkState | undefined, string][] = [
  ["startup-200x50", false, undefined, "the input box under the logo, no turn yet"],
  ["submitted-200x50", true, "working", "the prompt submitted, nothing drawn for it yet"],
  ["working-120x40", true, "working", "Working (0s • esc to interrupt), before the first token"],
  ["streaming-200x50", true, "working", "a partial reply, no spinner"],
  ["silence-120x40", true, "working", "the same partial reply through the 5 s silence mid-stream"],
  ["command-200x50", true, "working", "Running touch …, with Working under it"],
  ["approval-200x50", false, "needs-input", "the approval prompt (› 1. Yes, proceed)"],
  ["retrying-200x50", true, "error", "Server is busy, reconnecting 1/5 … 429 Too Many Requests"],
  ["done-fast-200x50", false, undefined, "the reply, then Worked for <1s"],
  ["done-200x50", false, undefined, "the paced reply, then Worked for 6s"],
  ["done-120x40", false, undefined, "the paced reply, then Worked for 15s"],
  ["recovered-200x50", false, undefined, "the reply after retries, a tip, then Worked for 1s"],
  ["interrupted-200x50", false, undefined, "■ Conversation interrupted after Escape"],
];

describe("Codex turn screens (codex preset busy_markers)", () => {
  it("the preset's markers are valid case-insensitive patterns", () => {
    expect(codex.busy_markers).toEqual([
      String.raw`\besc to interrupt\b`,
      CODEX_TURN_OPEN,
      "Waiting for startup",
    ]);
    for (const m of codex.busy_markers ?? []) expect(() => markerRegExp(m)).not.toThrow();
  });

  it("a prompt typed while Codex still starts (seen in CI) is busy, not a finished turn", () => {
    // The input box with the prompt, "Waiting for startup" under it (its MCP start).
    const waiting = `${screen("startup-200x50")
      .trimEnd()
      .replace(/\n[^\n]*$/, "")}\n\n› Say hello, please.\n  Waiting for startup  · esc cancel\n`;
    expect(screenShowsMarker(waiting, codex.busy_markers)).toBe(true);
    expect(screenShowsMarker(screen("startup-200x50"), codex.busy_markers)).toBe(false);
  });

  for (const [name, busy, work, what] of MOMENTS) {
    it(`${name}: ${what} → ${busy ? "busy" : "not busy"}, work ${work ?? "by activity"}`, () => {
      const text = screen(name);
      expect(screenShowsMarker(text, codex.busy_markers)).toBe(busy);
      const got = classifyScreen(text, rules, codex.ready_prompt_prefix);
      // A finished turn's screen says nothing by itself (the footer is its last line): the time
      // since the last output decides (idle once quiet) — never working for ever.
      expect(got?.state).toBe(work);
      if (!busy && work === undefined) {
        // The providers' idle rule agrees: no dialog, no builtin busy marker, the prompt shows.
        expect(screenLooksIdle(text, codex.ready_prompt_prefix)).toBe(true);
      }
    });
  }

  it("the approval prompt is a pending interaction, not a busy screen", () => {
    expect(findInteraction(screen("approval-200x50"))?.prompt).toMatch(
      /Would you like to run the following command\?/,
    );
  });

  it("a reply that wraps, and text typed into the input box, are read the same way", () => {
    const streaming = [
      "› Write a long answer.",
      "",
      "• First line of a long answer that wraps",
      "  onto a second line",
      "",
      "› Ask Codex to do anything",
      "",
      "  test-model default · /w · Test session",
      "  ← for agents · ? for shortcuts",
    ];
    expect(screenShowsMarker(streaming.join("\n"), codex.busy_markers)).toBe(true);
    const typed = [...streaming];
    typed[5] = "› a nudge typed while the reply streams";
    expect(screenShowsMarker(typed.join("\n"), codex.busy_markers)).toBe(true);
    const done = [...streaming.slice(0, 5), "  Worked for 3s • 17:30", "", ...streaming.slice(5)];
    expect(screenShowsMarker(done.join("\n"), codex.busy_markers)).toBe(false);
  });
});

describe("Codex turn screens (codex preset turn_end_markers, for gc run)", () => {
  const ends = codex.turn_end_markers;
  it.each([
    ["submitted-200x50", "done-fast-200x50"],
    ["submitted-200x50", "done-200x50"],
    ["streaming-200x50", "done-200x50"],
    ["submitted-200x50", "interrupted-200x50"],
  ])("%s → %s: a new closing line, the turn is over", (from, to) => {
    expect(showsNewMarker(screen(from), screen(to), ends)).toBe(true);
  });
  // (These captures come from the session's first turn; the others show earlier turns' lines.)
  it.each(["submitted-200x50", "working-120x40", "silence-120x40"])(
    "%s: no new closing line since the prompt (the turn is not over)",
    (name) => {
      expect(showsNewMarker(screen("startup-200x50"), screen(name), ends)).toBe(false);
    },
  );
});
