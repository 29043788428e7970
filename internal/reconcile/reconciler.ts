/**
 * One reconcile tick: read desired state (keeping the last good config when the file is
 * invalid), take one observation per provider, read the store, plan, execute, and report.
 * Level-triggered and safe to call at any time from any state.
 */
import { describeError, PartialObservationError } from "../base/errors.js";
import { outputTail } from "../runtime/pane-text.js";
import {
  type Provider,
  supportsExitStatus,
  supportsSessionEnd,
  supportsSnapshot,
} from "../runtime/provider.js";
import { casUpdate, type ExitInfo, type SessionRecord, type SessionStore } from "../session/store.js";
import {
  type ActionOutcome,
  type DesiredSession,
  execute,
  type ProgressEvent,
  type SessionOrphanKill,
} from "./execute.js";
import {
  backoffDelayMs,
  type MassStop,
  massStopOf,
  type Observation,
  type Plan,
  type PlanPolicy,
  plan,
  REKEYED_KEY,
  withoutStops,
} from "./plan.js";

/** What a {@link Reconciler} is built from. */
export interface ReconcilerDeps {
  readonly store: SessionStore;
  /** The provider instance for a provider name (cached by the caller). */
  providerFor(provider: string): Promise<Provider>;
  /** Reads and resolves the city file. Throws (e.g. ConfigError) when it is invalid. */
  loadDesired(): Promise<DesiredSession[]>;
  /**
   * Sessions whose stop the operator asked for (pool instances scaled away by `gc scale`,
   * by the file just loaded): the mass-stop guard does not count them. Default: none.
   */
  operatorStops?(): Promise<ReadonlySet<string>>;
  /** Providers to observe even when nothing desired uses them (e.g. the city default). */
  readonly baseProviders: readonly string[];
  /** Crash-loop and start policy; a function is re-read every pass (city file edits apply). */
  readonly policy: PlanPolicy | (() => PlanPolicy);
  readonly concurrency: number;
  readonly drainTimeoutMs: number;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** Options of one tick. */
export interface TickOptions {
  /** Plan only: touch neither the runtime nor the store. */
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
  readonly onProgress?: (e: ProgressEvent) => void;
  /** Apply the city file even when the mass-stop guard would refuse it (`--allow-mass-stop`). */
  readonly allowMassStop?: boolean;
}

/** What one tick saw and did. */
export interface TickReport {
  readonly at: number;
  readonly plan: Plan;
  readonly outcomes: readonly ActionOutcome[];
  /** Set when the city file was invalid this tick (the last good config was used, if any). */
  readonly configError: string | undefined;
  /** Providers whose observation failed, with why. */
  readonly observeErrors: readonly { readonly provider: string; readonly error: string }[];
  readonly desired: readonly DesiredSession[];
  /** When the next pass is due at the latest: the earliest backoff end now recorded. */
  readonly requeueAt: number | undefined;
  /** Set when the mass-stop guard refused the city file this tick (the last applied config ran). */
  readonly massStop?: MassStop | undefined;
  /**
   * The session records as this tick left the store, when that is known without reading it
   * again: set by a tick that executed nothing and re-keyed nothing (an in-sync pass: the
   * records it read are still the store's, as far as this process wrote), so the steps after
   * it (the controller's operator step) share its one read. Absent otherwise: read again.
   */
  readonly records?: readonly SessionRecord[] | undefined;
}

/** Observes every provider once: running names, exits of recorded sessions that stopped. */
export async function observe(
  providers: readonly string[],
  providerFor: (p: string) => Promise<Provider>,
  expectRunning: ReadonlyMap<string, string>,
  signal?: AbortSignal,
): Promise<{ observation: Observation; errors: { provider: string; error: string }[] }> {
  const running = new Set<string>();
  const providerOf = new Map<string, string>();
  const unobservable = new Set<string>();
  const exits = new Map<string, ExitInfo>();
  const vanished = new Set<string>();
  const errors: { provider: string; error: string }[] = [];
  await Promise.all(
    providers.map(async (name) => {
      try {
        const p = await providerFor(name);
        for (const s of await p.listRunning("", { signal })) {
          running.add(s);
          providerOf.set(s, name);
        }
        const gone = [...expectRunning]
          .filter(([s, prov]) => prov === name && !running.has(s))
          .map(([s]) => s);
        if (supportsExitStatus(p)) {
          await Promise.all(
            gone.map(async (s) => {
              const st = await p.lastExit(s, { signal }).catch(() => undefined);
              if (!st) return;
              // Its last words, while the provider still has its screen (a crash-looping
              // session's output is gone once it is restarted or quarantined).
              const tail = outputTail(await p.peek(s, 200, { signal }).catch(() => ""));
              exits.set(s, {
                code: st.code,
                signal: st.signal,
                at: st.at.getTime(),
                ...(tail ? { lastOutput: tail } : {}),
              });
            }),
          );
        }
        for (const s of await lostWithInfrastructure(p, gone, exits, signal)) vanished.add(s);
      } catch (e) {
        if (e instanceof PartialObservationError) {
          // A router with some backends down: what the rest listed is real; the backends
          // that failed are unobservable (their sessions wait, and nothing is stopped).
          for (const s of e.running) {
            running.add(s);
            providerOf.set(s, name);
          }
          for (const f of e.failed) {
            unobservable.add(f.backend);
            errors.push({ provider: `${name} backend ${f.backend}`, error: f.error });
          }
          return;
        }
        unobservable.add(name);
        errors.push({ provider: name, error: describeError(e) });
      }
    }),
  );
  return { observation: { running, unobservable, exits, providerOf, vanished }, errors };
}

/**
 * Which of `gone` (recorded running, not running now) went away with their infrastructure
 * rather than by their program's end — the one rule behind {@link Observation.vanished}: the
 * provider says so ({@link SessionEndProvider}: docker tells a container killed from outside
 * from its program's exit), or a provider that keeps ended sessions with their exit status and
 * lists them (tmux, subprocess, k8s) knows neither the session nor how it ended.
 * @throws when that provider's snapshot fails (the provider is then unobservable).
 */
async function lostWithInfrastructure(
  p: Provider,
  gone: readonly string[],
  exits: ReadonlyMap<string, ExitInfo>,
  signal: AbortSignal | undefined,
): Promise<Set<string>> {
  const lost = new Set<string>();
  if (gone.length === 0) return lost;
  if (supportsSessionEnd(p)) {
    await Promise.all(
      gone.map(async (s) => {
        const end = await p.sessionEnd(s, { signal }).catch(() => undefined);
        if (end === "infrastructure" && !exits.has(s)) lost.add(s);
      }),
    );
  }
  if (p.capabilities().exitStatus && supportsExitStatus(p) && supportsSnapshot(p)) {
    const known = new Set((await p.snapshot("", { signal })).map((x) => x.name));
    for (const s of gone) if (!known.has(s) && !exits.has(s)) lost.add(s);
  }
  return lost;
}

/** Runs reconcile ticks for one city. Not re-entrant: callers serialise ticks. */
export class Reconciler {
  private lastGood: DesiredSession[] | undefined;
  private lastConfigError: string | undefined;
  private lastMassStop: string | undefined;
  /** Stops and run-lives that failed: consecutive failures and when to try again. */
  private readonly retries = new Map<string, { failures: number; until: number }>();
  /** Orphans killed for lost sessions whose restart the start budget deferred (execute.ts). */
  private readonly lostOrphans = new Map<string, SessionOrphanKill>();
  private readonly deps: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
  }

  /**
   * Compacts the store after fingerprints were re-recorded keyed (records marked
   * {@link REKEYED_KEY}: by this pass, or by an earlier one whose compaction failed or never
   * ran), so the replaced unkeyed hashes leave its files; then clears the marks. A failure
   * (a busy store) leaves them for the next pass. Resolves whether any record was marked
   * (then the records may have changed).
   */
  private async compactAfterRekey(
    records: readonly SessionRecord[],
    outcomes: readonly ActionOutcome[],
  ): Promise<boolean> {
    const marked = new Set(records.filter((r) => r.metadata[REKEYED_KEY] !== undefined).map((r) => r.name));
    for (const o of outcomes) if (o.ok && !o.skipped && o.action.kind === "rekey") marked.add(o.action.name);
    if (marked.size === 0) return false;
    const { store } = this.deps;
    if (
      !(await store.compact().then(
        () => true,
        () => false,
      ))
    )
      return true;
    for (const name of marked) {
      await casUpdate(store, name, (r) =>
        r.metadata[REKEYED_KEY] === undefined ? undefined : { metadata: { [REKEYED_KEY]: null } },
      ).catch(() => undefined); // gone, or busy: the mark is cleared by a later pass
    }
    return true;
  }

  /** One full pass. Never throws for a single session's failure; rejects only on abort or store failure. */
  async tick(opts: TickOptions = {}): Promise<TickReport> {
    const { deps } = this;
    const now = deps.now ?? Date.now;
    const random = deps.random ?? Math.random;
    let configError: string | undefined;
    let candidate: DesiredSession[] | undefined;
    try {
      candidate = await deps.loadDesired();
    } catch (e) {
      configError = describeError(e);
      // One event per distinct problem, not one per pass while the file stays broken.
      if (!opts.dryRun && configError !== this.lastConfigError) {
        await deps.store.appendEvent({ type: "config.invalid", payload: { error: configError } });
      }
    }
    this.lastConfigError = configError;
    const at = now();
    if (!this.lastGood && !candidate) {
      // Never had a good config: touch nothing.
      return {
        at,
        plan: { actions: [], requeueAt: undefined },
        outcomes: [],
        configError,
        observeErrors: [],
        desired: [],
        requeueAt: undefined,
      };
    }
    let desired = candidate ?? (this.lastGood as DesiredSession[]);
    const records = await deps.store.list();
    const providers = [
      ...new Set([
        ...deps.baseProviders,
        ...desired.map((d) => d.provider),
        ...(this.lastGood ?? []).map((d) => d.provider),
        ...records.map((r) => r.provider),
      ]),
    ];
    const expectRunning = new Map(
      records.filter((r) => r.state === "running" || r.state === "starting").map((r) => [r.name, r.provider]),
    );
    const { observation, errors } = await observe(
      providers,
      (p) => deps.providerFor(p),
      expectRunning,
      opts.signal,
    );
    const policy = typeof deps.policy === "function" ? deps.policy() : deps.policy;
    const retryAfter = new Map([...this.retries].map(([n, r]) => [n, r.until]));
    let p = plan({ desired, observed: observation, records, now: at, policy, random, retryAfter });
    // The mass-stop guard: a changed file that would stop most of the fleet is not applied;
    // the config applied before keeps running (or, with none, nothing is stopped).
    let massStop: MassStop | undefined;
    // The operator's stops only ever take stops out of the count, so they are read only when
    // the guard would trip without them (not on a steady pass).
    if (candidate && !opts.allowMassStop && massStopOf(p, observation, policy.massStopPercent)) {
      const operatorStops = (await deps.operatorStops?.()) ?? new Set<string>();
      massStop = massStopOf(p, observation, policy.massStopPercent, operatorStops);
    }
    if (massStop) {
      const why = `mass-stop guard: the city file would stop ${massStop.stops.length} of ${massStop.running} running sessions`;
      if (this.lastGood) {
        desired = this.lastGood;
        p = plan({ desired, observed: observation, records, now: at, policy, random, retryAfter });
        if (massStopOf(p, observation, policy.massStopPercent)) p = withoutStops(p, why);
      } else {
        p = withoutStops(p, why);
      }
      const key = massStop.stops.join(",");
      if (!opts.dryRun && key !== this.lastMassStop) {
        await deps.store.appendEvent({
          type: "config.mass_stop_refused",
          payload: { stops: [...massStop.stops], running: massStop.running, percent: massStop.percent },
        });
      }
      this.lastMassStop = key;
    } else {
      this.lastMassStop = undefined;
      if (candidate && !opts.dryRun) this.lastGood = candidate;
    }
    if (opts.dryRun) {
      return {
        at,
        plan: p,
        outcomes: [],
        configError,
        observeErrors: errors,
        desired,
        requeueAt: p.requeueAt,
        massStop,
      };
    }
    const desiredMap = new Map(desired.map((d) => [d.name, d]));
    const recordProvider = new Map(records.map((r) => [r.name, r.provider]));
    const outcomes = await execute(p.actions, {
      store: deps.store,
      providerFor: (name) => deps.providerFor(name),
      desired: desiredMap,
      providerOfUndesired: (name) => observation.providerOf.get(name) ?? recordProvider.get(name),
      now,
      concurrency: deps.concurrency,
      policy,
      random,
      drainTimeoutMs: deps.drainTimeoutMs,
      signal: opts.signal,
      onProgress: opts.onProgress,
      planned: new Map(records.map((r) => [r.name, r.version])),
      lostOrphans: this.lostOrphans,
    });
    const rekeyed = await this.compactAfterRekey(records, outcomes);
    // A failed stop or run-live backs off like a crash (policy backoff, doubling per failure).
    for (const o of outcomes) {
      if (o.action.kind !== "stop" && o.action.kind !== "run-live") continue;
      if (o.ok) this.retries.delete(o.action.name);
      else {
        const failures = (this.retries.get(o.action.name)?.failures ?? 0) + 1;
        this.retries.set(o.action.name, {
          failures,
          until: now() + backoffDelayMs(failures, policy, random),
        });
      }
    }
    for (const [name] of this.retries) {
      if (!p.actions.some((a) => a.name === name)) this.retries.delete(name); // nothing to retry
    }
    // Starts that failed during execute scheduled backoffs the plan could not know about.
    // Never in the past (that would spin the loop), never for a provider we cannot observe.
    const soon = now() + 1_000;
    // Nothing executed (an in-sync pass): the records read at the start are still current.
    const acted = outcomes.some((o) => o.action.kind !== "wait");
    const settled = acted
      ? await deps.store.list({ states: ["backoff", "crashed"] })
      : records.filter((r) => r.state === "backoff" || r.state === "crashed");
    const backoffs = settled
      .filter((r) => !observation.unobservable.has(r.provider))
      .map((r) => (r.state === "crashed" ? soon : Math.max(r.backoffUntil ?? soon, now() + 50)));
    const retryDues = [...this.retries.values()].map((r) => r.until);
    // A session adopted with a fingerprint other than the desired one — none recorded (a
    // controller killed mid-start) or an edit while no controller ran — is drifted: its
    // restart is due at once, not an interval later. Once per adoption: it cannot spin.
    const adoptedDrifted = await Promise.all(
      outcomes
        .filter((o) => o.ok && o.action.kind === "adopt")
        .map(
          async (o) =>
            (await deps.store.get(o.action.name))?.coreHash !== desiredMap.get(o.action.name)?.core,
        ),
    );
    const restartDue = adoptedDrifted.includes(true) ? [now()] : [];
    const dues = [
      ...backoffs,
      ...retryDues,
      ...restartDue,
      ...(p.requeueAt === undefined ? [] : [p.requeueAt]),
    ];
    const requeueAt = dues.length > 0 ? Math.min(...dues) : undefined;
    return {
      at,
      plan: p,
      outcomes,
      configError,
      observeErrors: errors,
      desired,
      requeueAt,
      massStop,
      ...(acted || rekeyed ? {} : { records }),
    };
  }
}
