/**
 * The routing provider behind `auto` and `hybrid`: one {@link Provider} composed of several
 * concrete backends. Each session runs on exactly one backend — the one its start config names
 * (`StartConfig.backend`, decided by config resolution) or, without one, the one the rules in
 * route.ts pick. The route is remembered in a record under `<stateDir>/routes/` (so every
 * process routes a session the same way, even while it is not running) and re-learnt from the
 * backends' own listings (their ownership tags), so a controller restart recovers it.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  describeError,
  type FailedBackend,
  isGcError,
  PartialObservationError,
  ProviderError,
  SessionExistsError,
  SessionNotFoundError,
  UnsupportedError,
} from "../../base/errors.js";
import { nameProblem, validateSessionName } from "../../base/names.js";
import type { CensusEntry } from "../../proc/census.js";
import type {
  BackendShutdownProvider,
  CensusProvider,
  CommandProvider,
  ExecCommandOptions,
  ExecCommandResult,
  ExitStatus,
  ExitStatusProvider,
  IdleResult,
  IdleWaitProvider,
  ImmediateNudgeProvider,
  InteractionProvider,
  InteractionResponse,
  NudgeContent,
  OpOptions,
  OrphanKillProvider,
  OutputWatchProvider,
  PendingInteraction,
  Provider,
  ProviderCapabilities,
  RouterProvider,
  SessionEnd,
  SessionEndProvider,
  SessionLook,
  SessionOutputWatch,
  SessionSnapshot,
  SnapshotProvider,
  StartConfig,
  StartReport,
  StyledPeekProvider,
} from "../provider.js";
import {
  supportsCensus,
  supportsExecCommand,
  supportsExitStatus,
  supportsIdleWait,
  supportsInteraction,
  supportsLook,
  supportsNudgeNow,
  supportsOrphanKill,
  supportsOutputWatch,
  supportsSessionEnd,
  supportsShutdown,
  supportsSnapshot,
  supportsStyledPeek,
} from "../provider.js";
import { type RouteRules, routeSession } from "./route.js";

/** What a {@link RoutingProvider} is built from. */
export interface RoutingProviderOptions {
  /** `auto` or `hybrid`. */
  readonly name: string;
  readonly rules: RouteRules;
  /** The backends known at construction, by spec; their capabilities' intersection is the whole's. */
  readonly backends: ReadonlyMap<string, Provider>;
  /** Opens a backend that a start config names but that is not yet known. */
  readonly open: (spec: string) => Promise<Provider>;
  /** Route records live in `<stateDir>/routes/`. */
  readonly stateDir: string;
  /** `close` closes the backends too (when this provider built them). */
  readonly ownsBackends: boolean;
}

/** Directory of route records under a state dir. */
export const ROUTES_DIR = "routes";

/** Capabilities every backend has. */
function intersect(all: readonly ProviderCapabilities[]): ProviderCapabilities {
  const [first, ...rest] = all;
  if (!first) throw new Error("a routing provider needs at least one backend");
  const out: Record<string, boolean> = { ...first };
  for (const c of rest) {
    for (const k of Object.keys(out))
      out[k] = out[k] === true && (c as unknown as Record<string, boolean>)[k] === true;
  }
  return out as unknown as ProviderCapabilities;
}

/**
 * Routes sessions to backends. Listing merges every backend (de-duplicated) and rejects with
 * {@link PartialObservationError} (carrying what the healthy backends listed) when some
 * backends fail. Per-session operations go to the session's backend; for a session on no
 * backend they behave as every provider does for a missing session.
 */
export class RoutingProvider
  implements
    Provider,
    RouterProvider,
    CensusProvider,
    IdleWaitProvider,
    OutputWatchProvider,
    InteractionProvider,
    ImmediateNudgeProvider,
    ExitStatusProvider,
    SessionEndProvider,
    CommandProvider,
    SnapshotProvider,
    StyledPeekProvider,
    BackendShutdownProvider,
    OrphanKillProvider
{
  readonly name: string;
  private readonly rules: RouteRules;
  private readonly backends = new Map<string, Provider>();
  private readonly opening = new Map<string, Promise<Provider>>();
  private readonly open: (spec: string) => Promise<Provider>;
  private readonly routesDir: string;
  private readonly ownsBackends: boolean;
  private readonly caps: ProviderCapabilities;
  /** Route of each session this process started or saw listed. */
  private readonly routes = new Map<string, string>();
  /** Backends that listed each session in the last listing (more than one = a duplicate). */
  private readonly listedOn = new Map<string, string[]>();

  constructor(opts: RoutingProviderOptions) {
    this.name = opts.name;
    this.rules = opts.rules;
    for (const [spec, p] of opts.backends) this.backends.set(spec, p);
    this.open = opts.open;
    this.routesDir = join(opts.stateDir, ROUTES_DIR);
    this.ownsBackends = opts.ownsBackends;
    this.caps = intersect([...this.backends.values()].map((p) => p.capabilities()));
  }

  /** Specs of the backends in use, in a stable order. */
  backendSpecs(): string[] {
    return [...this.backends.keys()];
  }

  /** The provider of backend `spec`, opened on first use. */
  private backend(spec: string): Promise<Provider> {
    const known = this.backends.get(spec);
    if (known) return Promise.resolve(known);
    let p = this.opening.get(spec);
    if (!p) {
      p = this.open(spec).then((prov) => {
        this.backends.set(spec, prov);
        return prov;
      });
      this.opening.set(spec, p);
      p.catch(() => undefined).finally(() => this.opening.delete(spec));
    }
    return p;
  }

  /** The route record of `name`; names that are not valid session names have none. */
  private routeFile(name: string): string {
    return join(this.routesDir, name);
  }

  private async readRoute(name: string): Promise<string | undefined> {
    if (nameProblem(name) !== undefined) return undefined;
    try {
      const v = (await readFile(this.routeFile(name), "utf8")).trim();
      return v === "" ? undefined : v;
    } catch {
      return undefined;
    }
  }

  private async writeRoute(name: string, backend: string): Promise<void> {
    await mkdir(this.routesDir, { recursive: true, mode: 0o700 });
    const tmp = `${this.routeFile(name)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(tmp, `${backend}\n`, { mode: 0o600 });
    await rename(tmp, this.routeFile(name));
  }

  private async dropRoute(name: string): Promise<void> {
    this.routes.delete(name);
    this.listedOn.delete(name);
    if (nameProblem(name) !== undefined) return;
    await rm(this.routeFile(name), { force: true });
  }

  /** The remembered route of `name` (this process's, else its route record), without probing. */
  async backendOf(name: string): Promise<string | undefined> {
    const known = this.routes.get(name);
    if (known !== undefined) return known;
    const recorded = await this.readRoute(name);
    if (recorded !== undefined) this.routes.set(name, recorded);
    return recorded;
  }

  /** Every remembered route: this process's, then the route records. */
  async routedSessions(): Promise<{ name: string; backend: string }[]> {
    const out = new Map(this.routes);
    const files = await readdir(this.routesDir).catch(() => [] as string[]);
    await Promise.all(
      files
        .filter((f) => !f.endsWith(".tmp") && !out.has(f))
        .map(async (f) => {
          const b = await this.readRoute(f);
          if (b !== undefined && !out.has(f)) out.set(f, b);
        }),
    );
    return [...out]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, backend]) => ({ name, backend }));
  }

  /**
   * The backend that holds `name`: its remembered route, else the first backend that reports
   * it running (the route is then remembered in memory). `undefined` when none does.
   */
  private async locate(name: string, opts?: OpOptions): Promise<Provider | undefined> {
    const route = await this.backendOf(name);
    if (route !== undefined) return this.backend(route);
    const found = await Promise.all(
      [...this.backends].map(async ([spec, p]) =>
        (await p.isRunning(name, opts).catch(() => false)) ? spec : "",
      ),
    );
    const spec = found.find((s) => s !== "");
    if (spec === undefined) return undefined;
    this.routes.set(name, spec);
    return this.backend(spec);
  }

  /** Runs `fn` on the backend of `name`, or `missing()` when no backend holds it. */
  private async on<T>(
    name: string,
    opts: OpOptions | undefined,
    fn: (p: Provider) => Promise<T>,
    missing: () => T,
  ): Promise<T> {
    const p = await this.locate(name, opts);
    return p ? fn(p) : missing();
  }

  /**
   * Starts `name` on `config.backend`, else on the backend the rules pick. The route is
   * recorded before the backend is asked (a crash mid-start still knows where to look) and
   * dropped again when the start fails.
   * @throws InvalidNameError when `name` is not a valid session name.
   * @throws SessionExistsError when `name` runs on this or another backend.
   */
  async start(name: string, config: StartConfig, opts?: OpOptions): Promise<StartReport> {
    opts?.signal?.throwIfAborted();
    validateSessionName(name);
    const backend = config.backend ?? routeSession(this.rules, name).backend;
    const previous = await this.backendOf(name);
    if (previous !== undefined && previous !== backend) {
      const old = await this.backend(previous).catch(() => undefined);
      if (old && (await old.isRunning(name, opts).catch(() => false))) {
        throw new SessionExistsError(name, { cause: new Error(`running on backend ${previous}`) });
      }
    }
    const p = await this.backend(backend);
    await this.writeRoute(name, backend);
    this.routes.set(name, backend);
    try {
      return await p.start(name, config, opts);
    } catch (e) {
      if (!isGcError(e, "GC_SESSION_EXISTS")) await this.dropRoute(name);
      throw e;
    }
  }

  /**
   * Stops `name` on its backend and on every backend that last listed it (so a duplicate
   * left by a crash goes too); on every backend when its route is unknown. Idempotent.
   */
  async stop(name: string, opts?: OpOptions): Promise<void> {
    const targets = new Set(this.listedOn.get(name) ?? []);
    const route = await this.backendOf(name);
    if (route !== undefined) targets.add(route);
    if (targets.size === 0) for (const spec of this.backends.keys()) targets.add(spec);
    await Promise.all([...targets].map(async (spec) => (await this.backend(spec)).stop(name, opts)));
    await this.dropRoute(name);
  }

  async interrupt(name: string, opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => p.interrupt(name, opts),
      () => undefined,
    );
  }

  isRunning(name: string, opts?: OpOptions): Promise<boolean> {
    return this.on(
      name,
      opts,
      (p) => p.isRunning(name, opts),
      () => false,
    );
  }

  /**
   * Every backend's running sessions, merged and de-duplicated. Learns each listed session's
   * route. @throws PartialObservationError when some backends fail (with the others' names);
   * ProviderError when all fail.
   */
  async listRunning(prefix: string, opts?: OpOptions): Promise<string[]> {
    const specs = [...this.backends.keys()];
    const settled = await Promise.allSettled(
      specs.map(async (s) => (await this.backend(s)).listRunning(prefix, opts)),
    );
    opts?.signal?.throwIfAborted();
    const listedOn = new Map<string, string[]>();
    const failed: FailedBackend[] = [];
    settled.forEach((r, i) => {
      const spec = specs[i] as string;
      if (r.status === "rejected") {
        failed.push({ backend: spec, error: describeError(r.reason) });
        return;
      }
      for (const n of r.value) listedOn.set(n, [...(listedOn.get(n) ?? []), spec]);
    });
    if (failed.length === specs.length) {
      const first = settled.find((r) => r.status === "rejected");
      throw new ProviderError(
        this.name,
        `no backend could be observed: ${failed.map((f) => `${f.backend}: ${f.error}`).join("; ")}`,
        { cause: first?.status === "rejected" ? first.reason : undefined },
      );
    }
    for (const [n, on] of listedOn) {
      this.listedOn.set(n, on);
      const route = this.routes.get(n);
      if (route === undefined || !on.includes(route)) {
        // A recorded route wins over discovery when that backend lists the session.
        const recorded = await this.readRoute(n);
        this.routes.set(n, recorded !== undefined && on.includes(recorded) ? recorded : (on[0] as string));
      }
    }
    const names = [...listedOn.keys()].sort();
    if (failed.length > 0) throw new PartialObservationError(this.name, names, failed);
    return names;
  }

  processAlive(name: string, names: readonly string[], opts?: OpOptions): Promise<boolean> {
    return this.on(
      name,
      opts,
      (p) => p.processAlive(name, names, opts),
      () => false,
    );
  }

  async nudge(name: string, content: NudgeContent, opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => p.nudge(name, content, opts),
      () => undefined,
    );
  }

  async nudgeNow(name: string, content: NudgeContent, opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => (supportsNudgeNow(p) ? p.nudgeNow(name, content, opts) : p.nudge(name, content, opts)),
      () => undefined,
    );
  }

  async sendKeys(name: string, keys: readonly string[], opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => p.sendKeys(name, keys, opts),
      () => undefined,
    );
  }

  peek(name: string, lines: number, opts?: OpOptions): Promise<string> {
    return this.on(name, opts, (p) => p.peek(name, lines, opts), notFound(name));
  }

  /** The backend's styled screen where it has one (tmux, docker, k8s), else its peek text. */
  peekStyled(name: string, lines: number, opts?: OpOptions): Promise<string> {
    return this.on(
      name,
      opts,
      (p) => (supportsStyledPeek(p) ? p.peekStyled(name, lines, opts) : p.peek(name, lines, opts)),
      notFound(name),
    );
  }

  setMeta(name: string, key: string, value: string, opts?: OpOptions): Promise<void> {
    return this.on(name, opts, (p) => p.setMeta(name, key, value, opts), notFound(name));
  }

  getMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    return this.on(name, opts, (p) => p.getMeta(name, key, opts), notFound(name));
  }

  removeMeta(name: string, key: string, opts?: OpOptions): Promise<void> {
    return this.on(name, opts, (p) => p.removeMeta(name, key, opts), notFound(name));
  }

  getLastActivity(name: string, opts?: OpOptions): Promise<Date | undefined> {
    return this.on(
      name,
      opts,
      (p) => p.getLastActivity(name, opts),
      () => undefined,
    );
  }

  async clearScrollback(name: string, opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => p.clearScrollback(name, opts),
      () => undefined,
    );
  }

  async copyTo(name: string, src: string, relDst: string, opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => p.copyTo(name, src, relDst, opts),
      () => undefined,
    );
  }

  async runLive(name: string, config: StartConfig, opts?: OpOptions): Promise<void> {
    await this.on(
      name,
      opts,
      (p) => p.runLive(name, config, opts),
      () => undefined,
    );
  }

  attach(name: string, opts?: OpOptions): Promise<void> {
    return this.on(
      name,
      opts,
      (p) => {
        if (!p.capabilities().attach) throw new UnsupportedError(`attach on backend ${p.name}`);
        return p.attach(name, opts);
      },
      notFound(name),
    );
  }

  isAttached(name: string, opts?: OpOptions): Promise<boolean> {
    return this.on(
      name,
      opts,
      (p) => p.isAttached(name, opts),
      () => false,
    );
  }

  /** The intersection of every backend's capabilities (known at construction). */
  capabilities(): ProviderCapabilities {
    return this.caps;
  }

  /** The routed backend's capabilities; the intersection when `name` is on no backend. */
  async capabilitiesOf(name: string, opts?: OpOptions): Promise<ProviderCapabilities> {
    const p = await this.locate(name, opts);
    return p ? p.capabilities() : this.caps;
  }

  /** @throws UnsupportedError when the session's backend cannot wait for idle. */
  waitForIdle(name: string, timeoutMs: number, opts?: OpOptions): Promise<IdleResult> {
    return this.on(
      name,
      opts,
      (p) => {
        if (!supportsIdleWait(p)) throw new UnsupportedError(`waitForIdle on backend ${p.name}`);
        return p.waitForIdle(name, timeoutMs, opts);
      },
      (): IdleResult => "gone",
    );
  }

  /** The backend's output watch; `undefined` when the session is missing or its backend has none. */
  watchOutput(name: string, opts?: OpOptions): Promise<SessionOutputWatch | undefined> {
    return this.on(
      name,
      opts,
      async (p) => (supportsOutputWatch(p) ? p.watchOutput(name, opts) : undefined),
      () => undefined,
    );
  }

  /** The backend's pending interaction; `undefined` when it has none or no interactions. */
  pending(name: string, opts?: OpOptions): Promise<PendingInteraction | undefined> {
    return this.on(
      name,
      opts,
      async (p) =>
        supportsInteraction(p) && p.capabilities().interaction ? p.pending(name, opts) : undefined,
      () => undefined,
    );
  }

  /**
   * Looks of the running sessions among `names`: one look per backend for its sessions (a
   * backend without looks answers with their pending interactions only); sessions on no
   * backend are absent. @throws when a backend cannot be observed.
   */
  async look(names: readonly string[], opts?: OpOptions): Promise<Map<string, SessionLook>> {
    const groups = new Map<Provider, string[]>();
    for (const n of names) {
      const p = await this.locate(n, opts).catch(() => undefined);
      if (!p) continue;
      const list = groups.get(p);
      if (list) list.push(n);
      else groups.set(p, [n]);
    }
    const out = new Map<string, SessionLook>();
    await Promise.all(
      [...groups].map(async ([p, list]) => {
        if (supportsLook(p)) {
          for (const [n, l] of await p.look(list, opts)) out.set(n, l);
          return;
        }
        if (!supportsInteraction(p) || !p.capabilities().interaction) return;
        await Promise.all(
          list.map(async (n) => out.set(n, { interaction: await p.pending(n, opts).catch(() => undefined) })),
        );
      }),
    );
    return out;
  }

  /** @throws UnsupportedError when the session's backend has no interactions. */
  respond(name: string, response: InteractionResponse, opts?: OpOptions): Promise<void> {
    return this.on(
      name,
      opts,
      (p) => {
        if (!supportsInteraction(p)) throw new UnsupportedError(`interactions on backend ${p.name}`);
        return p.respond(name, response, opts);
      },
      notFound(name),
    );
  }

  /** The backend's record of how `name` ended; `undefined` when it keeps none. */
  lastExit(name: string, opts?: OpOptions): Promise<ExitStatus | undefined> {
    return this.on(
      name,
      opts,
      async (p) => (supportsExitStatus(p) ? p.lastExit(name, opts) : undefined),
      () => undefined,
    );
  }

  /** The backend's word on how `name` ended; `undefined` when it cannot tell or holds no such session. */
  sessionEnd(name: string, opts?: OpOptions): Promise<SessionEnd | undefined> {
    return this.on(
      name,
      opts,
      async (p) => (supportsSessionEnd(p) ? p.sessionEnd(name, opts) : undefined),
      () => undefined,
    );
  }

  /** @throws UnsupportedError when the session's backend cannot run commands. */
  execCommand(name: string, argv: readonly string[], opts?: ExecCommandOptions): Promise<ExecCommandResult> {
    return this.on(
      name,
      opts,
      (p) => {
        if (!supportsExecCommand(p)) throw new UnsupportedError(`exec on backend ${p.name}`);
        return p.execCommand(name, argv, opts);
      },
      notFound(name),
    );
  }

  /**
   * Details of every backend's sessions, merged (the first backend listing a name wins). A
   * backend that fails is left out here; {@link listRunning} is what reports it.
   * @throws ProviderError when no backend answers.
   */
  async snapshot(prefix: string, opts?: OpOptions): Promise<SessionSnapshot[]> {
    const specs = [...this.backends.keys()];
    const settled = await Promise.allSettled(
      specs.map(async (s) => {
        const p = await this.backend(s);
        if (supportsSnapshot(p)) return p.snapshot(prefix, opts);
        return (await p.listRunning(prefix, opts)).map((name): SessionSnapshot => ({ name, running: true }));
      }),
    );
    if (settled.every((r) => r.status === "rejected")) {
      throw new ProviderError(this.name, "no backend could be observed", {
        cause: (settled[0] as PromiseRejectedResult | undefined)?.reason,
      });
    }
    const out = new Map<string, SessionSnapshot>();
    for (const r of settled) {
      if (r.status === "fulfilled") for (const s of r.value) if (!out.has(s.name)) out.set(s.name, s);
    }
    return [...out.values()];
  }

  /**
   * The census of every local backend ({@link CensusProvider}), one entry per process (two
   * backends find the same orphans by the city's tag). Covers only the local backends: what
   * the others run, `gc stop` checks by listing.
   */
  async census(): Promise<CensusEntry[]> {
    const local = [...this.backends.values()].filter(supportsCensus);
    const byPid = new Map<number, CensusEntry>();
    for (const e of (await Promise.all(local.map((p) => p.census()))).flat()) byPid.set(e.pid, e);
    return [...byPid.values()].sort((a, b) => a.pid - b.pid);
  }

  /**
   * Kills the orphans of sessions `names` on every backend that can ({@link OrphanKillProvider}: the
   * local ones). Every such backend is asked, not only the session's route: a session lost
   * with its infrastructure may have been moved. Safe because an orphan is one whose parent
   * is init — a live session's processes on another backend have theirs.
   */
  async killOrphans(names: readonly string[]): Promise<CensusEntry[]> {
    const local = [...this.backends.values()].filter(supportsOrphanKill);
    return (await Promise.all(local.map((p) => p.killOrphans(names)))).flat();
  }

  /**
   * Shuts every backend down (`shutdown` where it has one, else stops each session it
   * lists) and forgets every route. @throws the first failure after trying every backend.
   */
  async shutdown(opts?: OpOptions): Promise<void> {
    const errors: unknown[] = [];
    await Promise.all(
      [...this.backends.values()].map(async (p) => {
        try {
          if (supportsShutdown(p)) await p.shutdown(opts);
          else await Promise.all((await p.listRunning("", opts)).map((n) => p.stop(n, opts)));
        } catch (e) {
          errors.push(e);
        }
      }),
    );
    if (errors.length > 0) throw errors[0];
    this.routes.clear();
    this.listedOn.clear();
    await rm(this.routesDir, { recursive: true, force: true });
  }

  /** Closes the backends' connections when this provider opened them. Idempotent. */
  async close(): Promise<void> {
    if (!this.ownsBackends) return;
    await Promise.all([...this.backends.values()].map((p) => p.close()));
  }
}

function notFound(name: string): () => never {
  return () => {
    throw new SessionNotFoundError(name);
  };
}
