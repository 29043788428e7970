/**
 * The one list of session providers this build has. Each entry names a provider, how it is
 * written in the city file (`tmux`, `exec:<script>`), its factory (imported lazily, so using
 * one provider never loads another's dependencies), its `session.<name>` section of the city
 * file (schema, keys required when it is used, keys naming files), whether `gc conformance`
 * tests it, and the README's description of it. The config schema's provider names and
 * sections, `gc config validate`, the composition root, `gc conformance` and the README
 * provider table all derive from it.
 *
 * Adding a provider: a directory `internal/runtime/<name>/` whose `index.ts` exports
 * `createProvider` (and, when it has settings, a light `schema.ts` declaring them), its
 * conformance target `conformance/targets/<name>.ts` exporting `createTarget` (found by name:
 * this module never imports conformance/), and one entry below.
 */

import { UsageError } from "../../base/errors.js";
import { s } from "../../base/schema-builder.js";
import type { ObjectSchema } from "../../base/schema-containers.js";
import type { Field, Infer, InferInput, JsonSchema } from "../../base/schema-core.js";
import type { StringSchema } from "../../base/schema-scalars.js";
import { didYouMean } from "../../base/suggest.js";
import { ACP_SETTINGS_SCHEMA } from "../acp/schema.js";
import { autoSettingsSchema, hybridSettingsSchema } from "../auto/schema.js";
import { DOCKER_SETTINGS_SCHEMA } from "../docker/schema.js";
import { EXEC_SETTINGS_SCHEMA } from "../exec/schema.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { K8S_SETTINGS_SCHEMA } from "../k8s/schema.js";
import type { Provider } from "../provider.js";
import { SUBPROCESS_SETTINGS_SCHEMA } from "../subprocess/schema.js";
import { TMUX_SETTINGS_SCHEMA } from "../tmux/schema.js";

/** A provider module: `internal/runtime/<name>/index.ts`. */
export interface ProviderModule {
  createProvider(opts: ProviderFactoryOptions): Provider | Promise<Provider>;
}

// biome-ignore lint/suspicious/noExplicitAny: any object schema (its fields vary per provider)
type AnyObjectSchema = ObjectSchema<any>;

/** One provider of this build. */
export interface ProviderEntry {
  /** The kind, as written before any `:` in the city file. */
  readonly name: string;
  /** `required`: written `<name>:<arg>` (exec's script); `none`: just `<name>`. */
  readonly arg: "none" | "required";
  /** What the argument is, for listings (`exec:<script>`). */
  readonly argName?: string;
  /** How a missing argument is explained: `a script path, e.g. "exec:./provider.sh"`. */
  readonly argHint?: string;
  /**
   * Routers (`auto`, `hybrid`): compose the concrete providers instead of running sessions;
   * never a backend of another router. Listed apart from the concrete providers.
   */
  readonly routing?: boolean;
  /** Test doubles: accepted, but never listed to users. */
  readonly internal?: boolean;
  /** The README table's "backend" column. */
  readonly backend: string;
  readonly load: () => Promise<ProviderModule>;
  /**
   * Its `session.<name>` section of the city file (absent: the provider takes no settings).
   * The factory receives the decoded section as `settings`.
   */
  readonly settings?: AnyObjectSchema;
  /**
   * Keys of its section that shape each session it makes (image, limits, mounts…): part of
   * each session's core fingerprint, so an edit of one restarts the sessions on the provider.
   * Not: keys saying where sessions live (engine, context, namespace, socket) or bounding
   * operations (timeouts).
   */
  readonly sessionSettings?: readonly string[];
  /** Keys of its section `gc config validate` requires when a session uses the provider. */
  readonly requiredWhenUsed?: readonly string[];
  /** Keys of its section naming a file (relative to the city directory) that must exist. */
  readonly fileSettings?: readonly string[];
  /**
   * `gc conformance <name>` tests it with `conformance/targets/<name>.ts` (and the README's
   * provider table lists it).
   */
  readonly conformance?: boolean;
}

/** Every provider this build has. One entry each. */
const ENTRIES = [
  {
    name: "tmux",
    arg: "none",
    backend: "one persistent tmux control-mode client per city socket",
    load: () => import("../tmux/index.js"),
    settings: TMUX_SETTINGS_SCHEMA,
    conformance: true,
  },
  {
    name: "subprocess",
    arg: "none",
    backend: "one detached holder process per city owning each session's real pty",
    load: () => import("../subprocess/index.js"),
    settings: SUBPROCESS_SETTINGS_SCHEMA,
    conformance: true,
  },
  {
    name: "exec",
    arg: "required",
    argName: "script",
    argHint: 'a script path, e.g. "exec:./provider.sh"',
    backend: "your script, Gas City exec protocol (+ opt-in v2)",
    load: () => import("../exec/index.js"),
    settings: EXEC_SETTINGS_SCHEMA,
    conformance: true,
  },
  {
    name: "k8s",
    arg: "none",
    backend: "a pod per session (tmux inside) through @kubernetes/client-node, exec over WebSocket",
    load: () => import("../k8s/index.js"),
    settings: K8S_SETTINGS_SCHEMA,
    sessionSettings: [
      "image",
      "service_account",
      "image_pull_policy",
      "node_selector",
      "resources",
      "work_root",
    ],
    requiredWhenUsed: ["image"],
    fileSettings: ["kubeconfig"],
    conformance: true,
  },
  {
    name: "docker",
    arg: "none",
    backend: "a container per session (tmux inside) through the Docker Engine API",
    load: () => import("../docker/index.js"),
    settings: DOCKER_SETTINGS_SCHEMA,
    sessionSettings: ["image", "network", "memory", "cpus", "pids_limit", "user", "mounts", "work_dir"],
    requiredWhenUsed: ["image"],
    conformance: true,
  },
  {
    name: "auto",
    arg: "none",
    routing: true,
    backend: "routes each session to its agent's declared provider (else session.auto.default)",
    load: () =>
      import("../auto/index.js").then((m) => ({
        createProvider: (o: ProviderFactoryOptions) => m.createAutoProvider(o, createProviderFromSpec),
      })),
    settings: autoSettingsSchema(() => providerField("concrete")),
    conformance: true,
  },
  {
    name: "hybrid",
    arg: "none",
    routing: true,
    backend: "local and remote backends chosen by session.hybrid.remote_match",
    load: () =>
      import("../auto/index.js").then((m) => ({
        createProvider: (o: ProviderFactoryOptions) => m.createHybridProvider(o, createProviderFromSpec),
      })),
    settings: hybridSettingsSchema(() => providerField("concrete")),
    conformance: true,
  },
  {
    name: "acp",
    arg: "none",
    backend: "the subprocess holder (one per city) speaking the Agent Client Protocol over the agent's stdio",
    load: () => import("../acp/index.js"),
    settings: ACP_SETTINGS_SCHEMA,
    sessionSettings: ["mcp_servers"],
    conformance: true,
  },
  {
    name: "fake",
    arg: "none",
    internal: true,
    backend: "in memory, for tests",
    load: () =>
      import("../fake.js").then((m) => ({
        createProvider: (o: ProviderFactoryOptions) => new m.FakeProvider({ city: o.city }),
      })),
    conformance: true,
  },
  {
    name: "fail",
    arg: "none",
    internal: true,
    backend: "every operation fails, for tests",
    load: () =>
      import("../fake.js").then((m) => ({
        createProvider: (o: ProviderFactoryOptions) => m.FakeProvider.failing({ city: o.city }),
      })),
  },
] as const satisfies readonly ProviderEntry[];

/** Every provider this build has. */
export const PROVIDERS: readonly ProviderEntry[] = ENTRIES;

type Entry = (typeof ENTRIES)[number];

/** The city file's `session.<name>` fields of the providers that have settings, each defaulting to `{}`. */
export type ProviderSettingsFields = {
  readonly [E in Entry as E extends { readonly settings: AnyObjectSchema } ? E["name"] : never]: E extends {
    readonly settings: infer S extends AnyObjectSchema;
  }
    ? Field<Infer<S>, InferInput<S>, "default">
    : never;
};

/** Builds {@link ProviderSettingsFields} for the city schema's `session` section. */
export function providerSettingsFields(): ProviderSettingsFields {
  const out: Record<string, unknown> = {};
  for (const e of PROVIDERS) {
    if (e.settings) out[e.name] = e.settings.default({});
  }
  return out as ProviderSettingsFields;
}

/** The kind of a provider spec, as written before any `:` (`exec:./x.sh` → `exec`). Pure. */
export function specKind(spec: string): string {
  return spec.split(":")[0] ?? spec;
}

/** The registry entry of `spec`'s kind, or `undefined` for a kind this build lacks. Pure. */
export function entryOf(spec: string): ProviderEntry | undefined {
  const kind = specKind(spec);
  return PROVIDERS.find((e) => e.name === kind);
}

/**
 * The session-shaping settings (`sessionSettings`) of the concrete provider `spec`, taken from
 * the city file's decoded `session` section; `undefined` when it declares none. Pure.
 */
export function sessionShapingSettings(
  session: Readonly<Record<string, unknown>>,
  spec: string,
): Record<string, unknown> | undefined {
  const kind = specKind(spec);
  const keys = entryOf(spec)?.sessionSettings;
  const section = session[kind];
  if (!keys || !section || typeof section !== "object") return undefined;
  const values = section as Record<string, unknown>;
  return Object.fromEntries(keys.filter((k) => values[k] !== undefined).map((k) => [k, values[k]]));
}

/** How a provider is written in the city file: `tmux`, `exec:<script>`. */
export function specOf(e: ProviderEntry): string {
  return e.arg === "required" ? `${e.name}:<${e.argName ?? "arg"}>` : e.name;
}

/** Concrete providers shown to users (no test doubles, no routers), as written in the city file. */
export function listedProviders(): string[] {
  return PROVIDERS.filter((e) => !e.internal && !e.routing).map(specOf);
}

/** The routers (`auto`, `hybrid`). */
export function routingProviderNames(): string[] {
  return PROVIDERS.filter((e) => e.routing).map((e) => e.name);
}

/** Providers `gc conformance` can test (and the README's provider table lists). */
export function conformanceProviders(): string[] {
  return PROVIDERS.filter((e) => e.conformance).map(specOf);
}

/** Concrete names that stand alone (no `:arg`), internal ones included, routers not. */
export function plainProviderNames(): string[] {
  return PROVIDERS.filter((e) => e.arg === "none" && !e.routing).map((e) => e.name);
}

/** Kinds written `<name>:<arg>`. */
export function argProviderNames(): string[] {
  return PROVIDERS.filter((e) => e.arg === "required").map((e) => e.name);
}

/**
 * Why `v` is not a session provider (`tmux`, `exec:./x.sh`, …) usable where `allowed` lists
 * the names (default: every concrete provider and router). Messages list only the providers
 * users may pick (no test doubles).
 */
export function sessionProviderProblem(
  v: string,
  allowed: readonly string[] = [...plainProviderNames(), ...routingProviderNames()],
): string | undefined {
  const colon = v.indexOf(":");
  if (colon >= 0 && argProviderNames().includes(v.slice(0, colon))) {
    const p = parseProviderSpec(v);
    return typeof p === "string" ? p : undefined;
  }
  if (allowed.includes(v)) return undefined;
  const routers = routingProviderNames();
  const shown = [...listedProviders(), ...routers.filter((r) => allowed.includes(r))];
  const list = shown.join(", ");
  if (routers.includes(v)) {
    return `${JSON.stringify(v)} is a router and cannot be used here; use one of ${list}`;
  }
  const names = shown.map((n) => n.split(":")[0] ?? n);
  return `unknown session provider ${JSON.stringify(v)}${didYouMean(v, names)}; this build has ${list}`;
}

/** The JSON Schema of a provider value: a listed name of `allowed` or `<kind>:<arg>`. */
function providerJson(allowed: readonly string[]): JsonSchema {
  const hidden = new Set(PROVIDERS.filter((e) => e.internal).map((e) => e.name));
  return {
    anyOf: [
      { enum: allowed.filter((n) => !hidden.has(n)) },
      ...argProviderNames().map((k) => ({ pattern: `^${k}:.+` })),
    ],
  };
}

/**
 * A city-file field naming a session provider: a `concrete` one (`tmux`, `exec:./x.sh`, …)
 * or `any` (routers too). Its check and JSON Schema read this registry when used, not when
 * declared, so sections declared by the entries themselves (the routers') can use it.
 */
export function providerField(which: "concrete" | "any"): StringSchema {
  const allowed = () =>
    which === "concrete" ? plainProviderNames() : [...plainProviderNames(), ...routingProviderNames()];
  return s.string({
    check: (v) => sessionProviderProblem(v, allowed()),
    json: () => providerJson(allowed()),
  });
}

/** A spec split into its entry and argument. */
export interface ParsedSpec {
  readonly entry: ProviderEntry;
  readonly arg: string | undefined;
}

/**
 * Looks up a provider spec (`tmux`, `exec:/abs/script`).
 * @returns undefined with the reason when this build has no such provider or the argument is
 *   missing or unexpected.
 */
export function parseProviderSpec(spec: string): ParsedSpec | string {
  const colon = spec.indexOf(":");
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const arg = colon < 0 ? undefined : spec.slice(colon + 1);
  const entry = PROVIDERS.find((e) => e.name === kind);
  const built = listedProviders().join(", ");
  if (!entry) return `provider ${JSON.stringify(spec)} is not available in this build (built: ${built})`;
  if (entry.arg === "required" && !arg) {
    return `${JSON.stringify(`${kind}:`)} needs ${entry.argHint ?? "an argument"}`;
  }
  if (entry.arg === "none" && arg !== undefined) {
    return `provider ${JSON.stringify(kind)} takes no ":" argument (built: ${built})`;
  }
  return { entry, arg };
}

/**
 * Builds a provider from a spec.
 * @throws UsageError when this build has no such provider.
 */
export async function createProviderFromSpec(
  spec: string,
  base: Omit<ProviderFactoryOptions, "arg" | "settings">,
  settings?: Readonly<Record<string, unknown>>,
): Promise<Provider> {
  const p = parseProviderSpec(spec);
  if (typeof p === "string") throw new UsageError(p);
  return (await p.entry.load()).createProvider({ ...base, arg: p.arg, settings });
}
