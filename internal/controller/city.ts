/**
 * A loaded city and what the controller needs around it: the city file (with the last good
 * copy for degraded mode), its lazily opened store and providers, and the desired sessions
 * resolved and fingerprinted from the file. Implementations (the provider factory, the store)
 * are given by the caller — the composition root, `cmd/gc/deps.ts` — so the controller can be
 * embedded and tested without the CLI.
 */

import { existsSync } from "node:fs";
import { chmod, copyFile, mkdir, readFile, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { ConfigError, describeError } from "../base/errors.js";
import {
  type DesiredSession as ConfigDesired,
  daemonSettings,
  declaredBackends,
  findCityDir,
  type LoadedCity,
  loadCity,
  poolBounds,
  resolveCity,
  resolvePoolInstance,
} from "../config/index.js";
import type { DesiredSession } from "../reconcile/execute.js";
import type { PlanPolicy } from "../reconcile/plan.js";
import { Reconciler } from "../reconcile/reconciler.js";
import type { ProviderFactoryOptions } from "../runtime/factory.js";
import {
  canonicalJson,
  type FingerprintFiles,
  type FingerprintKey,
  fingerprint,
  secretsOfConfig,
} from "../runtime/fingerprint.js";
import { hashPathContent, readFingerprintFiles } from "../runtime/fingerprint-files.js";
import { recordProvider, storedIdentity } from "../runtime/identity.js";
import type { Provider } from "../runtime/provider.js";
import { entryOf, specKind } from "../runtime/registry/index.js";
import { xxhReady } from "../runtime/xxh.js";
import { readRecovery } from "../session/recovery.js";
import type { SessionStore, StoreFileCheck } from "../session/store.js";
import {
  type DesiredDigest,
  DIGEST_CACHE_FILE,
  digestCacheKey,
  readDigestCache,
  savable,
  type WantedSession,
  writeDigestCache,
} from "./digest-cache.js";
import { ensureFingerprintKey, readFingerprintKey } from "./fingerprint-key.js";
import { extraInstances, readPoolScale, scaledAwayInstances } from "./pool-scale.js";

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
   * use instead: read-only and operating commands keep working, and say so. A city opened
   * with `allowInvalid` also sets it when the file turns invalid later (seen by
   * {@link loadDesired}, which then keeps resolving the last file loaded) and clears it when
   * the file loads again.
   */
  readonly configError: string | undefined;
  /**
   * Set when this shell lacks variables the city file interpolates, which were read as empty
   * to observe and stop the city: what resolves from them here is not what the sessions run
   * with, so drift computed here is unknown (`gc drift` says so).
   */
  readonly envIncomplete: boolean;
  store(): Promise<SessionStore>;
  /**
   * Whether the open store's file (`.gc/state.db`) was deleted, replaced or damaged under it.
   * A city that applies the file (the controller) writes a deleted or damaged one back from
   * its open copy (moving the file found at the path aside) and reopens it — and when its
   * copy cannot be read either, reopens the store, whose recovery starts a new file; any
   * other city reopens a file that replaced its own and keeps its open copy of a deleted
   * one. `damaged`: an operation of the open store met damage (SQLITE_NOTADB, SQLITE_CORRUPT).
   * Resolves what was found when {@link store} now gives a new store, else `undefined`. The
   * old store stays open (an operation may be using it) until the city closes.
   */
  checkStore(opts?: {
    damaged?: boolean;
  }): Promise<{ found: StoreFileCheck; movedAside?: string } | undefined>;
  providerFor(spec: string): Promise<Provider>;
  /**
   * Every session provider spec the city has used (recorded in its identity by the commands
   * that apply the file), so `gc stop` covers a provider the city no longer declares.
   */
  usedProviders(): readonly string[];
  /** The most recently loaded valid city file (updated by every `loadDesired`). */
  current(): LoadedCity;
  /**
   * Re-reads the city file when it (or a prompt template) changed on disk since the last
   * read; resolves the current one.
   * @throws ConfigError when the changed file is invalid (`current()` stays the last valid one).
   */
  refresh(): Promise<LoadedCity>;
  /**
   * Re-reads the city file when it (or a prompt template) changed on disk since the last
   * read, and resolves it. Invalid: throws ConfigError, unless the city was opened with
   * `allowInvalid`; then it resolves the last file loaded and sets `configError`.
   */
  loadDesired(): Promise<DesiredSession[]>;
  /**
   * What {@link loadDesired} resolves, in drift's form (no start config). A city opened with
   * a `build` that does not apply the file takes it from the digest an applying process of
   * the same build saved (digest-cache.ts) while that digest is current for this shell's
   * parse of the file, the pool scale, the fingerprint key and every fingerprinted file;
   * else it resolves. (An applying city saves its digest at each {@link loadDesired}.)
   */
  loadWanted(): Promise<readonly WantedSession[]>;
  /**
   * Makes sure the city has its fingerprint key (fingerprint-key.ts), creating it (0600) when
   * missing; later resolutions are keyed. Called before a pass that applies the file (not a
   * dry run); read commands only read the key, and take a malformed one for none.
   * @throws StoreError when the key file holds no key.
   */
  ensureFingerprintKey(): Promise<void>;
  /** What the last successful {@link loadDesired} resolved, in checkable form (none before). */
  desiredDigest(): DesiredDigest | undefined;
  /** Releases the store and provider connections (never the sessions). */
  close(): Promise<void>;
}

/** Builds a provider from a spec (`tmux`, `exec:/path`, …) with its `session.<kind>` settings. */
export type ProviderFactory = (
  spec: string,
  base: Omit<ProviderFactoryOptions, "arg" | "settings">,
  settings?: Readonly<Record<string, unknown>>,
) => Promise<Provider>;

/** The implementations a city is opened with (chosen by the composition root). */
export interface CityDeps {
  readonly createProvider: ProviderFactory;
  /** Opens the city's session store (the controller's is SQLite under `.gc/`). */
  readonly openStore: (cityDir: string) => SessionStore | Promise<SessionStore>;
}

/** Where to find the city file. */
export interface CityLocation {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** Absolute city directory, if given. */
  readonly cityDir?: string | undefined;
  /** Absolute city file, if given. */
  readonly configFile?: string | undefined;
  /** When the file is invalid, fall back to `.gc/last-good.yaml` (and report the error). */
  readonly allowInvalid?: boolean | undefined;
  /**
   * This process applies the file (the controller, `gc start|reconcile|scale`): it keeps
   * `.gc/last-good.yaml` a copy of every valid file loaded. Read commands never write it.
   */
  readonly applies?: boolean | undefined;
  /**
   * This process only reads the city (`gc status`): its providers are built read-only
   * (runtime/factory.ts `readOnly`).
   */
  readonly readOnly?: boolean | undefined;
  /**
   * The running gc's build id (internal/build/build-id.ts). With it, the city file's parse is
   * cached under `.gc` (config/parse-cache.ts): applying processes write the cache, every
   * process reads it, so a read command skips parsing a file an applier already parsed.
   */
  readonly build?: string | undefined;
}

/** `env` in which every unset variable reads as the empty string. */
function withUnsetAsEmpty(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return new Proxy(env, { get: (t, k) => (typeof k === "string" ? (t[k] ?? "") : undefined) });
}

/** Copy of the last city file that loaded cleanly, under the state dir. */
export const LAST_GOOD_FILE = "last-good.yaml";

/**
 * Keeps a copy of a valid city file so commands still work after a bad edit. Best-effort.
 * Writes only when the copy differs: commands that merely read leave the disk alone.
 */
async function saveLastGood(loaded: LoadedCity): Promise<void> {
  const dir = join(loaded.cityDir, ".gc");
  const copy = join(dir, LAST_GOOD_FILE);
  const [now, kept] = await Promise.all([
    readFile(loaded.file).catch(() => undefined),
    readFile(copy).catch(() => undefined),
  ]);
  if (now !== undefined && kept !== undefined && now.equals(kept)) return;
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch(() => undefined);
  await copyFile(loaded.file, copy)
    .then(() => chmod(copy, 0o600))
    .catch(() => undefined);
}

/**
 * What identifies the on-disk inputs of a loaded city file without reading them: device,
 * inode, size and change/modify times (ns) of the file and of each prompt template. Equal
 * keys mean nothing was edited (an editor's replace changes the inode; a write, the times).
 */
async function inputsKey(file: string, loaded: LoadedCity): Promise<string> {
  const paths = [
    file,
    ...loaded.config.agents.flatMap((a) =>
      a.prompt_template === undefined ? [] : [resolve(loaded.cityDir, a.prompt_template)],
    ),
  ];
  const parts = await Promise.all(
    paths.map(async (p) => {
      const st = await stat(p, { bigint: true }).catch(() => undefined);
      return st ? `${p}:${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : `${p}:-`;
    }),
  );
  return parts.join("|");
}

/**
 * What {@link desiredFrom} keeps between calls so a pass over an unchanged city redoes no
 * work: the resolved sessions of the last (loaded file, pool scale), and each session's
 * fingerprinted form with the file hashes it was computed from. Owned by one city.
 */
export interface DesiredMemo {
  loaded?: LoadedCity;
  scaleKey?: string;
  resolved?: ConfigDesired[];
  readonly sessions: WeakMap<
    ConfigDesired,
    { readonly files: string; readonly hashes: FingerprintFiles; readonly session: DesiredSession }
  >;
  /** The digest of the last call. */
  digest?: DesiredDigest;
}

/** Canonical form of a pool scale (sorted entries, JSON). Pure. */
export function scaleKeyOf(scale: Readonly<Record<string, number>>): string {
  return JSON.stringify(Object.entries(scale).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Adds the content hash of each file `cfg` names to `into`, by path. */
function hashesByPath(
  cfg: DesiredSession["config"],
  files: FingerprintFiles,
  into: Record<string, string>,
): void {
  if (cfg.sessionSetupScript && files.sessionSetupScript)
    into[cfg.sessionSetupScript] = files.sessionSetupScript;
  if (cfg.overlayDir && files.overlayDir) into[cfg.overlayDir] = files.overlayDir;
  for (const [src, h] of Object.entries(files.copyFiles ?? {})) into[src] = h;
}

/** Whether `cfg` names a file whose content is fingerprinted (fingerprint-files.ts). Pure. */
function namesFiles(cfg: DesiredSession["config"]): boolean {
  return Boolean(cfg.sessionSetupScript) || Boolean(cfg.overlayDir) || (cfg.copyFiles ?? []).length > 0;
}

/** What readFingerprintFiles gives a start config that names no file. */
function noFiles(): FingerprintFiles {
  return { sessionSetupScript: undefined, overlayDir: undefined, copyFiles: {} };
}

/**
 * The sessions of `digest` when it still describes what this city's file resolves to: the
 * file on disk (re-read when changed) has the digest's revision, the pool scale is the same
 * and every fingerprinted file hashes as it did. Else `undefined` (resolve anew). The
 * digest's environment is its resolver's (the controller's, which is what acts on drift).
 */
export async function currentDigestSessions(
  city: City,
  digest: DesiredDigest,
): Promise<readonly WantedSession[] | undefined> {
  const [loaded, scale] = await Promise.all([city.refresh(), readPoolScale(city.stateDir)]);
  if (loaded.revision !== digest.revision || scaleKeyOf(scale) !== digest.scale) return undefined;
  return (await filesUnchanged(digest)) ? digest.sessions : undefined;
}

/** Whether every file `digest` fingerprinted still hashes as it did. */
async function filesUnchanged(digest: DesiredDigest): Promise<boolean> {
  const same = await Promise.all(
    Object.entries(digest.files).map(async ([path, hash]) => (await hashPathContent(path)) === hash),
  );
  return same.every(Boolean);
}

/** An empty {@link DesiredMemo}. */
export function desiredMemo(): DesiredMemo {
  return { sessions: new WeakMap() };
}

/**
 * Resolves and fingerprints every session the city file declares. With `memo`, resolution is
 * redone only when `loaded` or `scale` changed, and a session is fingerprinted again only when
 * it was resolved anew or a file it names hashes differently (files are hashed every call).
 */
export async function desiredFrom(
  loaded: LoadedCity,
  now: Date,
  scale: Readonly<Record<string, number>> = {},
  memo?: DesiredMemo,
  key?: FingerprintKey,
): Promise<DesiredSession[]> {
  const scaleKey = scaleKeyOf(scale);
  let resolved: ConfigDesired[];
  if (memo?.resolved && memo.loaded === loaded && memo.scaleKey === scaleKey) {
    resolved = memo.resolved;
  } else {
    const model = { cityDir: loaded.cityDir, config: loaded.config, promptTemplates: loaded.promptTemplates };
    resolved = resolveCity(model, { now });
    // Pools scaled up by `gc scale` run their extra instances too (bounded by max).
    for (const agent of loaded.config.agents) {
      const bounds = poolBounds(agent);
      if (!bounds) continue;
      for (const n of extraInstances(bounds, scale[agent.name])) {
        const extra = resolvePoolInstance(model, agent.name, n, { now });
        if (extra) resolved.push(extra);
      }
    }
    if (memo) Object.assign(memo, { loaded, scaleKey, resolved });
  }
  const hashes: Record<string, string> = {};
  // Hashing needs the hasher ready (fingerprint.ts): readFingerprintFiles awaits it, and a
  // session naming no file skips that read.
  await xxhReady;
  const out = await Promise.all(
    resolved.map(async (d): Promise<DesiredSession> => {
      const files = namesFiles(d.config) ? await readFingerprintFiles(d.config) : noFiles();
      hashesByPath(d.config, files, hashes);
      const filesKey = JSON.stringify(files);
      const hit = memo?.sessions.get(d);
      if (hit && hit.files === filesKey) return hit.session;
      const fp = fingerprint(d.config, files, d.declaredEnvKeys, loaded.secrets, d.startText, key);
      const session: DesiredSession = {
        name: d.name,
        agent: d.agent,
        provider: d.provider,
        ...(d.backend === undefined ? {} : { backend: d.backend }),
        dependsOn: d.dependsOn,
        suspended: d.suspended,
        core: fp.core,
        live: fp.live,
        breakdown: fp.breakdown,
        ...(fp.legacy === undefined ? {} : { legacy: fp.legacy }),
        config: d.config,
        secrets: secretsOfConfig(d.config, loaded.secrets),
      };
      memo?.sessions.set(d, { files: filesKey, hashes: files, session });
      return session;
    }),
  );
  if (memo) {
    const sessions = out.map(wantedOf);
    memo.digest = { revision: loaded.revision, scale: scaleKey, files: hashes, sessions };
  }
  return out;
}

/** `d` in drift's form: its fingerprints, without the start config (nothing secret). Pure. */
export function wantedOf({
  name,
  agent,
  provider,
  backend,
  core,
  live,
  breakdown,
  legacy,
}: WantedSession): WantedSession {
  return {
    name,
    agent,
    provider,
    ...(backend === undefined ? {} : { backend }),
    core,
    live,
    breakdown,
    ...(legacy === undefined ? {} : { legacy }),
  };
}

/** The reconciler's knobs from the city file. */
export function policyOf(
  loaded: LoadedCity,
): PlanPolicy & { intervalMs: number; concurrency: number; drainTimeoutMs: number } {
  return daemonSettings(loaded.config);
}

/** The city's reconciler over `store` (the controller's, or a memory store for dry runs). */
export function newReconciler(city: City, store: SessionStore): Reconciler {
  const policy = policyOf(city.loaded);
  return new Reconciler({
    store,
    providerFor: (p) => city.providerFor(p),
    loadDesired: () => city.loadDesired(),
    operatorStops: async () =>
      scaledAwayInstances(city.current().config.agents, await readPoolScale(city.stateDir)),
    baseProviders: [city.defaultProvider],
    // Backoff, quarantine and start budget follow edits of the city file pass by pass; a
    // recovered state.db holds unrecorded sessions down until the operator has reviewed.
    policy: () => ({
      ...policyOf(city.current()),
      holdUnrecorded: readRecovery(city.stateDir) !== undefined,
    }),
    concurrency: policy.concurrency,
    drainTimeoutMs: policy.drainTimeoutMs,
  });
}

/**
 * Finds and loads a city (the given dir or file, or the nearest directory upward from `cwd`
 * holding city.yaml) with the given implementations.
 * @throws ConfigError when the file is missing or invalid (and no last good copy is allowed).
 */
export async function openCity(where: CityLocation, deps: CityDeps): Promise<City> {
  const { cityDir, configFile } = where;
  const parseCache = { parseCacheBuild: where.build, writeParseCache: where.applies === true };
  let loaded: LoadedCity;
  let configError: string | undefined;
  let lastGood: string | undefined;
  let envIncomplete = false;
  let env = where.env;
  try {
    loaded = await loadCity({ cityDir, configFile, env, cwd: where.cwd, ...parseCache });
    if (where.applies) await saveLastGood(loaded);
  } catch (e) {
    if (!(e instanceof ConfigError) || !where.allowInvalid) throw e;
    const dir = cityDir ?? (configFile ? dirname(configFile) : await findCityDir(where.cwd));
    if (!dir) throw e;
    lastGood = join(dir, ".gc", LAST_GOOD_FILE);
    const fallback = (withEnv: NodeJS.ProcessEnv) =>
      loadCity({ cityDir: dir, configFile: lastGood, env: withEnv, cwd: where.cwd, ...parseCache });
    try {
      loaded = await fallback(env);
    } catch (again) {
      // The last good file may itself name variables this shell lacks (the city runs with the
      // values it was started with): read them as empty, enough to observe and stop it.
      if (!(again instanceof ConfigError) || !again.message.includes("environment variable")) throw e;
      env = withUnsetAsEmpty(where.env);
      envIncomplete = true;
      try {
        loaded = await fallback(env);
      } catch {
        throw e; // no usable last good copy: report the real problem
      }
    }
    configError = describeError(e);
  }
  const stateDir = join(loaded.cityDir, ".gc");
  let current = loaded;
  // The file is parsed again only when it (or a prompt template) changed on disk.
  const sourceFile = () => lastGood ?? loaded.file;
  let currentKey: string | undefined = lastGood ? undefined : await inputsKey(loaded.file, loaded);
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  // A malformed key file is the applying commands' error to report (ensureFingerprintKey):
  // reading and stopping the city must not depend on it.
  let key = await readFingerprintKey(stateDir).catch(() => undefined);
  const name = loaded.config.workspace.name;
  let store: Promise<SessionStore> | undefined;
  /** Stores replaced by {@link City.checkStore}, closed with the city. */
  const retired: SessionStore[] = [];
  const providers = new Map<string, Promise<Provider>>();
  const now = new Date(); // captured once per process: the beacon must not change between ticks
  let memo = desiredMemo();
  /** Why the file, valid when this city opened, no longer loads (allowInvalid only). */
  let lateError: string | undefined;
  /** `spec`'s section of the city file as last loaded (an edit of it applies to new instances). */
  const settingsFor = (spec: string): Readonly<Record<string, unknown>> | undefined => {
    const kind = specKind(spec);
    const section = (current.config.session as unknown as Record<string, unknown>)[kind];
    if (!section || typeof section !== "object") return undefined;
    // The auto router opens every backend its agents declare, not only its default.
    if (kind === "auto") return { ...section, backends: declaredBackends(current.config) };
    return section as Record<string, unknown>;
  };
  /** Each spec's instance key, with the city file it was made from (asked per session, every pass). */
  const keys = new Map<string, { from: LoadedCity; key: string }>();
  const instanceKey = (spec: string): string => {
    const hit = keys.get(spec);
    if (hit?.from === current) return hit.key;
    const routing = entryOf(spec)?.routing === true;
    const own = settingsFor(spec);
    const key = `${spec}\0${canonicalJson(routing ? { own, session: current.config.session } : own)}`;
    keys.set(spec, { from: current, key });
    return key;
  };
  /**
   * One instance per spec and settings: after an edit of `session.<kind>` (a new docker
   * image, k8s resources…) the next use builds an instance with the new settings; a router's
   * key covers every section (its backends are built with theirs) and the backends its
   * agents declare. Earlier instances stay open (they may be mid-operation) until the city
   * closes.
   */
  const providerFor = (spec: string): Promise<Provider> => {
    const key = instanceKey(spec);
    let p = providers.get(key);
    if (!p) {
      const own = settingsFor(spec);
      p = deps.createProvider(
        spec,
        // A router's backends are this city's providers (one instance per spec).
        // Owned by the city's stored identity (name at creation + id), never its current name:
        // a renamed workspace keeps its fleet (runtime/identity.ts).
        {
          city: loaded.identity.name,
          cityId: loaded.identity.id,
          cityDir: loaded.cityDir,
          stateDir,
          openBackend: providerFor,
          ...(where.readOnly ? { readOnly: true } : {}),
        },
        own,
      );
      providers.set(key, p);
      // What may start sessions is recorded before it does: `gc stop` covers it after a switch.
      if (where.applies) recordProvider(loaded.cityDir, loaded.identity.name, spec);
      // A failed construction (e.g. an exec script's probe timing out) is retried next time.
      p.catch(() => providers.delete(key));
    }
    return p;
  };
  const refresh = async (): Promise<LoadedCity> => {
    const key = await inputsKey(sourceFile(), current);
    if (key !== currentKey) {
      const fresh = await loadCity({
        cityDir: loaded.cityDir,
        configFile: sourceFile(),
        env,
        cwd: where.cwd,
        ...parseCache,
      });
      if (!lastGood && where.applies) await saveLastGood(fresh);
      current = fresh;
      // Keyed by what was on disk before the read: an edit during it is seen next time.
      currentKey = key;
    }
    return current;
  };
  /** The city file as {@link refresh} reads it; for an `allowInvalid` city, the last valid one. */
  const loadCurrent = async (): Promise<LoadedCity> => {
    try {
      const fresh = await refresh();
      lateError = undefined;
      return fresh;
    } catch (e) {
      // Opened to observe and operate, not to apply: a file that turned invalid after this
      // city opened (under a running dashboard or gc wait) leaves its sessions on the last
      // one loaded, as a file invalid at open leaves them on .gc/last-good.yaml, and
      // `configError` says why; they are not "not in the city file".
      if (!(e instanceof ConfigError) || !where.allowInvalid) throw e;
      lateError = describeError(e);
      return current;
    }
  };
  /** What the digest last saved was resolved from: a pass over an unchanged city saves nothing. */
  let saved:
    | { loaded: LoadedCity; key: FingerprintKey | undefined; scale: string; files: string }
    | undefined;
  /** An applying city saves the digest of `fresh` (digest-cache.ts) when what it came from changed. */
  const saveDigest = (fresh: LoadedCity): void => {
    const digest = memo.digest;
    if (!where.applies || where.build === undefined || !digest || !savable(fresh, digest)) return;
    const files = canonicalJson(digest.files);
    const same =
      saved?.loaded === fresh && saved.key === key && saved.scale === digest.scale && saved.files === files;
    if (same) return;
    writeDigestCache(
      stateDir,
      digestCacheKey({ build: where.build, loaded: fresh, scale: digest.scale, key }),
      digest,
    );
    saved = { loaded: fresh, key, scale: digest.scale, files };
  };
  const resolveAt = async (fresh: LoadedCity, scale: Record<string, number>): Promise<DesiredSession[]> => {
    const desired = await desiredFrom(fresh, now, scale, memo, key);
    saveDigest(fresh);
    return desired;
  };
  const loadDesired = async (): Promise<DesiredSession[]> =>
    resolveAt(await loadCurrent(), await readPoolScale(stateDir));
  const loadWanted = async (): Promise<readonly WantedSession[]> => {
    const fresh = await loadCurrent();
    const scale = await readPoolScale(stateDir);
    // The key (a digest of the whole config) is made only when there is a saved digest to match.
    if (where.build !== undefined && !where.applies && existsSync(join(stateDir, DIGEST_CACHE_FILE))) {
      const k = digestCacheKey({ build: where.build, loaded: fresh, scale: scaleKeyOf(scale), key });
      const cached = readDigestCache(stateDir, k);
      if (cached && (await filesUnchanged(cached))) return cached.sessions;
    }
    return resolveAt(fresh, scale);
  };
  return {
    loaded,
    name,
    cityDir: loaded.cityDir,
    stateDir,
    defaultProvider: loaded.config.session.provider,
    get configError() {
      return configError ?? lateError;
    },
    envIncomplete,
    current: () => current,
    store() {
      // A store that cannot be opened is a rejection (never a throw): callers may go on without it.
      store ??= (async () => deps.openStore(loaded.cityDir))();
      return store;
    },
    async checkStore(opts = {}) {
      const open = store && (await store.catch(() => undefined));
      const r = open?.checkFile?.({ writeBack: where.applies === true, damaged: opts.damaged === true });
      if (!open || !r || r.found === "same" || r.found === "missing") return undefined;
      retired.push(open);
      store = (async () => deps.openStore(loaded.cityDir))();
      await store;
      return r;
    },
    providerFor,
    usedProviders: () => storedIdentity(loaded.cityDir)?.providers ?? loaded.identity.providers,
    refresh,
    loadDesired,
    loadWanted,
    async ensureFingerprintKey() {
      const made = await ensureFingerprintKey(stateDir);
      if (key !== undefined && Buffer.from(key).equals(made)) return;
      key = made;
      memo = desiredMemo(); // fingerprints made without (or with another) key are stale
    },
    desiredDigest: () => memo.digest,
    async close() {
      // The store closes while the providers' connections wind down (e.g. a tmux client exits).
      await Promise.all([
        ...[...providers.values()].map(async (p) => (await p.catch(() => undefined))?.close()),
        store?.then(
          (s) => s.close(),
          () => undefined, // never opened: nothing to close
        ),
        ...retired.map((s) => s.close()),
      ]);
    },
  };
}
