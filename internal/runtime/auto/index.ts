/**
 * The routing providers' public surface: the uniform factories of `auto` and `hybrid` (one
 * implementation, {@link RoutingProvider}, with the rules of route.ts) that the composition
 * root and `gc conformance` call by name. The registry injects how a backend is built
 * ({@link BackendFactory}), so routing never imports the registry that lists it.
 */
import { UsageError } from "../../base/errors.js";
import type { ProviderFactoryOptions } from "../factory.js";
import type { Provider } from "../provider.js";
import { RoutingProvider } from "./provider.js";
import { ruleBackends, rulesFromSettings } from "./route.js";

export { ROUTES_DIR, RoutingProvider, type RoutingProviderOptions } from "./provider.js";
export { type Route, type RouteRules, routeSession, ruleBackends, rulesFromSettings } from "./route.js";

/** Builds a concrete backend from its spec (the registry's `createProviderFromSpec`). */
export type BackendFactory = (
  spec: string,
  base: Omit<ProviderFactoryOptions, "arg" | "settings">,
) => Promise<Provider>;

/** Kinds that route instead of running sessions themselves. */
export const ROUTING_KINDS = ["auto", "hybrid"] as const;

/**
 * Builds a routing provider of `kind`. Settings: `session.auto` (`default`, plus `backends`:
 * every backend the city's agents declare) or `session.hybrid` (`local`, `remote`,
 * `remote_match`). Every backend is opened now (through `opts.openBackend` when given, so
 * they share the city's instances and settings; else built by `createBackend` and owned by
 * the router); a backend that cannot be opened fails the whole, and the caller retries later.
 * @throws UsageError when the settings name no backend, or name a routing provider as one.
 */
export async function createRouting(
  kind: "auto" | "hybrid",
  opts: ProviderFactoryOptions,
  createBackend: BackendFactory,
): Promise<RoutingProvider> {
  const rules = rulesFromSettings(kind, opts.settings);
  if (!rules) {
    throw new UsageError(
      kind === "auto"
        ? "auto needs session.auto.default (a concrete provider)"
        : "hybrid needs session.hybrid.local and session.hybrid.remote",
    );
  }
  const declared = Array.isArray(opts.settings?.backends)
    ? (opts.settings.backends as unknown[]).filter((b): b is string => typeof b === "string")
    : [];
  const specs = [...new Set([...ruleBackends(rules), ...declared])];
  for (const s of specs) {
    const k = s.split(":")[0] ?? s;
    if ((ROUTING_KINDS as readonly string[]).includes(k)) {
      throw new UsageError(`${kind}: backend ${JSON.stringify(s)} is itself a routing provider`);
    }
  }
  const owned = opts.openBackend === undefined;
  const base = { city: opts.city, cityId: opts.cityId, cityDir: opts.cityDir, stateDir: opts.stateDir };
  const open = opts.openBackend ?? ((spec: string) => createBackend(spec, base));
  const settled = await Promise.allSettled(specs.map(open));
  const failed = settled.find((r) => r.status === "rejected");
  if (failed) {
    if (owned) {
      await Promise.all(
        settled.map((r) => (r.status === "fulfilled" ? r.value.close().catch(() => undefined) : undefined)),
      );
    }
    throw failed.reason;
  }
  const backends = new Map<string, Provider>(
    settled.map((r, i) => [specs[i] as string, (r as PromiseFulfilledResult<Provider>).value]),
  );
  return new RoutingProvider({
    name: kind,
    rules,
    backends,
    open,
    stateDir: opts.stateDir,
    ownsBackends: owned,
  });
}

/** `auto`: each session on the backend its agent declares, else `session.auto.default`. */
export const createAutoProvider = (opts: ProviderFactoryOptions, createBackend: BackendFactory) =>
  createRouting("auto", opts, createBackend);
/** `hybrid`: `session.hybrid.remote` for names matching `remote_match`, else `local`. */
export const createHybridProvider = (opts: ProviderFactoryOptions, createBackend: BackendFactory) =>
  createRouting("hybrid", opts, createBackend);
