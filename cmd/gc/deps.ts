/**
 * The composition root: the only place that picks implementations. It finds and loads the
 * city, opens its store, builds providers by name (lazily, so `gc peek` on tmux never loads
 * another backend), and turns the city file into the reconciler's desired sessions.
 */
import { chmod, copyFile, mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import {
  type DesiredSession as ConfigDesired,
  daemonSettings,
  findCityDir,
  type LoadedCity,
  loadCity,
  poolBounds,
  resolveCity,
  resolvePoolInstance,
} from "../../internal/config/index.js";
import type { DesiredSession } from "../../internal/reconcile/execute.js";
import type { PlanPolicy } from "../../internal/reconcile/plan.js";
import { Reconciler } from "../../internal/reconcile/reconciler.js";
import { ConfigError, describeError, UsageError } from "../../internal/runtime/errors.js";
import type { ProviderFactoryOptions } from "../../internal/runtime/factory.js";
import { FakeProvider } from "../../internal/runtime/fake.js";
import { fingerprint } from "../../internal/runtime/fingerprint.js";
import { readFingerprintFiles } from "../../internal/runtime/fingerprint-files.js";
import type { Provider } from "../../internal/runtime/provider.js";
import { openSqliteStore } from "../../internal/session/sqlite-store.js";
import type { SessionStore } from "../../internal/session/store.js";
import type { CommandContext } from "./context.js";
import { extraInstances, readPoolScale } from "./pool-scale.js";

/** Provider kinds `session.provider` may name that this build implements. */
export const PROVIDER_KINDS = ["tmux", "subprocess", "exec", "docker", "fake", "fail"] as const;

/** A loaded city with lazily opened store and providers. Close it when done. */
export interface City {
  readonly loaded: LoadedCity;
  readonly name: string;
  readonly cityDir: string;
  /** `<city>/.gc`, created 0700. */
  readonly stateDir: string;
  /** The city's default session provider spec (`tmux`, `exec:/abs`, …). */
  readonly defaultProvider: string;
  /**
   * Set when the city file is invalid and the last good copy (`.gc/last-good.yaml`) is in
   * use instead: read-only and operating commands keep working, and say so.
   */
  readonly configError: string | undefined;
  store(): Promise<SessionStore>;
  providerFor(spec: string): Promise<Provider>;
  /** The most recently loaded valid city file (updated by every `loadDesired`). */
  current(): LoadedCity;
  /** Re-reads the city file and resolves it (throws ConfigError when invalid). */
  loadDesired(): Promise<DesiredSession[]>;
  /** Releases the store and provider connections (never the sessions). */
  close(): Promise<void>;
}

/** Copy of the last city file that loaded cleanly, under the state dir. */
const LAST_GOOD_FILE = "last-good.yaml";

/** Keeps a copy of a valid city file so commands still work after a bad edit. Best-effort. */
async function saveLastGood(loaded: LoadedCity): Promise<void> {
  const dir = join(loaded.cityDir, ".gc");
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch(() => undefined);
  const copy = join(dir, LAST_GOOD_FILE);
  await copyFile(loaded.file, copy)
    .then(() => chmod(copy, 0o600))
    .catch(() => undefined);
}

/** Resolves and fingerprints every session the city file declares. */
export async function desiredFrom(
  loaded: LoadedCity,
  now: Date,
  scale: Readonly<Record<string, number>> = {},
): Promise<DesiredSession[]> {
  const model = { cityDir: loaded.cityDir, config: loaded.config, promptTemplates: loaded.promptTemplates };
  const resolved: ConfigDesired[] = resolveCity(model, { now });
  // Pools scaled up by `gc scale` run their extra instances too (bounded by max).
  for (const agent of loaded.config.agents) {
    const bounds = poolBounds(agent);
    if (!bounds) continue;
    for (const n of extraInstances(bounds, scale[agent.name])) {
      const extra = resolvePoolInstance(model, agent.name, n, { now });
      if (extra) resolved.push(extra);
    }
  }
  return Promise.all(
    resolved.map(async (d) => {
      const fp = fingerprint(d.config, await readFingerprintFiles(d.config), d.declaredEnvKeys);
      return {
        name: d.name,
        agent: d.agent,
        provider: d.provider,
        dependsOn: d.dependsOn,
        suspended: d.suspended,
        core: fp.core,
        live: fp.live,
        breakdown: fp.breakdown,
        config: d.config,
      };
    }),
  );
}

/** The reconciler's knobs from the city file. */
export function policyOf(
  loaded: LoadedCity,
): PlanPolicy & { intervalMs: number; concurrency: number; drainTimeoutMs: number } {
  return daemonSettings(loaded.config);
}

interface ProviderModule {
  createProvider(opts: ProviderFactoryOptions): Provider | Promise<Provider>;
}

/** Loads `internal/runtime/<kind>/index.js` (kind comes from a closed list, never from a user). */
async function importProvider(kind: "tmux" | "subprocess" | "exec" | "docker"): Promise<ProviderModule> {
  return (await import(`../../internal/runtime/${kind}/index.js`)) as ProviderModule;
}

/** The city's reconciler over `store` (the controller's, or a memory store for dry runs). */
export function newReconciler(city: City, store: SessionStore): Reconciler {
  const policy = policyOf(city.loaded);
  return new Reconciler({
    store,
    providerFor: (p) => city.providerFor(p),
    loadDesired: () => city.loadDesired(),
    baseProviders: [city.defaultProvider],
    // Backoff, quarantine and start budget follow edits of the city file pass by pass.
    policy: () => policyOf(city.current()),
    concurrency: policy.concurrency,
    drainTimeoutMs: policy.drainTimeoutMs,
  });
}

/** Builds a provider from a spec (`tmux`, `subprocess`, `docker`, `exec:/path`, `fake`, `fail`). */
export async function createProvider(
  spec: string,
  base: Omit<ProviderFactoryOptions, "arg" | "settings">,
  settings?: Readonly<Record<string, unknown>>,
): Promise<Provider> {
  const colon = spec.indexOf(":");
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const arg = colon < 0 ? undefined : spec.slice(colon + 1);
  const opts: ProviderFactoryOptions = { ...base, arg, settings };
  switch (kind) {
    case "fake":
      return new FakeProvider({ city: base.city });
    case "fail":
      return FakeProvider.failing({ city: base.city });
    case "tmux":
    case "subprocess":
    case "docker":
      return (await importProvider(kind)).createProvider(opts);
    case "exec":
      if (!arg) throw new UsageError("exec provider needs a script: exec:<script>");
      return (await importProvider(kind)).createProvider(opts);
    default:
      throw new UsageError(
        `provider ${JSON.stringify(spec)} is not available in this build (known: ${PROVIDER_KINDS.join(", ")})`,
      );
  }
}

/**
 * Finds and loads the city for this invocation (`--city`, `--config`, `GC_CITY`, or the
 * nearest directory upward holding city.yaml).
 * @throws ConfigError when the file is missing or invalid.
 */
export async function openCity(ctx: CommandContext, opts: { allowInvalid?: boolean } = {}): Promise<City> {
  const cityDir = ctx.cityFlag ? resolve(ctx.cwd, ctx.cityFlag) : undefined;
  const configFile = ctx.configFlag ? resolve(ctx.cwd, ctx.configFlag) : undefined;
  let loaded: LoadedCity;
  let configError: string | undefined;
  let lastGood: string | undefined;
  try {
    loaded = await loadCity({ cityDir, configFile, env: ctx.env, cwd: ctx.cwd });
    await saveLastGood(loaded);
  } catch (e) {
    if (!(e instanceof ConfigError) || !opts.allowInvalid) throw e;
    const dir = cityDir ?? (configFile ? dirname(configFile) : await findCityDir(ctx.cwd));
    if (!dir) throw e;
    lastGood = join(dir, ".gc", LAST_GOOD_FILE);
    try {
      loaded = await loadCity({ cityDir: dir, configFile: lastGood, env: ctx.env, cwd: ctx.cwd });
    } catch {
      throw e; // no usable last good copy: report the real problem
    }
    configError = describeError(e);
  }
  const stateDir = join(loaded.cityDir, ".gc");
  let current = loaded;
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const name = loaded.config.workspace.name;
  let store: Promise<SessionStore> | undefined;
  const providers = new Map<string, Promise<Provider>>();
  const now = new Date(); // captured once per process: the beacon must not change between ticks
  const settingsFor = (spec: string): Readonly<Record<string, unknown>> | undefined => {
    const kind = spec.split(":")[0] ?? spec;
    const section = (loaded.config.session as unknown as Record<string, unknown>)[kind];
    return section && typeof section === "object" ? (section as Record<string, unknown>) : undefined;
  };
  return {
    loaded,
    name,
    cityDir: loaded.cityDir,
    stateDir,
    defaultProvider: loaded.config.session.provider,
    configError,
    current: () => current,
    store() {
      store ??= Promise.resolve(openSqliteStore({ cityDir: loaded.cityDir, singleTenant: true }));
      return store;
    },
    providerFor(spec) {
      let p = providers.get(spec);
      if (!p) {
        p = createProvider(spec, { city: name, cityDir: loaded.cityDir, stateDir }, settingsFor(spec));
        providers.set(spec, p);
        // A failed construction (e.g. an exec script's probe timing out) is retried next time.
        p.catch(() => providers.delete(spec));
      }
      return p;
    },
    async loadDesired() {
      const fresh = await loadCity({
        cityDir: loaded.cityDir,
        configFile: lastGood ?? loaded.file,
        env: ctx.env,
        cwd: ctx.cwd,
      });
      if (!lastGood) await saveLastGood(fresh);
      current = fresh;
      return desiredFrom(fresh, now, await readPoolScale(stateDir));
    },
    async close() {
      await Promise.all([...providers.values()].map(async (p) => (await p.catch(() => undefined))?.close()));
      if (store) await (await store).close();
    },
  };
}
