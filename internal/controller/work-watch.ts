/**
 * The controller's work watcher: the one place a running session's work (working, idle,
 * needs-input, error) is recorded. The operator pass hands it the looks it takes each pass;
 * between passes it looks again itself at the cadence reconcile/work-watch.ts plans (a
 * session in a turn every 100 ms, the others every second), so `turn.ended` follows a turn's
 * end by a fraction of a second instead of up to a pass interval. It remembers each screen it
 * saw (since when it is unchanged), which lets the classifier end a turn that showed a busy
 * marker as soon as the screen settles without it. Looks and records are serialized: a pass
 * and the watcher never advance the same session from the same record twice.
 */

import { describeError } from "../base/errors.js";
import { groupBy } from "../base/group.js";
import {
  lookSessions,
  looksAtWork,
  RecordedWorkMemo,
  recordWork,
  type WorkRecord,
} from "../reconcile/work.js";
import { observeLook, planWorkLooks, type ScreenSeen } from "../reconcile/work-watch.js";
import type { ScreenRules } from "../runtime/agent-screens.js";
import { type PendingInteraction, type SessionLook, supportsLook } from "../runtime/provider.js";
import { ScreenWorkMemo } from "../runtime/screen/work.js";
import type { SessionRecord, SessionStore } from "../session/store.js";
import type { City } from "./city.js";

/**
 * What the watcher needs of a session beyond its record (from the pass's desired sessions):
 * its ready prompt and markers.
 */
export type WatchTarget = ScreenRules;

/** Records sessions' work from looks; looks again between passes ({@link WorkWatcher.start}). */
export class WorkWatcher {
  private readonly city: City;
  private readonly log: (line: string) => void;
  /** Running sessions (name → provider) and their targets, as the last pass saw them. */
  private sessions = new Map<
    string,
    { readonly provider: string; readonly target: WatchTarget | undefined }
  >();
  private readonly seen = new Map<string, ScreenSeen>();
  private readonly lookedAt = new Map<string, number>();
  /** When this watcher last wrote each session's work (a record read before is stale). */
  private readonly wroteAt = new Map<string, number>();
  /** Each session's work as last read or written (plans the looks between passes). */
  private readonly works = new Map<string, WorkRecord | undefined>();
  /** Each session's last screen classified and stored work parsed: not again while unchanged. */
  private readonly screens = new ScreenWorkMemo();
  private readonly recorded = new RecordedWorkMemo();
  private lock: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private lastError: string | undefined;

  constructor(city: City, log: (line: string) => void) {
    this.city = city;
    this.log = log;
  }

  /** Runs `fn` after every observation before it (one at a time). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Looks at every running session of `records` (read at `readAt`) once per provider,
   * records its work, and resolves the interactions seen, by provider, for the providers
   * that answered. Called by the operator pass; the running sessions and their targets
   * become what the watcher looks at until the next pass.
   */
  recordPass(
    records: readonly SessionRecord[],
    readAt: number,
    targets: ReadonlyMap<string, WatchTarget>,
    signal: AbortSignal,
  ): Promise<Map<string, Map<string, PendingInteraction>>> {
    const running = records.filter((r) => r.state === "running" || r.state === "draining");
    return this.serial(async () => {
      // Between passes only sessions a provider shows a look of (a screen or a turn state)
      // are watched: the others tell nothing but interactions, and asking them each second
      // could cost an exec per session (docker, k8s).
      const lookable = new Map<string, boolean>();
      for (const p of new Set(running.map((r) => r.provider)))
        lookable.set(p, await this.city.providerFor(p).then(supportsLook, () => false));
      this.sessions = new Map(
        running
          .filter((r) => lookable.get(r.provider))
          .map((r) => [r.name, { provider: r.provider, target: targets.get(r.name) }]),
      );
      for (const m of [this.seen, this.lookedAt, this.wroteAt, this.works])
        for (const n of m.keys()) if (!this.sessions.has(n)) m.delete(n);
      const names = new Set(running.map((r) => r.name));
      this.screens.retain(names);
      this.recorded.retain(names);
      const fresh: SessionRecord[] = [];
      for (const r of running) {
        if ((this.wroteAt.get(r.name) ?? Number.NEGATIVE_INFINITY) < readAt) fresh.push(r);
        else {
          const again = await (await this.city.store()).get(r.name);
          if (again && (again.state === "running" || again.state === "draining")) fresh.push(again);
        }
      }
      return this.lookAndRecord(fresh, signal);
    });
  }

  /** Looks at `recs` (fresh records) once per provider and records their work. */
  private async lookAndRecord(
    recs: readonly SessionRecord[],
    signal: AbortSignal,
  ): Promise<Map<string, Map<string, PendingInteraction>>> {
    const store = await this.city.store();
    const byProvider = groupBy(recs, (r) => r.provider);
    const observed = new Map<string, Map<string, PendingInteraction>>();
    for (const [pName, group] of byProvider) {
      const lookAt = Date.now();
      for (const r of group) this.lookedAt.set(r.name, lookAt); // a failing provider is not asked again at once
      const provider = await this.city.providerFor(pName);
      let looks: Map<string, SessionLook>;
      try {
        looks = await lookSessions(
          provider,
          group.map((r) => r.name),
          signal,
        );
      } catch (e) {
        if (signal.aborted) throw e;
        continue; // not observable now: the approval step asks it itself, work stays as recorded
      }
      const seen = new Map<string, PendingInteraction>();
      observed.set(pName, seen);
      const now = Date.now();
      for (const r of group) {
        const look = looks.get(r.name);
        if (look?.interaction) seen.set(r.name, look.interaction);
        if (!looksAtWork(look)) continue; // not running (the reconciler sees to it), or nothing to read
        const prev = this.recorded.of(r);
        this.works.set(r.name, prev);
        const {
          next,
          events,
          seen: mem,
        } = observeLook(prev, this.seen.get(r.name), look, {
          now,
          generation: r.generation,
          rules: this.sessions.get(r.name)?.target,
          classifyScreen: this.screens.forSession(r.name),
        });
        if (mem) this.seen.set(r.name, mem);
        // The recorded work itself back (a quiet session, every second): nothing to write.
        if (next !== prev || events.length > 0) {
          await recordWork(store, r, next, events);
          this.wroteAt.set(r.name, Date.now());
        }
        this.works.set(r.name, next);
      }
    }
    return observed;
  }

  /** The running sessions as the watcher plans them. */
  private watched() {
    return [...this.sessions.keys()].map((name) => ({
      name,
      work: this.works.get(name),
      lookedAt: this.lookedAt.get(name),
    }));
  }

  /** Looks at the sessions due now (their records read again), records them; resolves the next wake. */
  private async tick(signal: AbortSignal): Promise<number | undefined> {
    return this.serial(async () => {
      const { due } = planWorkLooks(this.watched(), Date.now());
      if (due.length > 0) {
        const store = await this.city.store();
        // Many due at once (an idle city, every second): one list (its records decoded once
        // while unchanged) instead of a read per session.
        const fresh = await readRecords(store, due);
        const recs: SessionRecord[] = [];
        for (const name of due) {
          const r = fresh.get(name);
          if (r && (r.state === "running" || r.state === "draining")) recs.push(r);
          else this.lookedAt.set(name, Date.now()); // not running now: the next pass says
        }
        await this.lookAndRecord(recs, signal);
      }
      return planWorkLooks(this.watched(), Date.now()).wakeAt;
    });
  }

  /**
   * Looks between passes until `signal` aborts: each wake looks at the sessions due and
   * sleeps until the next is. A failing look is logged once (until it changes or heals).
   */
  start(signal: AbortSignal): void {
    const wake = (at: number | undefined) => {
      if (signal.aborted) return;
      const delay = at === undefined ? 1_000 : Math.max(10, at - Date.now());
      this.timer = setTimeout(() => void run(), delay);
      this.timer.unref();
    };
    const run = async () => {
      let at: number | undefined;
      try {
        at = await this.tick(signal);
        if (this.lastError !== undefined) this.log("work watcher: looking again works");
        this.lastError = undefined;
      } catch (e) {
        if (signal.aborted) return;
        const msg = describeError(e);
        if (msg !== this.lastError) this.log(`work watcher: a look failed (retrying): ${msg}`);
        this.lastError = msg;
      }
      wake(at);
    };
    signal.addEventListener("abort", () => clearTimeout(this.timer), { once: true });
    wake(undefined);
  }

  /** Resolves when no look or record is in progress (after `start`'s signal aborted: none will be). */
  async settled(): Promise<void> {
    await this.lock;
  }
}

/** The records of `names` as stored now: one read each for a few, one list for many. */
async function readRecords(
  store: SessionStore,
  names: readonly string[],
): Promise<Map<string, SessionRecord>> {
  const out = new Map<string, SessionRecord>();
  if (names.length > 4) {
    const want = new Set(names);
    for (const r of await store.list()) if (want.has(r.name)) out.set(r.name, r);
    return out;
  }
  for (const name of names) {
    const r = await store.get(name);
    if (r) out.set(name, r);
  }
  return out;
}
