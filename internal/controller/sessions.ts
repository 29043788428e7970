/**
 * The operator's view of a city's sessions: what the file wants, what the store records and
 * what the providers show, joined by name (one listing per provider). Also resolves a
 * session name given on the command line, with a did-you-mean when it is unknown.
 */

import { describeError, PartialObservationError, SessionNotFoundError } from "../base/errors.js";
import { groupBy } from "../base/group.js";
import { didYouMean } from "../base/suggest.js";
import { nextTurn } from "../base/turn.js";
import { screenRulesOf } from "../config/resolve.js";
import { driftOf as decideDrift } from "../reconcile/drift.js";
import type { DesiredSession } from "../reconcile/execute.js";
import { HOLD_KEY, INFRA_LOSSES_KEY } from "../reconcile/plan.js";
import { advanceWork, lookSessions, looksAtWork, recordedWork, type WorkRecord } from "../reconcile/work.js";
import type { ScreenRules } from "../runtime/agent-screens.js";
import {
  isRouter,
  type PendingInteraction,
  type SessionLook,
  supportsLook,
  supportsSnapshot,
  supportsSnapshotWithLooks,
} from "../runtime/provider.js";
import { classifyLook, classifyScreen, type ObservedWork, screenTail } from "../runtime/screen/work.js";
import type { SessionRecord } from "../session/store.js";
import { type City, currentDigestSessions } from "./city.js";
import type { DesiredDigest, WantedSession } from "./digest-cache.js";

/** One row of `gc status`. */
export interface SessionView {
  readonly name: string;
  readonly agent: string;
  readonly provider: string;
  /**
   * The concrete backend the session is on: under a router (`auto`, `hybrid`) its route
   * (recorded or seen listed, else the one the city file decides), else the provider itself.
   */
  readonly backend: string;
  /** Lifecycle state from the store; `untracked` when running without a record, `new` when never started. */
  readonly state: string;
  /** Why it is in that state (quarantine reason, last error…). */
  readonly reason: string;
  /**
   * Whether its program runs; `null` when that is unknown: the provider it is on (or, under a
   * router, its backend) could not be observed this time (see `CityView.observeErrors`).
   */
  readonly running: boolean | null;
  readonly drift: "none" | "core" | "live";
  /**
   * Start-only fields (work dir, prompt, nudge) changed since it started, which nothing
   * applies until it next starts (see `gc drift`); absent when none.
   */
  readonly nextStart?: readonly string[] | undefined;
  readonly restarts: number;
  /** Times the session was lost with its infrastructure (not crashes; plan.ts INFRA_LOSSES_KEY). */
  readonly infraLosses: number;
  readonly lastActivity: string | null;
  readonly attached: boolean;
  readonly desired: boolean;
  /** The operator's hold (`gc stop NAME`: the controller does not start it), or null. */
  readonly held: string | null;
  /** The interaction the session waits on (state `waiting-for-input`, reason = its prompt). */
  readonly interaction?: PendingInteraction | undefined;
  /** What its agent is doing (internal/reconcile/work.ts), since when. */
  readonly work: Pick<WorkRecord, "state" | "since" | "message">;
  /** The last few non-blank lines of the screen its work was read from; absent without one. */
  readonly screen?: readonly string[] | undefined;
}

/** Screen lines a {@link SessionView} keeps (the dashboard card shows them). */
export const SCREEN_TAIL_LINES = 5;

/**
 * What one look at a running session showed, in the form the status keeps (and the
 * controller sends over its socket): the interaction, the work classified from the look
 * (absent when the look says nothing: no screen, no interaction, no turn), the time of the
 * last output and the screen's last lines.
 */
export interface Seen {
  readonly interaction?: PendingInteraction | undefined;
  readonly work?: ObservedWork | undefined;
  /** Epoch ms. */
  readonly lastActivity?: number | undefined;
  readonly screen?: readonly string[] | undefined;
}

/**
 * {@link Seen} of one look at `now`, its work read with the session's own screen `rules`
 * (by `screens` when given: a screen it read before is not read again). Pure.
 */
export function seenOf(
  look: SessionLook,
  now: number,
  rules?: ScreenRules | undefined,
  screens?: ScreenMemo | undefined,
): Seen {
  return {
    ...(look.interaction ? { interaction: look.interaction } : {}),
    ...(looksAtWork(look)
      ? { work: classifyLook(look, { now, rules, classifyScreen: screens?.classify }) }
      : {}),
    ...(look.lastActivity ? { lastActivity: look.lastActivity.getTime() } : {}),
    ...(look.screen !== undefined ? { screen: screenTail(look.screen, SCREEN_TAIL_LINES) } : {}),
  };
}

/**
 * A session's work as the status shows it: what was just seen joined with the recorded work
 * (`since`), without recording anything; the recorded work when nothing was seen of it (a
 * provider that shows no screen); `unknown` for a session that does not run. Pure.
 */
export function workOf(
  rec: SessionRecord | undefined,
  running: boolean,
  seen: Seen | undefined,
  now: number,
): SessionView["work"] {
  if (!running) return { state: "unknown", since: rec?.stateChangedAt ?? now };
  const prev = recordedWork(rec);
  if (!seen?.work) return prev ?? { state: "unknown", since: now };
  return advanceWork(prev, seen.work, {
    now,
    generation: rec?.generation ?? 0,
    lastActivity: seen.lastActivity,
  }).next;
}

/**
 * runtime/screen/work.ts `classifyScreen` remembered by screen text, rules and prompt: the
 * sessions of one observation that show the same screen (programs that print nothing, idle
 * agents at one prompt) are read once, and an observer that keeps it (the controller's
 * snapshots) does not read a screen again that has not changed since its last observation.
 * Keeps what the last two observations read ({@link next} starts one).
 */
export class ScreenMemo {
  private current = new Map<string, MemoEntry[]>();
  private previous = new Map<string, MemoEntry[]>();

  /** {@link classifyScreen}, answered from memory for a screen, rules and prompt read before. */
  readonly classify: typeof classifyScreen = (screen, rules, prompt) => {
    const now = this.current.get(screen);
    const hit = now?.find((e) => sameScreenRules(e, rules, prompt));
    if (hit) return hit.work;
    const kept = this.previous.get(screen)?.find((e) => sameScreenRules(e, rules, prompt));
    const work = kept ? kept.work : classifyScreen(screen, rules, prompt);
    const entry = { rules, prompt, work };
    if (now) now.push(entry);
    else this.current.set(screen, [entry]);
    return work;
  };

  /** Starts an observation: what the one before last read is forgotten. */
  next(): void {
    this.previous = this.current;
    this.current = new Map();
  }
}

interface MemoEntry {
  readonly rules: ScreenRules;
  readonly prompt: string | undefined;
  readonly work: ObservedWork | undefined;
}

/**
 * Whether `e` was read with the prompt and markers given (marker lists by identity: a
 * city's config keeps them from one observation to the next). Pure.
 */
function sameScreenRules(e: MemoEntry, rules: ScreenRules, prompt: string | undefined): boolean {
  return (
    e.prompt === prompt &&
    e.rules.readyPromptPrefix === rules.readyPromptPrefix &&
    e.rules.readyMarkers === rules.readyMarkers &&
    e.rules.busyMarkers === rules.busyMarkers &&
    e.rules.errorMarkers === rules.errorMarkers
  );
}

/** Everything `gc status` shows. */
export interface CityView {
  readonly sessions: SessionView[];
  readonly desired: readonly WantedSession[];
  readonly records: readonly SessionRecord[];
  readonly configError: string | undefined;
  readonly observeErrors: readonly { provider: string; error: string }[];
}

/** {@link SessionView}'s drift fields of a record against its desired session. Pure. */
export function driftView(
  rec: SessionRecord | undefined,
  d: WantedSession | undefined,
): Pick<SessionView, "drift" | "nextStart"> {
  if (!rec || !d || rec.coreHash === null) return { drift: "none" };
  const decided = decideDrift(rec, d);
  const waiting = decided.nextStart.map((f) => f.field);
  return waiting.length > 0 ? { drift: decided.kind, nextStart: waiting } : { drift: decided.kind };
}

/** The remembered route of every session of the city's routers, by session name. */
async function routesOf(
  city: City,
  providers: readonly string[],
  unobservable: ReadonlySet<string>,
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const pName of providers) {
    if (unobservable.has(pName)) continue;
    const p = await city.providerFor(pName).catch(() => undefined);
    if (!p || !isRouter(p)) continue;
    for (const n of await p.routedSessions({ signal })) out.set(n.name, n.backend);
  }
  return out;
}

/**
 * Joins desired, recorded and observed sessions of the city. With `controllerDesired` (what
 * the running controller's last pass resolved), the city is not resolved again while that
 * digest is current (city.ts currentDigestSessions): drift is then the controller's, which is
 * what it acts on. With `controllerPending`, the controller classifies the running sessions'
 * screens (its providers re-read only screens that changed since its last look).
 */
export async function collectCity(
  city: City,
  signal?: AbortSignal,
  opts: {
    controllerDesired?: Promise<DesiredDigest | undefined>;
    /** The running controller's look at these sessions ({@link seeSessions}), if it gives one. */
    controllerPending?: (
      byProvider: ReadonlyMap<string, readonly string[]>,
    ) => Promise<Map<string, Seen> | undefined>;
    /**
     * Resolves true when this process looks at the screens itself (no controller to ask):
     * a provider that lists and looks in one observation (runtime/provider.ts
     * `SnapshotLookProvider`) then does both at once; of the others, the wanted sessions'
     * screens are asked for as soon as the city file is resolved, so the provider captures
     * them while this process reads the store and the listing ({@link seeSessions}' `started`).
     */
    looksItself?: Promise<boolean>;
    /**
     * Remembers the screens classified (the controller keeps one across its snapshots);
     * default: one for this call.
     */
    screens?: ScreenMemo;
  } = {},
): Promise<CityView> {
  const looksItself = (opts.looksItself ?? Promise.resolve(false)).catch(() => false);
  const screens = opts.screens ?? new ScreenMemo();
  screens.next();
  // The default provider is observed while the city file is resolved and the store read
  // (its connection, e.g. a tmux client process, comes up meanwhile).
  const early = new Map([
    [city.defaultProvider, observeOne(city, city.defaultProvider, signal, looksItself)],
  ]);
  for (const o of early.values()) o.catch(() => undefined); // awaited below
  let desired: readonly WantedSession[] = [];
  let loadError: string | undefined;
  try {
    const digest = await opts.controllerDesired;
    desired = (digest && (await currentDigestSessions(city, digest))) ?? (await city.loadWanted());
  } catch (e) {
    loadError = describeError(e);
  }
  // Read after loading: a file that turned invalid since the city opened is reported too.
  const configError = city.configError ?? loadError;
  const started = (await looksItself) ? startLooks(city, desired, signal) : undefined;
  // Turns of the event loop between the long synchronous steps (resolving, opening the
  // store, decoding its records: the store's list takes more turns itself), so a provider's
  // connection started above goes on with its handshake and requests meanwhile.
  await nextTurn();
  const store = await city.store();
  await nextTurn();
  const records = await store.list();
  const providers = [
    ...new Set([city.defaultProvider, ...desired.map((d) => d.provider), ...records.map((r) => r.provider)]),
  ];
  const observing = observeWithDetails(providers, city, signal, early, looksItself);
  const desiredOf = new Map(desired.map((d) => [d.name, d]));
  const recordOf = new Map(records.map((r) => [r.name, r]));
  // Drift needs no provider: worked out while the providers answer (after the replies
  // already in, so their next requests leave first).
  await nextTurn();
  const drifts = new Map<string, ReturnType<typeof driftView>>();
  for (const name of new Set([...desiredOf.keys(), ...recordOf.keys()]))
    drifts.set(name, driftView(recordOf.get(name), desiredOf.get(name)));
  const { observation, errors, details, looks } = await observing;
  const byProvider = runningByProvider(observation);
  // The looks the observation took stand for the early ones of their provider.
  const taken = new Map(started);
  for (const [pName, l] of looks) taken.set(pName, Promise.resolve(l));
  const seen =
    (await opts.controllerPending?.(byProvider)) ??
    (await seeSessions(city, byProvider, signal, screenRulesBySession(city, desired), taken, screens));
  const now = Date.now();
  const routed = await routesOf(city, providers, observation.unobservable, signal);
  const names = [
    ...new Set([...desired.map((d) => d.name), ...records.map((r) => r.name), ...observation.running]),
  ];
  const sessions = names.map((name): SessionView => {
    const d = desiredOf.get(name);
    const r = recordOf.get(name);
    const running = observation.running.has(name);
    const det = details.get(name);
    const look = running ? seen.get(name) : undefined;
    const waiting = look?.interaction;
    const provider = d?.provider ?? r?.provider ?? observation.providerOf.get(name) ?? "?";
    const backend = routed.get(name) ?? d?.backend ?? provider;
    // Not listed by a provider that could not be looked at: not "not running", but unknown.
    const unknown =
      !running && (observation.unobservable.has(provider) || observation.unobservable.has(backend));
    return {
      name,
      agent: d?.agent ?? r?.agent ?? "?",
      provider,
      backend,
      state: waiting ? "waiting-for-input" : (r?.state ?? (running ? "untracked" : "new")),
      reason: waiting
        ? waiting.prompt || `${waiting.kind} (request ${waiting.requestId})`
        : r
          ? (r.quarantineReason ?? r.metadata[HOLD_KEY] ?? r.stateReason)
          : running
            ? "running without a record"
            : "not started yet",
      running: unknown ? null : running,
      ...(drifts.get(name) ?? driftView(r, d)),
      restarts: r?.restarts ?? 0,
      infraLosses: Number(r?.metadata[INFRA_LOSSES_KEY] ?? 0) || 0,
      lastActivity: det?.lastActivity ? det.lastActivity.toISOString() : null,
      attached: det?.attached ?? false,
      desired: d !== undefined,
      held: r?.metadata[HOLD_KEY] ?? null,
      interaction: waiting,
      work: workOf(r, running, look, now),
      ...(look?.screen !== undefined ? { screen: look.screen } : {}),
    };
  });
  return { sessions, desired, records, configError, observeErrors: errors };
}

type Details = { attached?: boolean | undefined; lastActivity?: Date | undefined };

/**
 * What one provider showed: its running sessions with details, failed router backends, and
 * the looks at its running sessions when it took them in the same observation.
 */
interface ProviderObservation {
  readonly running: readonly string[];
  readonly details: ReadonlyMap<string, Details>;
  readonly failed: readonly { readonly backend: string; readonly error: string }[];
  readonly looks?: Map<string, SessionLook> | undefined;
}

/**
 * Observes one provider: with snapshots, everything in one call (and, when `withLooks`
 * resolves true and the provider can, the looks at its running sessions in the same
 * observation); otherwise listed, then asked per session. A router's snapshot leaves failed
 * backends out, so routers are listed (a partial listing names the backends that failed).
 * @throws when the provider cannot be observed at all.
 */
async function observeOne(
  city: City,
  pName: string,
  signal?: AbortSignal,
  withLooks: Promise<boolean> = Promise.resolve(false),
): Promise<ProviderObservation> {
  const p = await city.providerFor(pName);
  const details = new Map<string, Details>();
  // A snapshot entry may carry no details (k8s lists pods only; a router's docker backend has
  // no snapshot): those sessions are asked one by one, like a provider without snapshots.
  const askBlank = async (names: readonly string[]) => {
    const blank = names.filter((n) => {
      const d = details.get(n);
      return d?.attached === undefined && d?.lastActivity === undefined;
    });
    await Promise.all(
      blank.map(async (n) => {
        const [attached, lastActivity] = await Promise.all([
          p.isAttached(n, { signal }).catch(() => false),
          p.getLastActivity(n, { signal }).catch(() => undefined),
        ]);
        details.set(n, { attached, lastActivity });
      }),
    );
  };
  if (supportsSnapshot(p) && !isRouter(p)) {
    const both = supportsSnapshotWithLooks(p) && (await withLooks);
    const { sessions, looks } = both
      ? await p.snapshotWithLooks("", { signal })
      : { sessions: await p.snapshot("", { signal }), looks: undefined };
    const running: string[] = [];
    for (const s of sessions) {
      if (!s.running) continue;
      running.push(s.name);
      details.set(s.name, s);
    }
    await askBlank(running);
    return { running, details, failed: [], looks };
  }
  let mine: readonly string[];
  let failed: ProviderObservation["failed"] = [];
  try {
    mine = await p.listRunning("", { signal });
  } catch (e) {
    if (!(e instanceof PartialObservationError)) throw e;
    // Some backends of a router are down: the rest is real; name the ones that failed.
    mine = e.running;
    failed = e.failed;
  }
  if (supportsSnapshot(p)) {
    for (const s of await p.snapshot("", { signal }).catch(() => [])) if (s.running) details.set(s.name, s);
  }
  await askBlank(mine);
  return { running: mine, details, failed };
}

/**
 * One observation per provider with each running session's attached state and activity:
 * a provider with snapshots answers everything in one call; others are listed, then asked
 * per session.
 */
async function observeWithDetails(
  providers: readonly string[],
  city: City,
  signal?: AbortSignal,
  started: ReadonlyMap<string, Promise<ProviderObservation>> = new Map(),
  withLooks?: Promise<boolean>,
): Promise<{
  observation: { running: Set<string>; providerOf: Map<string, string>; unobservable: Set<string> };
  errors: { provider: string; error: string }[];
  details: Map<string, Details>;
  /** The looks providers took with their observation, by provider. */
  looks: Map<string, Map<string, SessionLook>>;
}> {
  const running = new Set<string>();
  const providerOf = new Map<string, string>();
  const unobservable = new Set<string>();
  const errors: { provider: string; error: string }[] = [];
  const details = new Map<string, Details>();
  const looks = new Map<string, Map<string, SessionLook>>();
  await Promise.all(
    providers.map(async (pName) => {
      try {
        const o = await (started.get(pName) ?? observeOne(city, pName, signal, withLooks));
        if (o.looks) looks.set(pName, o.looks);
        for (const n of o.running) {
          running.add(n);
          providerOf.set(n, pName);
        }
        for (const f of o.failed) {
          unobservable.add(f.backend);
          errors.push({ provider: `${pName} backend ${f.backend}`, error: f.error });
        }
        for (const [n, d] of o.details) details.set(n, d);
      } catch (e) {
        unobservable.add(pName);
        errors.push({ provider: pName, error: describeError(e) });
      }
    }),
  );
  return { observation: { running, providerOf, unobservable }, errors, details, looks };
}

/** The running sessions of an observation, by the provider they run on. */
function runningByProvider(observation: {
  running: ReadonlySet<string>;
  providerOf: ReadonlyMap<string, string>;
}): Map<string, string[]> {
  return groupBy(observation.running, (name) => observation.providerOf.get(name));
}

/**
 * One look at each running session (provider → names; internal/reconcile/work.ts
 * lookSessions: its screen and interaction from one capture), as {@link Seen}. A provider
 * that fails to answer is skipped (status must still render). The controller answers
 * `pending` requests with it, from its own providers (whose caches skip screens that did
 * not change since its pass looked).
 */
export async function seeSessions(
  city: City,
  byProvider: ReadonlyMap<string, readonly string[]>,
  signal?: AbortSignal,
  rulesOf: (session: string) => ScreenRules | undefined = () => undefined,
  started: ReadonlyMap<string, Promise<Map<string, SessionLook>>> = new Map(),
  screens: ScreenMemo = new ScreenMemo(),
): Promise<Map<string, Seen>> {
  const out = new Map<string, Seen>();
  await Promise.all(
    [...byProvider].map(async ([pName, names]) => {
      const p = await city.providerFor(pName).catch(() => undefined);
      if (!p) return;
      const early = (await started.get(pName)) ?? new Map<string, SessionLook>();
      // A running session the early look did not show (not wanted, or started since) is looked at now.
      const rest = names.filter((n) => !early.has(n));
      const looks =
        rest.length === 0
          ? early
          : new Map([
              ...early,
              ...(await lookSessions(p, rest, signal).catch(() => new Map<string, SessionLook>())),
            ]);
      const now = Date.now();
      for (const n of names) {
        const l = looks.get(n);
        if (l) out.set(n, seenOf(l, now, rulesOf(n), screens));
      }
    }),
  );
  return out;
}

/**
 * The looks {@link seeSessions} takes as started: of the wanted sessions, by provider, asked
 * before the providers' listings are in, so a provider reads the screens while this process
 * reads the store and the listings. Asked only of providers that list all their sessions in
 * one call and look at many at once (snapshot and look, not a router): their look leaves out
 * what does not run at little cost. A provider that looks with its listing
 * (`SnapshotLookProvider`, see {@link observeOne}) is not asked.
 */
function startLooks(
  city: City,
  wanted: readonly Pick<WantedSession, "name" | "provider">[],
  signal?: AbortSignal,
): Map<string, Promise<Map<string, SessionLook>>> {
  const out = new Map<string, Promise<Map<string, SessionLook>>>();
  for (const [pName, names] of groupBy(
    wanted,
    (w) => w.provider,
    (w) => w.name,
  )) {
    out.set(
      pName,
      city
        .providerFor(pName)
        .then((p) =>
          supportsLook(p) && supportsSnapshot(p) && !isRouter(p) && !supportsSnapshotWithLooks(p)
            ? p.look(names, { signal })
            : new Map<string, SessionLook>(),
        )
        .catch(() => new Map<string, SessionLook>()),
    );
  }
  return out;
}

/**
 * The screen rules of each wanted session (config/resolve.ts `screenRulesOf`: its agent's
 * ready prompt and markers in the city file as last loaded); `undefined` for a session the
 * file does not want, or before any file loaded.
 */
export function screenRulesBySession(
  city: City,
  wanted: readonly Pick<WantedSession, "name" | "agent">[],
): (session: string) => ScreenRules | undefined {
  let config: ReturnType<City["current"]>["config"] | undefined;
  try {
    config = city.current().config;
  } catch {
    return () => undefined;
  }
  const agents = new Map(config.agents.map((a) => [a.name, a]));
  const agentOf = new Map(wanted.map((w) => [w.name, w.agent]));
  const cfg = config;
  // One agent's sessions (a pool's instances) share its rules.
  const rulesOf = new Map<string, ScreenRules>();
  return (session) => {
    const a = agents.get(agentOf.get(session) ?? "");
    if (a === undefined) return undefined;
    let rules = rulesOf.get(a.name);
    if (rules === undefined) {
      rules = screenRulesOf(cfg, a);
      rulesOf.set(a.name, rules);
    }
    return rules;
  };
}

/** A session named on the command line, resolved against the city. */
export interface ResolvedSession {
  readonly name: string;
  readonly provider: string;
  readonly desired: DesiredSession | undefined;
  readonly record: SessionRecord | undefined;
}

/**
 * Finds `name` among desired sessions, records and (if needed) running sessions.
 * @throws SessionNotFoundError (exit 3) with a did-you-mean when it is unknown.
 */
export async function resolveSession(
  city: City,
  name: string,
  signal?: AbortSignal,
): Promise<ResolvedSession> {
  let desired: DesiredSession[] = [];
  try {
    desired = await city.loadDesired();
  } catch {
    // an invalid file must not stop operators from reaching running sessions
  }
  // Without a usable store the session is still found by the city file and runtime tags.
  const record = await city
    .store()
    .then((st) => st.get(name))
    .catch(() => undefined);
  const d = desired.find((x) => x.name === name);
  if (d || record) return { name, provider: d?.provider ?? record!.provider, desired: d, record };
  const provider = await city.providerFor(city.defaultProvider);
  const running = await provider.listRunning("", { signal }).catch(() => [] as string[]);
  if (running.includes(name))
    return { name, provider: city.defaultProvider, desired: undefined, record: undefined };
  const known = [...desired.map((x) => x.name), ...running];
  throw new SessionNotFoundError(name, `not in city ${city.name}${didYouMean(name, known)}`);
}
