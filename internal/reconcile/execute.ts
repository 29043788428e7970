/**
 * Carrying out a plan: bounded parallelism, dependency order, intent recorded in the store
 * before each provider call, and one session's failure isolated from the rest. The only
 * place (with the observer) where the store and providers meet.
 */

import { describeError, faultOf, isGcError } from "../base/errors.js";
import { groupBy } from "../base/group.js";
import { keepStartedFields } from "../runtime/fingerprint.js";
import {
  interruptTurn,
  type Provider,
  type StartConfig,
  type StartReport,
  sessionCapabilities,
  supportsIdleWait,
  supportsOrphanKill,
} from "../runtime/provider.js";
import { redactError } from "../runtime/secrets.js";
import { casUpdate, type SessionRecord, type SessionStore } from "../session/store.js";
import { sameCore } from "./drift.js";
import {
  type Action,
  crashAction,
  type DesiredEntry,
  HOLD_KEY,
  INFRA_LOSSES_KEY,
  type PlanPolicy,
  QUARANTINED_CORE_KEY,
  REKEYED_KEY,
  recordedUnkeyed,
  uncountedFailureAction,
} from "./plan.js";
import { walkTo } from "./walk.js";

/** Provider metadata keys gc writes at start, read back when adopting a session. */
export const META_CORE = "gc.core";
export const META_LIVE = "gc.live";
export const META_AGENT = "gc.agent";

/** A desired session with the start config that produced its fingerprints. */
export interface DesiredSession extends DesiredEntry {
  readonly config: StartConfig;
  /**
   * The secret values `config` carries (runtime/fingerprint.ts `secretsOfConfig`): masked in
   * what its failures say. Held in memory only, never stored or cached.
   */
  readonly secrets?: readonly string[] | undefined;
}

/** One line of progress, for `gc start` output and the controller log. */
export interface ProgressEvent {
  readonly name: string;
  readonly action: Action["kind"];
  /** `skipped`: not taken this pass (an operator's command holds the session); planned again next pass. */
  readonly phase: "begin" | "done" | "failed" | "skipped";
  readonly detail: string;
}

/** What {@link execute} needs. */
export interface ExecuteDeps {
  readonly store: SessionStore;
  /** The provider a session lives on, by provider name. */
  providerFor(provider: string): Promise<Provider>;
  readonly desired: ReadonlyMap<string, DesiredSession>;
  /** Provider of sessions that are not desired (orphans, records). */
  readonly providerOfUndesired: (name: string) => string | undefined;
  readonly now: () => number;
  readonly concurrency: number;
  readonly policy: PlanPolicy;
  /** Uniform random in [0, 1) for backoff jitter. */
  readonly random: () => number;
  /** Bound on waiting for an interrupted session to go idle before it is stopped. */
  readonly drainTimeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  readonly onProgress?: ((e: ProgressEvent) => void) | undefined;
  /**
   * The version of each session's record as the plan read it (no entry: no record). An
   * action whose record has changed since is not taken: someone (an operator's command that
   * has finished meanwhile) changed the session after the plan looked; the next pass plans
   * from what it left.
   */
  readonly planned: ReadonlyMap<string, number>;
  /**
   * Orphans killed for sessions lost with their infrastructure whose restart a start budget
   * deferred to a later pass, by session (kept by the caller across passes; taken when the
   * session's loss is recorded). Without it, each pass counts its own losses' orphans.
   */
  readonly lostOrphans?: Map<string, SessionOrphanKill> | undefined;
}

/** What was done about one lost session's orphans: their pids killed, or why that failed. */
export type SessionOrphanKill = { readonly pids: readonly number[] } | { readonly error: string };

/** Outcome of one action. */
export interface ActionOutcome {
  readonly action: Action;
  readonly ok: boolean;
  readonly error?: string | undefined;
  /** Not taken this pass ({@link busyReason}): nothing was done, nothing failed. */
  readonly skipped?: true;
}

function semaphore(n: number) {
  let free = Math.max(1, n);
  const waiters: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (free > 0) free--;
    else await new Promise<void>((r) => waiters.push(r));
    try {
      return await fn();
    } finally {
      const next = waiters.shift();
      if (next) next();
      else free++;
    }
  };
}

/**
 * Executes `actions` (already in dependency order). Start-like actions of a session wait for
 * this tick's start-like actions of the agents it depends on. Resolves one outcome per action;
 * never rejects for a single session's failure.
 */
export async function execute(actions: readonly Action[], deps: ExecuteDeps): Promise<ActionOutcome[]> {
  const limit = semaphore(deps.concurrency);
  const orphans = killOrphansOfLosses(actions, deps);
  const done = new Map<string, Promise<unknown>>();
  // Start-like actions by agent, so each action finds what it waits for without a scan.
  const startsOfAgent = groupBy(actions, (a) =>
    a.kind === "start" || a.kind === "restart" ? deps.desired.get(a.name)?.agent : undefined,
  );
  const work = actions.map((action) => {
    const d = deps.desired.get(action.name);
    const waitFor = d
      ? d.dependsOn.flatMap((agent) =>
          (startsOfAgent.get(agent) ?? []).filter((a) => a !== action).map((a) => done.get(a.name)),
        )
      : [];
    const p = (async (): Promise<ActionOutcome> => {
      await Promise.allSettled(waitFor);
      return limit(() => runAction(action, deps, orphans));
    })();
    done.set(action.name, p);
    return p;
  });
  // Let every started action finish before reporting, even when one rejects (abort):
  // the caller closes the store and providers right after.
  const settled = await Promise.allSettled(work);
  const rejected = settled.find((r) => r.status === "rejected");
  if (rejected) throw rejected.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<ActionOutcome>).value);
}

async function runAction(action: Action, deps: ExecuteDeps, orphans: OrphanKills): Promise<ActionOutcome> {
  if (action.kind === "wait") return { action, ok: true };
  deps.signal?.throwIfAborted();
  try {
    const busy = await busyReason(action.name, deps);
    if (busy !== undefined) {
      deps.onProgress?.({ name: action.name, action: action.kind, phase: "skipped", detail: busy });
      return { action, ok: true, skipped: true };
    }
    deps.onProgress?.({ name: action.name, action: action.kind, phase: "begin", detail: action.reason });
    const detail = await perform(action, deps, orphans);
    deps.onProgress?.({ name: action.name, action: action.kind, phase: "done", detail });
    return { action, ok: true };
  } catch (e) {
    const error = describeError(e);
    deps.onProgress?.({ name: action.name, action: action.kind, phase: "failed", detail: error });
    await deps.store
      .appendEvent({ session: action.name, type: `reconcile.${action.kind}.failed`, payload: { error } })
      .catch(() => undefined);
    return { action, ok: false, error };
  }
}

/**
 * Why no action may be taken on `name` now, or `undefined`. Never while an operator's command
 * holds the session (gc run, kill, restart, gc stop NAME…): it is changing the runtime and the
 * record itself, and a start or a crash recorded mid-way would race it (a `gc session kill` of
 * a subprocess session reads, to a pass, like a session lost with its holder). Nor when the
 * record changed since the plan read it (such a command finished meanwhile). The next pass
 * plans from what the command left.
 */
async function busyReason(name: string, deps: ExecuteDeps): Promise<string | undefined> {
  const holder = await deps.store.lockHolder(name);
  if (holder) return `session busy (${holder.purpose}, pid ${holder.pid})`;
  if ((await deps.store.get(name))?.version !== deps.planned.get(name)) {
    return "its record changed since this pass read it";
  }
  return undefined;
}

async function perform(action: Action, deps: ExecuteDeps, orphans: OrphanKills): Promise<string> {
  const { store } = deps;
  const d = deps.desired.get(action.name);
  switch (action.kind) {
    case "start":
      if (action.infra) await recordInfraLoss(d!, action.reason, deps, await orphans(d!.name));
      return startSession(d!, action.reason, deps);
    case "restart":
      // A restart gc chose (drift, interrupted drain): its own event, not a crash restart.
      await store.appendEvent({
        session: d!.name,
        type: "reconcile.restart",
        payload: { reason: action.reason, fields: [...action.fields] },
      });
      await drain(d!, action.reason, deps);
      return startSession(d!, action.reason, deps);
    case "run-live": {
      const provider = await deps.providerFor(d!.provider);
      await store.appendEvent({
        session: d!.name,
        type: "reconcile.run-live",
        payload: { reason: action.reason },
      });
      await provider.runLive(d!.name, d!.config, { signal: deps.signal });
      await provider.setMeta(d!.name, META_LIVE, d!.live).catch(() => undefined);
      // The session keeps running: its start-only fields stay what it started with.
      const was = (await store.get(d!.name))?.breakdown ?? {};
      await walkTo(store, d!.name, "running", action.reason, {
        liveHash: d!.live,
        breakdown: keepStartedFields(was, d!.breakdown),
      });
      return "session_live re-applied without restart";
    }
    case "rekey": {
      // The same start, recorded anew with the keyed hashes (state unchanged): the unkeyed
      // ones — check values for a secret — leave the session's metadata first (a failure
      // fails the action: the record stays unkeyed and the next pass tries again), then the
      // record, marked for the store's compaction (reconciler.ts).
      const want = d!;
      const current = await store.get(want.name);
      if (!current || !recordedUnkeyed(current, want)) return "already re-recorded";
      if (current.state === "running") {
        const provider = await deps.providerFor(want.provider);
        await provider.setMeta(want.name, META_CORE, want.core, { signal: deps.signal });
        await provider.setMeta(want.name, META_LIVE, want.live, { signal: deps.signal });
      }
      await casUpdate(store, want.name, (r) => {
        if (!recordedUnkeyed(r, want)) return undefined; // changed meanwhile: nothing to do
        const quarantinedAt = r.metadata[QUARANTINED_CORE_KEY];
        const requarantined =
          quarantinedAt !== undefined && sameCore(quarantinedAt, want)
            ? { [QUARANTINED_CORE_KEY]: want.core }
            : {};
        return {
          coreHash: want.core,
          liveHash: want.live,
          breakdown: keepStartedFields(r.breakdown, want.breakdown),
          metadata: { ...requarantined, [REKEYED_KEY]: "1" },
        };
      });
      return "fingerprints re-recorded with the city's key";
    }
    case "adopt":
      return adopt(d!, action.reason, deps);
    case "stop": {
      const providerName = deps.providerOfUndesired(action.name);
      if (providerName === undefined) throw new Error(`no provider known for ${action.name}`);
      const provider = await deps.providerFor(providerName);
      const rec = await store.get(action.name);
      if (rec) await walkTo(store, action.name, "draining", action.reason, { pending: intent("stop", rec) });
      // A session scaled away or removed from the file is drained like a drift restart's:
      // an agent mid-turn gets its Ctrl-C and a bounded wait to settle before it is stopped.
      // (Its config is gone from the file: the provider's own interrupt.)
      await settle(provider, action.name, undefined, deps);
      await provider.stop(action.name, { signal: deps.signal });
      if (rec) {
        if (action.forget) await store.delete(action.name);
        else await walkTo(store, action.name, "stopped", action.reason, { pending: null });
      } else {
        await store.appendEvent({
          session: action.name,
          type: "reconcile.stop",
          payload: { reason: action.reason },
        });
      }
      return action.reason;
    }
    case "forget":
      await store.delete(action.name);
      return action.reason;
    case "suspend": {
      if (action.stopRuntime) {
        const provider = await deps.providerFor(d!.provider);
        await provider.stop(d!.name, { signal: deps.signal });
      }
      await ensureRecord(d!, deps);
      await walkTo(store, d!.name, "suspended", action.reason, { pending: null });
      return action.reason;
    }
    case "crashed":
      return recordCrash(d!, action, deps);
    case "wait":
      return action.reason;
  }
}

function intent(action: string, rec: SessionRecord | undefined, now = Date.now()) {
  return { action, at: now, generation: rec?.generation ?? 0 };
}

async function ensureRecord(d: DesiredSession, deps: ExecuteDeps): Promise<SessionRecord> {
  const rec = await deps.store.get(d.name);
  if (rec) return rec;
  try {
    return await deps.store.create({ name: d.name, agent: d.agent, provider: d.provider });
  } catch (e) {
    if (isGcError(e, "GC_SESSION_EXISTS")) return (await deps.store.get(d.name))!;
    throw e;
  }
}

/** The patch that records the start of `d` beginning (its intent), with the last step to `starting`. */
function startingPatch(
  d: DesiredSession,
  before: SessionRecord | undefined,
  restarts: number,
  deps: ExecuteDeps,
) {
  return {
    pending: intent("start", before, deps.now()),
    agent: d.agent,
    provider: d.provider,
    lastError: null,
    restarts,
  };
}

/**
 * The record of `d`, which has none (a new session), created already `starting`: its create
 * and its one step `pending → starting` in one write, with the records and events the two
 * would leave (`session.created`, then `session.state`). Resolves its provider and restarts
 * (none); `undefined` when a record appeared meanwhile (the usual steps then take it).
 */
async function createStarting(
  d: DesiredSession,
  reason: string,
  deps: ExecuteDeps,
): Promise<{ provider: Provider; restarts: number } | undefined> {
  let provider: Provider;
  try {
    provider = await deps.providerFor(d.provider);
  } catch (e) {
    await ensureRecord(d, deps); // as the usual steps leave it: recorded, pending
    throw e;
  }
  try {
    const rec = await deps.store.create(
      { name: d.name, agent: d.agent, provider: d.provider },
      { ...startingPatch(d, undefined, 0, deps), transition: { to: "starting", reason } },
    );
    return { provider, restarts: rec.restarts };
  } catch (e) {
    if (isGcError(e, "GC_SESSION_EXISTS")) return undefined;
    throw e;
  }
}

/** Records intent, starts the session, and records the outcome (running, or crashed + backoff). */
async function startSession(
  d: DesiredSession,
  reason: string,
  deps: ExecuteDeps,
  afterExit = false,
): Promise<string> {
  const { store } = deps;
  const recorded =
    (await store.get(d.name)) === undefined ? await createStarting(d, reason, deps) : undefined;
  let provider: Provider;
  let restarts: number;
  if (recorded) ({ provider, restarts } = recorded);
  else {
    const before = await ensureRecord(d, deps);
    // `gc stop NAME` may have held the session after this pass was planned.
    const hold = before.metadata[HOLD_KEY];
    if (hold) return `not started: held by the operator (${hold})`;
    if (before.state === "quarantined") {
      // Planned only when the start config changed since the quarantine (plan.ts).
      await deps.store.appendEvent({
        session: d.name,
        type: "session.quarantine-lifted",
        payload: { reason },
      });
      await walkTo(store, d.name, "pending", reason, {
        quarantineReason: null,
        recentFailures: [],
        backoffUntil: null,
        metadata: { [QUARANTINED_CORE_KEY]: null },
      });
    }
    // RESTARTS counts restarts after the program ended on its own (crash, failed start, exit);
    // restarts gc chose (drift, operator) are `reconcile.restart` events instead.
    restarts =
      before.generation > 0 && (before.state === "backoff" || before.state === "crashed" || afterExit)
        ? before.restarts + 1
        : before.restarts;
    provider = await deps.providerFor(d.provider);
    // Counted when the attempt begins: a start that fails is a restart too (a session failing
    // every start on its way to quarantine shows how often it was tried).
    await walkTo(store, d.name, "starting", reason, startingPatch(d, before, restarts, deps));
  }
  let report: StartReport;
  try {
    report = await provider.start(d.name, d.config, { signal: deps.signal });
  } catch (caught) {
    // What the program printed as it died may hold a secret it was given: masked before the
    // error reaches a log, an event or the store.
    const e = redactError(caught, d.secrets ?? []);
    // The name is taken. Only a session of ours that runs is adopted: a name held by another
    // city's session, or by a start that has not finished (a dead starter's lock), is a failed
    // start (backoff, retried), never a "running" record with nothing behind it.
    const taken = isGcError(e, "GC_SESSION_EXISTS");
    if (taken && (await provider.isRunning(d.name, { signal: deps.signal }).catch(() => false))) {
      return adopt(d, "already running when started", deps);
    }
    if (deps.signal?.aborted) throw e;
    const why = (e as Error).cause === undefined ? "" : ` (${describeError((e as Error).cause)})`;
    const failure = taken
      ? `the name is taken, but no session of ours runs under it: ${describeError(e)}${why}`
      : describeError(e);
    const rec = (await store.get(d.name))!;
    const input = { now: deps.now(), policy: deps.policy, random: deps.random };
    // A start that failed is a crash of this generation: back off or quarantine right away —
    // unless the backend is at fault (outage, refusal): then retried, never counted.
    const fault = faultOf(e);
    const crash = fault
      ? uncountedFailureAction(
          d.name,
          rec,
          input,
          `start failed (${fault} problem, not counted towards quarantine): ${failure}`,
        )
      : crashAction(d.name, rec, null, input, `start failed: ${failure}`, true);
    await recordCrash(d, crash, deps);
    throw e;
  }
  await Promise.all([
    provider.setMeta(d.name, META_CORE, d.core),
    provider.setMeta(d.name, META_LIVE, d.live),
    provider.setMeta(d.name, META_AGENT, d.agent),
  ]).catch(() => undefined); // best-effort: only used to adopt after a controller crash
  await walkTo(store, d.name, "running", reason, {
    coreHash: d.core,
    liveHash: d.live,
    breakdown: d.breakdown,
    pending: null,
    restarts,
  });
  return `${reason}${await recordStartReport(d.name, report, store)}`;
}

/**
 * Records what a start did on the operator's behalf (`session.dialog-answered` per startup
 * dialog answered) and could not confirm (`session.ready-unconfirmed`); resolves the text
 * added to the start's progress line ("" when there is nothing to say).
 */
async function recordStartReport(name: string, report: StartReport, store: SessionStore): Promise<string> {
  const notes: string[] = [];
  for (const a of report.answered ?? []) {
    await store.appendEvent({ session: name, type: "session.dialog-answered", payload: { ...a } });
    notes.push(`answered ${a.dialog}: ${JSON.stringify(a.chose)}`);
  }
  if (report.unconfirmed !== undefined) {
    await store.appendEvent({
      session: name,
      type: "session.ready-unconfirmed",
      payload: { detail: report.unconfirmed },
    });
    notes.push(report.unconfirmed);
  }
  return notes.map((n) => `; ${n}`).join("");
}

/** Takes a running session into the books, with the fingerprints it was started with. */
async function adopt(d: DesiredSession, reason: string, deps: ExecuteDeps): Promise<string> {
  const provider = await deps.providerFor(d.provider);
  const [core, live] = await Promise.all([
    provider.getMeta(d.name, META_CORE).catch(() => undefined),
    provider.getMeta(d.name, META_LIVE).catch(() => undefined),
  ]);
  await ensureRecord(d, deps);
  const inSync = sameCore(core, d);
  await walkTo(deps.store, d.name, "running", `adopted: ${reason}`, {
    // Without a recorded fingerprint we cannot tell drift: treat it as drifted (restart is safe).
    // An unkeyed one (recorded before the city had a key) is re-recorded by the next pass.
    coreHash: core ?? "unknown",
    liveHash: live ?? "unknown",
    // What it started with beyond the fingerprints (work dir, prompt) is not known.
    breakdown: inSync ? keepStartedFields({}, d.breakdown) : {},
    pending: null,
  });
  return `adopted (${inSync ? "in sync" : "fingerprint differs: restart follows"})`;
}

/** Interrupt, bounded wait for idle, stop; the record ends `stopped`. */
async function drain(d: DesiredSession, reason: string, deps: ExecuteDeps): Promise<void> {
  const rec = await deps.store.get(d.name);
  // After a provider change the old session still lives on the old provider.
  const provider = await deps.providerFor(rec?.provider ?? d.provider);
  if (rec && rec.state !== "draining") {
    await walkTo(deps.store, d.name, "draining", reason, { pending: intent("drain", rec, deps.now()) });
  }
  await settle(provider, d.name, d.config.interruptKeys, deps);
  await provider.stop(d.name, { signal: deps.signal });
  await walkTo(deps.store, d.name, "stopped", reason, { pending: null });
}

/**
 * A drain's steps before the stop (architecture §6), for every stop the reconciler chooses:
 * interrupt with the session's own interrupt keys when declared (`interrupt_keys`: Escape for
 * agent CLIs whose Ctrl-C quits), else the provider's interrupt (best effort: a failure to
 * deliver it never keeps the session from its stop), then
 * wait for idle, bounded by `daemon.drain_timeout`, where the provider can tell idle. Only
 * an abort of the pass ends it early (the caller's stop then rejects).
 */
async function settle(
  provider: Provider,
  name: string,
  interruptKeys: readonly string[] | undefined,
  deps: ExecuteDeps,
): Promise<void> {
  await interruptTurn(provider, name, interruptKeys, { signal: deps.signal }).catch(() => undefined);
  if (supportsIdleWait(provider) && (await sessionCapabilities(provider, name)).idleWait) {
    await provider.waitForIdle(name, deps.drainTimeoutMs, { signal: deps.signal }).catch(() => undefined);
  }
}

/** A lost session's orphan kill, when its provider kills orphans (`undefined`: it does not). */
type OrphanKills = (name: string) => Promise<SessionOrphanKill | undefined>;

/**
 * Kills the orphans of the sessions lost with their infrastructure that this pass restarts or
 * defers (start budget), for providers whose sessions are local processes (their orphans:
 * processes re-parented to init still carrying the city's owner tag and a session's name —
 * `OrphanKillProvider`): one census per provider for all of them, begun before any action
 * runs, so no new incarnation is ever among them. A session whose orphans an earlier pass
 * killed (`deps.lostOrphans`) is not counted again. Never rejects: a failure is kept for the
 * event.
 */
function killOrphansOfLosses(actions: readonly Action[], deps: ExecuteDeps): OrphanKills {
  const carried = deps.lostOrphans ?? new Map<string, SessionOrphanKill>();
  for (const name of carried.keys()) if (!deps.desired.has(name)) carried.delete(name);
  const lost = groupBy(actions, (a) =>
    ((a.kind === "start" && a.infra) || (a.kind === "wait" && a.lost)) && !carried.has(a.name)
      ? deps.desired.get(a.name)?.provider
      : undefined,
  );
  const censuses = new Map<string, Promise<boolean>>();
  for (const [providerName, lostActions] of lost) {
    const names = lostActions.map((a) => a.name);
    censuses.set(
      providerName,
      (async () => {
        try {
          const provider = await deps.providerFor(providerName);
          if (!supportsOrphanKill(provider)) return false;
          const killed = new Map<string, number[]>(names.map((n) => [n, []]));
          for (const e of await provider.killOrphans(names))
            if (e.session !== undefined) killed.get(e.session)?.push(e.pid);
          for (const [n, pids] of killed) carried.set(n, { pids });
        } catch (e) {
          // the restarts go on: an orphan must not keep a session down
          for (const n of names) carried.set(n, { error: describeError(e) });
        }
        return true;
      })(),
    );
  }
  return async (name) => {
    const provider = deps.desired.get(name)?.provider;
    const census = provider === undefined ? undefined : censuses.get(provider);
    if (census !== undefined && !(await census)) return undefined;
    const kill = carried.get(name);
    carried.delete(name);
    return kill;
  };
}

/**
 * Counts an infrastructure loss (record metadata {@link INFRA_LOSSES_KEY}) and logs a
 * `session.infrastructure-lost` event saying how many of its orphans were killed
 * (`orphansKilled`, with their pids: `kill`, from {@link killOrphansOfLosses}), or why that
 * failed. Runs before the session is started again. Crash history and RESTARTS are left alone.
 */
async function recordInfraLoss(
  d: DesiredSession,
  reason: string,
  deps: ExecuteDeps,
  kill: SessionOrphanKill | undefined,
): Promise<void> {
  const killed = kill && "pids" in kill ? [...kill.pids] : [];
  const rec = await ensureRecord(d, deps);
  const n = Number(rec.metadata[INFRA_LOSSES_KEY] ?? "0") + 1;
  await casUpdate(deps.store, d.name, () => ({ metadata: { [INFRA_LOSSES_KEY]: String(n) } }));
  await deps.store.appendEvent({
    session: d.name,
    type: "session.infrastructure-lost",
    payload: {
      reason,
      provider: d.provider,
      count: n,
      ...(kill !== undefined ? { orphansKilled: killed.length, orphanPids: killed } : {}),
      ...(kill && "error" in kill ? { orphanKillError: kill.error } : {}),
    },
  });
}

/** Records a death: crashed, then backoff, quarantine, or (clean exit) an immediate restart. */
async function recordCrash(
  d: DesiredSession,
  a: Extract<Action, { kind: "crashed" }>,
  deps: ExecuteDeps,
): Promise<string> {
  const { store } = deps;
  if (!a.failure) {
    await walkTo(store, d.name, "stopped", a.reason, { lastExit: a.exit, pending: null });
    // Clean up whatever the provider keeps of the dead session, then start again at once.
    const provider = await deps.providerFor(d.provider);
    await provider.stop(d.name, { signal: deps.signal });
    return startSession(d, "restart after clean exit", deps, true);
  }
  await walkTo(store, d.name, "crashed", a.reason, {
    lastExit: a.exit,
    lastError: a.reason,
    recentFailures: a.failures,
    pending: null,
  });
  const provider = await deps.providerFor(d.provider);
  // Reap remains (dead panes, holders); best-effort, so a failing stop cannot wedge the loop.
  await provider.stop(d.name, { signal: deps.signal }).catch(() => undefined);
  if (a.next.kind === "quarantine") {
    const n = a.failures.length;
    const why = `${n} failure${n === 1 ? "" : "s"} within the quarantine window; last: ${a.reason}`;
    await walkTo(store, d.name, "quarantined", why, {
      quarantineReason: why,
      backoffUntil: null,
      // What the file said at quarantine: a later change of it lifts the quarantine (plan.ts).
      metadata: { [QUARANTINED_CORE_KEY]: d.core },
    });
    return `quarantined: ${why}`;
  }
  const until = a.next.kind === "backoff" ? a.next.until : deps.now();
  await walkTo(store, d.name, "backoff", `restart after ${Math.round((until - deps.now()) / 1000)} s`, {
    backoffUntil: until,
  });
  return `${a.reason}; backing off until ${new Date(until).toISOString()}`;
}
