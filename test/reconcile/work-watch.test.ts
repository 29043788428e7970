/**
 * The controller's work watcher, decided (internal/reconcile/work-watch.ts): when sessions are
 * looked at between passes, the screen memory, and a turn's looks in sequence with an
 * injected clock — on Claude Code's recorded screens (test/fixtures/screens/): the turn ends
 * within a look or two of the busy marker going away, never during a long silence under it,
 * and a program that never showed a marker keeps the 2 s quiet rule.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { WorkEvent, WorkRecord } from "../../internal/reconcile/work.js";
import {
  IDLE_LOOK_MS,
  lookEveryMs,
  observeLook,
  planWorkLooks,
  type ScreenSeen,
  seeScreen,
  TURN_END_QUIET_MS,
  TURN_LOOK_MS,
} from "../../internal/reconcile/work-watch.js";
import type { ScreenRules } from "../../internal/runtime/agent-screens.js";
import type { SessionLook } from "../../internal/runtime/provider.js";
import { WORK_QUIET_MS } from "../../internal/runtime/screen/work.js";

const T = 1_800_000_000_000;

function fixture(name: string): string {
  const ansi = readFileSync(new URL(`../fixtures/screens/${name}`, import.meta.url), "utf8");
  return ansi.replace(/\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]/g, "");
}
const CLAUDE_IDLE = fixture("claude-idle-80x24.ansi");
const CLAUDE_BUSY = fixture("claude-busy-80x24.ansi");
/** Claude Code's busy screen a second later (its spinner's timer moved on). */
const CLAUDE_BUSY_LATER = `${CLAUDE_BUSY}\n`;
/** Claude Code's screen after the reply: the busy marker gone. */
const CLAUDE_DONE = `Hello from the model double.\n${CLAUDE_IDLE}`;

const work = (state: WorkRecord["state"], extra: Partial<WorkRecord> = {}): WorkRecord => ({
  state,
  since: T - 10_000,
  generation: 1,
  ...extra,
});

describe("planWorkLooks", () => {
  const cases: {
    what: string;
    sessions: Parameters<typeof planWorkLooks>[0];
    now: number;
    due: string[];
    wakeAt: number | undefined;
  }[] = [
    { what: "nothing running", sessions: [], now: T, due: [], wakeAt: undefined },
    {
      what: "never looked at: due at once, next after its cadence",
      sessions: [{ name: "a", work: undefined, lookedAt: undefined }],
      now: T,
      due: ["a"],
      wakeAt: T + IDLE_LOOK_MS,
    },
    {
      what: "idle, looked at just now: not due; wakes after a second",
      sessions: [{ name: "a", work: work("idle"), lookedAt: T - 300 }],
      now: T,
      due: [],
      wakeAt: T - 300 + IDLE_LOOK_MS,
    },
    {
      what: "working, looked at 100 ms ago: due",
      sessions: [{ name: "a", work: work("working", { turnSince: T - 5_000 }), lookedAt: T - TURN_LOOK_MS }],
      now: T,
      due: ["a"],
      wakeAt: T + TURN_LOOK_MS,
    },
    {
      what: "an error (a request retrying mid-turn) is watched like working",
      sessions: [{ name: "a", work: work("error", { turnSince: T - 5_000 }), lookedAt: T - 40 }],
      now: T,
      due: [],
      wakeAt: T - 40 + TURN_LOOK_MS,
    },
    {
      what: "needs-input waits for an answer at the idle cadence",
      sessions: [{ name: "a", work: work("needs-input", { turnSince: T - 5_000 }), lookedAt: T - 40 }],
      now: T,
      due: [],
      wakeAt: T - 40 + IDLE_LOOK_MS,
    },
    {
      what: "one working among idle ones: only it is due; the wake is the earliest",
      sessions: [
        { name: "idle1", work: work("idle"), lookedAt: T - 500 },
        { name: "busy", work: work("working", { turnSince: T - 1_000 }), lookedAt: T - 150 },
        { name: "idle2", work: work("idle"), lookedAt: T - 999 },
      ],
      now: T,
      due: ["busy"],
      wakeAt: T + 1,
    },
  ];
  it.each(cases)("$what", ({ sessions, now, due, wakeAt }) => {
    expect(planWorkLooks(sessions, now)).toEqual({ due, wakeAt });
  });

  it("looks at a turn ten times as often as at the rest", () => {
    expect(lookEveryMs(work("working"))).toBe(TURN_LOOK_MS);
    expect(lookEveryMs(work("idle"))).toBe(IDLE_LOOK_MS);
    expect(lookEveryMs(undefined)).toBe(IDLE_LOOK_MS);
  });
});

describe("seeScreen", () => {
  const first: ScreenSeen = { generation: 1, screen: "a", since: T };
  it.each([
    ["first sight starts now", undefined, "a", 1, T + 5, { generation: 1, screen: "a", since: T + 5 }],
    ["the same screen keeps its first look", first, "a", 1, T + 500, first],
    ["a changed screen starts over", first, "b", 1, T + 500, { generation: 1, screen: "b", since: T + 500 }],
    ["a new incarnation starts over", first, "a", 2, T + 500, { generation: 2, screen: "a", since: T + 500 }],
  ] as const)("%s", (_what, prev, screen, gen, now, want) => {
    expect(seeScreen(prev, screen, gen, now)).toEqual(want);
  });
});

/** Looks of one session in order (`[ms after T, look]`); the events recorded, with the look that recorded them. */
function replay(looks: readonly [number, SessionLook][], start?: WorkRecord, rules?: ScreenRules) {
  let rec = start;
  let seen: ScreenSeen | undefined;
  const events: (Omit<WorkEvent, "payload"> & { seenAt: number })[] = [];
  for (const [ms, look] of looks) {
    const r = observeLook(rec, seen, look, { now: T + ms, generation: 1, rules });
    rec = r.next;
    seen = r.seen;
    for (const e of r.events) events.push({ type: e.type, at: e.at, seenAt: T + ms });
  }
  return { rec, events };
}

/** Looks every `step` ms from `from` to `to` (inclusive) of `screen` with output at `activityAt`. */
function looksOf(from: number, to: number, step: number, look: (ms: number) => SessionLook) {
  const out: [number, SessionLook][] = [];
  for (let ms = from; ms <= to; ms += step) out.push([ms, look(ms)]);
  return out;
}

describe("observeLook: a turn in looks", () => {
  const idleBefore = work("idle", { since: T - 60_000 });
  const busy = (ms: number): SessionLook => ({
    // The spinner's timer changes the screen every second; output every 100 ms.
    screen: Math.floor(ms / 1_000) % 2 === 0 ? CLAUDE_BUSY : CLAUDE_BUSY_LATER,
    lastActivity: new Date(T + ms),
  });

  it("a Claude Code turn with a 5 s silence mid-stream: one turn, ended within two looks of the marker going", () => {
    const endAt = 8_000; // the reply drawn, the marker gone
    const { rec, events } = replay(
      [
        ...looksOf(0, endAt - TURN_LOOK_MS, TURN_LOOK_MS, busy),
        ...looksOf(endAt, endAt + 3_000, TURN_LOOK_MS, () => ({
          screen: CLAUDE_DONE,
          lastActivity: new Date(T + endAt),
        })),
      ],
      idleBefore,
    );
    expect(events.map((e) => e.type)).toEqual(["turn.started", "turn.ended"]);
    const ended = events[1]!;
    // Seen once the screen stood still for TURN_END_QUIET_MS, at the next look after that.
    expect(ended.seenAt).toBe(T + endAt + Math.ceil(TURN_END_QUIET_MS / TURN_LOOK_MS) * TURN_LOOK_MS);
    expect(ended.seenAt - (T + endAt)).toBeLessThan(WORK_QUIET_MS);
    // Idle from then on: the settled screen's output growing old reopens no turn.
    expect(rec).toMatchObject({ state: "idle", marked: true });
  });

  it("a screen still changing without the marker (the reply being drawn) is not the end yet", () => {
    const { events } = replay(
      [
        [0, busy(0)],
        [100, { screen: `Hel\n${CLAUDE_IDLE}`, lastActivity: new Date(T + 100) }],
        [200, { screen: `Hello fr\n${CLAUDE_IDLE}`, lastActivity: new Date(T + 200) }],
        [300, { screen: CLAUDE_DONE, lastActivity: new Date(T + 300) }],
        [400, { screen: CLAUDE_DONE, lastActivity: new Date(T + 300) }],
        [500, { screen: CLAUDE_DONE, lastActivity: new Date(T + 300) }],
      ],
      idleBefore,
    );
    expect(events.map((e) => [e.type, e.seenAt - T])).toEqual([
      ["turn.started", 0],
      ["turn.ended", 500],
    ]);
  });

  it("output the provider saw after the screen's first look resets the quiet time", () => {
    const { events } = replay(
      [
        [0, busy(0)],
        [100, { screen: CLAUDE_DONE, lastActivity: new Date(T + 100) }],
        // The same screen again, but the provider saw output at 240 ms (a change and back).
        [300, { screen: CLAUDE_DONE, lastActivity: new Date(T + 240) }],
        [400, { screen: CLAUDE_DONE, lastActivity: new Date(T + 240) }],
      ],
      idleBefore,
    );
    expect(events.map((e) => [e.type, e.seenAt - T])).toEqual([
      ["turn.started", 0],
      ["turn.ended", 400],
    ]);
  });

  it("a long silence under the busy marker is never idle", () => {
    const { rec, events } = replay(
      looksOf(0, 30_000, TURN_LOOK_MS, (ms) => ({
        screen: CLAUDE_BUSY,
        lastActivity: new Date(T + Math.min(ms, 1_000)), // nothing printed after 1 s
      })),
      idleBefore,
    );
    expect(events.map((e) => e.type)).toEqual(["turn.started"]);
    expect(rec).toMatchObject({ state: "working", marked: true });
  });

  it("a frame caught half drawn (footer not written, the bare prompt last) does not end the turn", () => {
    // Claude Code's busy screen cut after its input box: the bare ready prompt on the last
    // line, which alone classifies idle at once.
    const cut = CLAUDE_BUSY.slice(0, CLAUDE_BUSY.lastIndexOf("❯ ") + 2);
    const half: SessionLook = { screen: cut, readyPromptPrefix: "❯ ", lastActivity: new Date(T + 1_000) };
    expect(observeLook(work("idle"), undefined, half, { now: T + 1_000, generation: 1 }).next.state).toBe(
      "idle",
    );
    const { rec, events } = replay(
      [
        [0, busy(0)],
        [1_000, half],
        [1_100, { ...half, lastActivity: new Date(T + 1_100) }],
        [1_200, busy(1_200)],
        [1_300, busy(1_300)],
      ],
      idleBefore,
    );
    expect(events.map((e) => e.type)).toEqual(["turn.started"]);
    expect(rec).toMatchObject({ state: "working", marked: true });
    // Standing still without the marker, the same screen is the turn's end.
    const { events: ended } = replay(
      [
        [0, busy(0)],
        [1_000, half],
        [1_100, half],
        [1_200, half],
      ],
      idleBefore,
    );
    expect(ended.map((e) => [e.type, e.seenAt - T])).toEqual([
      ["turn.started", 0],
      ["turn.ended", 1_200],
    ]);
  });

  it("a preset that declares its busy markers: typing before the first marker is no turn, even in a new incarnation", () => {
    const typing = (ms: number, text: string): [number, SessionLook] => [
      ms,
      { screen: `${CLAUDE_IDLE}\n${text}`, lastActivity: new Date(T + ms) },
    ];
    const looks: [number, SessionLook][] = [
      typing(0, "b"),
      typing(100, "bench"),
      typing(200, "bench turn 1"),
      // The CLI is slow to draw its spinner on a loaded machine: 3 s of nothing.
      ...looksOf(300, 3_300, TURN_LOOK_MS, () => ({
        screen: `${CLAUDE_IDLE}\nbench turn 1`,
        lastActivity: new Date(T + 200),
      })),
      [3_400, busy(3_400)],
      [3_500, busy(3_500)],
    ];
    // Without declared markers the typing is a turn of its own, over before the model was asked.
    expect(replay(looks).events.map((e) => e.type)).toEqual(["turn.started", "turn.ended", "turn.started"]);
    const { events } = replay(looks, undefined, { busyMarkers: [String.raw`\besc to interrupt\b`] });
    expect(events.map((e) => [e.type, e.seenAt - T])).toEqual([["turn.started", 3_400]]);
  });

  it("a program that never showed a busy marker keeps the 2 s quiet rule", () => {
    const printed = 1_000;
    const { events } = replay(
      looksOf(0, 5_000, TURN_LOOK_MS, (ms) => ({
        screen: `$ make\n${"building\n".repeat(Math.min(ms, printed) / 100)}`,
        lastActivity: new Date(T + Math.min(ms, printed)),
      })),
      idleBefore,
    );
    expect(events.map((e) => e.type)).toEqual(["turn.started", "turn.ended"]);
    expect(events[1]!.seenAt).toBe(T + printed + WORK_QUIET_MS);
  });

  it("once a program showed its marker, output without it (typing, a redraw) is no turn", () => {
    const { rec, events } = replay(
      [
        [0, busy(0)],
        [100, { screen: CLAUDE_DONE, lastActivity: new Date(T + 100) }],
        [300, { screen: CLAUDE_DONE, lastActivity: new Date(T + 100) }],
        [400, { screen: `${CLAUDE_DONE}\ntyped text`, lastActivity: new Date(T + 400) }],
        [500, { screen: `${CLAUDE_DONE}\ntyped text`, lastActivity: new Date(T + 400) }],
        [600, { screen: `${CLAUDE_DONE}\ntyped text`, lastActivity: new Date(T + 400) }],
        [2_000, { screen: `${CLAUDE_DONE}\ntyped text`, lastActivity: new Date(T + 400) }],
        [2_100, busy(2_100)],
      ],
      idleBefore,
    );
    expect(events.map((e) => [e.type, e.seenAt - T])).toEqual([
      ["turn.started", 0],
      ["turn.ended", 300],
      ["turn.started", 2_100],
    ]);
    expect(rec).toMatchObject({ state: "working", turnSince: T + 2_100, marked: true });
  });

  it("a new incarnation's screen does not inherit the old one's quiet time", () => {
    let seen: ScreenSeen | undefined = { generation: 1, screen: CLAUDE_DONE, since: T - 60_000 };
    const prev = work("working", { generation: 2, turnSince: T - 1_000, marked: true });
    const r = observeLook(
      prev,
      seen,
      { screen: CLAUDE_DONE, lastActivity: new Date(T - 50) },
      {
        now: T,
        generation: 2,
      },
    );
    seen = r.seen;
    expect(seen).toMatchObject({ generation: 2, screen: CLAUDE_DONE, since: T });
    expect(r.next.state).toBe("working");
  });
});
