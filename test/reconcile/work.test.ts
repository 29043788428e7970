/**
 * A session's work over time (internal/reconcile/work.ts): previous record + observation +
 * injected clock → next record (`since`) and the turn/work events, as a table; and the record
 * and events written to a real SQLite store.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  advanceWork,
  parseWork,
  RecordedWorkMemo,
  recordedWork,
  recordWork,
  WORK_KEY,
  type WorkRecord,
} from "../../internal/reconcile/work.js";
import type { ObservedWork } from "../../internal/runtime/screen/work.js";
import { openSqliteStore } from "../../internal/session/sqlite-store.js";
import type { SessionRecord } from "../../internal/session/store.js";

const T = 1_800_000_000_000;
const rec = (r: Partial<WorkRecord> & Pick<WorkRecord, "state" | "since">): WorkRecord => ({
  generation: 1,
  ...r,
});

describe("advanceWork", () => {
  const cases: {
    what: string;
    prev: WorkRecord | undefined;
    obs: ObservedWork;
    now: number;
    lastActivity?: number;
    busyMarker?: boolean;
    next: WorkRecord;
    events: [string, Record<string, unknown>][];
  }[] = [
    {
      what: "first look, idle",
      prev: undefined,
      obs: { state: "idle" },
      now: T,
      next: rec({ state: "idle", since: T }),
      events: [],
    },
    {
      what: "first look, idle since the last output",
      prev: undefined,
      obs: { state: "idle" },
      now: T,
      lastActivity: T - 5_000,
      next: rec({ state: "idle", since: T - 5_000 }),
      events: [],
    },
    {
      what: "idle → working opens a turn",
      prev: rec({ state: "idle", since: T - 60_000 }),
      obs: { state: "working" },
      now: T,
      next: rec({ state: "working", since: T, turnSince: T }),
      events: [["turn.started", {}]],
    },
    {
      what: "working stays: since and the turn stay",
      prev: rec({ state: "working", since: T - 9_000, turnSince: T - 9_000 }),
      obs: { state: "working" },
      now: T,
      next: rec({ state: "working", since: T - 9_000, turnSince: T - 9_000 }),
      events: [],
    },
    {
      what: "working → idle ends the turn at the last output",
      prev: rec({ state: "working", since: T - 9_000, turnSince: T - 10_000 }),
      obs: { state: "idle" },
      now: T,
      lastActivity: T - 1_000,
      next: rec({ state: "idle", since: T - 1_000 }),
      events: [["turn.ended", { durationMs: 9_000, startedAt: new Date(T - 10_000).toISOString() }]],
    },
    {
      what: "an output time before the turn began is not its end",
      prev: rec({ state: "working", since: T - 2_000, turnSince: T - 2_000 }),
      obs: { state: "idle" },
      now: T,
      lastActivity: T - 30_000,
      next: rec({ state: "idle", since: T }),
      events: [["turn.ended", { durationMs: 2_000, startedAt: new Date(T - 2_000).toISOString() }]],
    },
    {
      what: "working → needs-input blocks, the turn stays open",
      prev: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000 }),
      obs: { state: "needs-input", message: "Do you want to proceed?" },
      now: T,
      next: rec({ state: "needs-input", since: T, message: "Do you want to proceed?", turnSince: T - 3_000 }),
      events: [["work.blocked", { question: "Do you want to proceed?" }]],
    },
    {
      what: "the same question: nothing new",
      prev: rec({ state: "needs-input", since: T - 3_000, message: "Q1" }),
      obs: { state: "needs-input", message: "Q1" },
      now: T,
      next: rec({ state: "needs-input", since: T - 3_000, message: "Q1" }),
      events: [],
    },
    {
      what: "another question is a new block",
      prev: rec({ state: "needs-input", since: T - 3_000, message: "Q1" }),
      obs: { state: "needs-input", message: "Q2" },
      now: T,
      next: rec({ state: "needs-input", since: T, message: "Q2" }),
      events: [["work.blocked", { question: "Q2" }]],
    },
    {
      what: "working → error, the turn stays open",
      prev: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000 }),
      obs: { state: "error", message: "API error · retrying in 1s · attempt 2/10" },
      now: T,
      next: rec({
        state: "error",
        since: T,
        message: "API error · retrying in 1s · attempt 2/10",
        turnSince: T - 3_000,
      }),
      events: [["work.error", { message: "API error · retrying in 1s · attempt 2/10" }]],
    },
    {
      what: "the retry counter moves: the message follows, since stays, no event",
      prev: rec({ state: "error", since: T - 2_000, message: "attempt 2/10", turnSince: T - 3_000 }),
      obs: { state: "error", message: "attempt 3/10" },
      now: T,
      next: rec({ state: "error", since: T - 2_000, message: "attempt 3/10", turnSince: T - 3_000 }),
      events: [],
    },
    {
      what: "idle → error opens a turn (a request failing at once)",
      prev: rec({ state: "idle", since: T - 3_000 }),
      obs: { state: "error", message: "529" },
      now: T,
      next: rec({ state: "error", since: T, message: "529", turnSince: T }),
      events: [
        ["turn.started", {}],
        ["work.error", { message: "529" }],
      ],
    },
    {
      what: "unknown keeps the turn, records no event",
      prev: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000 }),
      obs: { state: "unknown" },
      now: T,
      next: rec({ state: "unknown", since: T, turnSince: T - 3_000 }),
      events: [],
    },
    {
      what: "a record of another incarnation is ignored",
      prev: { state: "working", since: T - 3_000, turnSince: T - 3_000, generation: 7 },
      obs: { state: "idle" },
      now: T,
      next: rec({ state: "idle", since: T }),
      events: [],
    },
    {
      what: "a busy marker marks the record",
      prev: rec({ state: "idle", since: T - 60_000 }),
      obs: { state: "working" },
      busyMarker: true,
      now: T,
      next: rec({ state: "working", since: T, turnSince: T, marked: true }),
      events: [["turn.started", {}]],
    },
    {
      what: "a record stays marked while the marker is gone",
      prev: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000, marked: true }),
      obs: { state: "working" },
      now: T,
      next: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000, marked: true }),
      events: [],
    },
    {
      what: "a marker seen later in a turn marks it",
      prev: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000 }),
      obs: { state: "working" },
      busyMarker: true,
      now: T,
      next: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000, marked: true }),
      events: [],
    },
    {
      what: "the mark outlives the turn (it says the program draws a marker)",
      prev: rec({ state: "working", since: T - 3_000, turnSince: T - 3_000, marked: true }),
      obs: { state: "idle" },
      now: T,
      next: rec({ state: "idle", since: T, marked: true }),
      events: [["turn.ended", { durationMs: 3_000, startedAt: new Date(T - 3_000).toISOString() }]],
    },
    {
      what: "a new incarnation starts unmarked",
      prev: rec({ state: "idle", since: T - 3_000, marked: true, generation: 7 }),
      obs: { state: "idle" },
      now: T,
      next: rec({ state: "idle", since: T }),
      events: [],
    },
  ];
  it.each(cases)("$what", (c) => {
    const { next, events } = advanceWork(c.prev, c.obs, {
      now: c.now,
      generation: 1,
      lastActivity: c.lastActivity,
      busyMarker: c.busyMarker,
    });
    expect(next).toEqual(c.next);
    expect(events.map((e) => [e.type, e.payload])).toEqual(c.events);
  });

  it("an observation that changes nothing returns the previous record itself (nothing to write)", () => {
    const at = { now: T, generation: 1 };
    const idle = rec({ state: "idle", since: T - 9_000 });
    expect(advanceWork(idle, { state: "idle" }, at).next).toBe(idle);
    const marked = rec({ state: "working", since: T - 1_000, turnSince: T - 1_000, marked: true });
    expect(advanceWork(marked, { state: "working" }, { ...at, busyMarker: true }).next).toBe(marked);
    const asked = rec({ state: "needs-input", since: T - 1_000, message: "Allow?" });
    expect(advanceWork(asked, { state: "needs-input", message: "Allow?" }, at).next).toBe(asked);
    // Anything that changes makes a new record: a marker seen first, an error's new message.
    const unmarked = rec({ state: "working", since: T - 1_000, turnSince: T - 1_000 });
    expect(advanceWork(unmarked, { state: "working" }, { ...at, busyMarker: true }).next).not.toBe(unmarked);
    const failing = rec({ state: "error", since: T - 1_000, turnSince: T - 1_000, message: "retry 1" });
    const retried = advanceWork(failing, { state: "error", message: "retry 2" }, at).next;
    expect(retried).toEqual({ ...failing, message: "retry 2" });
  });

  it("parseWork rejects what is not a work record", () => {
    expect(parseWork(undefined)).toBeUndefined();
    expect(parseWork("{")).toBeUndefined();
    expect(parseWork(JSON.stringify({ state: "busy", since: 1, generation: 1 }))).toBeUndefined();
    expect(parseWork(JSON.stringify({ state: "idle", since: 1 }))).toBeUndefined();
    expect(parseWork(JSON.stringify({ state: "idle", since: 1, generation: 2, message: 3 }))).toEqual({
      state: "idle",
      since: 1,
      generation: 2,
    });
  });
});

describe("RecordedWorkMemo", () => {
  it("answers as recordedWork: the stored text parsed once while it stays, a new incarnation ignores it", () => {
    const memo = new RecordedWorkMemo();
    const w = rec({ state: "idle", since: T });
    const r = {
      name: "a",
      generation: 1,
      metadata: { [WORK_KEY]: JSON.stringify(w) },
    } as unknown as SessionRecord;
    expect(memo.of(r)).toEqual(recordedWork(r));
    expect(memo.of(r)).toEqual(w);
    const next = {
      ...r,
      metadata: { [WORK_KEY]: JSON.stringify({ ...w, state: "working" }) },
    } as SessionRecord;
    expect(memo.of(next)).toEqual(recordedWork(next));
    expect(memo.of(next)?.state).toBe("working");
    expect(memo.of({ ...next, generation: 2 } as SessionRecord)).toBeUndefined();
    expect(memo.of({ ...r, metadata: {} } as unknown as SessionRecord)).toBeUndefined();
    expect(memo.of({ ...r, metadata: { [WORK_KEY]: "{bad" } } as unknown as SessionRecord)).toBeUndefined();
  });
});

describe("recordWork", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("stores the record once per change and appends the events; a stale record is read again", async () => {
    dir = mkdtempSync(join(tmpdir(), "gc-work-"));
    const store = openSqliteStore({ path: join(dir, "state.db"), actor: "work-test" });
    try {
      await store.create({ name: "s", agent: "a", provider: "tmux", state: "running" });
      const r0 = (await store.get("s"))!;
      const work = { state: "working", since: T, turnSince: T, generation: r0.generation } as const;
      // Someone else updated the record after it was read: the write retries on the new version.
      await store.update("s", r0.version, { metadata: { other: "x" } });
      await recordWork(store, r0, work, [{ type: "turn.started", payload: {}, at: T }]);
      const r1 = (await store.get("s"))!;
      expect(recordedWork(r1)).toEqual(work);
      expect(r1.metadata.other).toBe("x");
      // Unchanged: no write.
      await recordWork(store, r1, work, []);
      expect((await store.get("s"))!.version).toBe(r1.version);
      const events = await store.queryEvents({ session: "s" });
      expect(events.filter((e) => e.type === "turn.started").map((e) => e.at)).toEqual([T]);
      expect(JSON.parse(r1.metadata[WORK_KEY]!).state).toBe("working");
    } finally {
      await store.close();
    }
  });
});
