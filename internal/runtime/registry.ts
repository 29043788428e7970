/**
 * The one list of session providers this build has. Each entry names a provider, how it is
 * written in the city file (`tmux`, `exec:<script>`), its factory and its conformance target
 * (both imported lazily, so using one provider never loads another's dependencies), and the
 * README's description of it. The config schema's provider names, `gc config validate`, the
 * composition root, `gc conformance` and the README provider table all derive from it.
 *
 * Adding a provider: a directory `internal/runtime/<name>/` whose `index.ts` exports
 * `createProvider`, a `conformance/targets/<name>.ts` exporting `createTarget`, and one entry
 * below. Its city-file settings (`session.<name>`) are declared in the config schema's
 * session section.
 */
import type { ConformanceTarget } from "../../conformance/harness.js";
import { UsageError } from "./errors.js";
import type { ProviderFactoryOptions } from "./factory.js";
import type { Provider } from "./provider.js";

/** A provider module: `internal/runtime/<name>/index.ts`. */
export interface ProviderModule {
  createProvider(opts: ProviderFactoryOptions): Provider | Promise<Provider>;
}

/** A conformance target module: `conformance/targets/<name>.ts`. */
export interface TargetModule {
  createTarget(arg?: string): Promise<ConformanceTarget>;
}

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
  /** Test doubles: accepted, but never listed to users. */
  readonly internal?: boolean;
  /** The README table's "backend" column. */
  readonly backend: string;
  readonly load: () => Promise<ProviderModule>;
  /** Its conformance target (`gc conformance <name>`, the README table); none for `fail`. */
  readonly target?: () => Promise<TargetModule>;
}

/** Every provider this build has. One line each. */
export const PROVIDERS: readonly ProviderEntry[] = [
  {
    name: "tmux",
    arg: "none",
    backend: "one persistent tmux control-mode client per city socket",
    load: () => import("./tmux/index.js"),
    target: () => import("../../conformance/targets/tmux.js"),
  },
  {
    name: "subprocess",
    arg: "none",
    backend: "a detached holder process per session owning a real pty",
    load: () => import("./subprocess/index.js"),
    target: () => import("../../conformance/targets/subprocess.js"),
  },
  {
    name: "exec",
    arg: "required",
    argName: "script",
    argHint: 'a script path, e.g. "exec:./provider.sh"',
    backend: "your script, Gas City exec protocol (+ opt-in v2)",
    load: () => import("./exec/index.js"),
    target: () => import("../../conformance/targets/exec.js"),
  },
  {
    name: "k8s",
    arg: "none",
    backend: "a pod per session (tmux inside) through @kubernetes/client-node, exec over WebSocket",
    load: () => import("./k8s/index.js"),
    target: () => import("../../conformance/targets/k8s.js"),
  },
  {
    name: "docker",
    arg: "none",
    backend: "a container per session (tmux inside) through the Docker Engine API",
    load: () => import("./docker/index.js"),
    target: () => import("../../conformance/targets/docker.js"),
  },
  {
    name: "acp",
    arg: "none",
    backend: "a detached holder per session speaking the Agent Client Protocol over the agent's stdio",
    load: () => import("./acp/index.js"),
    target: () => import("../../conformance/targets/acp.js"),
  },
  {
    name: "fake",
    arg: "none",
    internal: true,
    backend: "in memory, for tests",
    load: () =>
      import("./fake.js").then((m) => ({ createProvider: (o) => new m.FakeProvider({ city: o.city }) })),
    target: () => import("../../conformance/targets/fake.js"),
  },
  {
    name: "fail",
    arg: "none",
    internal: true,
    backend: "every operation fails, for tests",
    load: () =>
      import("./fake.js").then((m) => ({ createProvider: (o) => m.FakeProvider.failing({ city: o.city }) })),
  },
];

/** How a provider is written in the city file: `tmux`, `exec:<script>`. */
export function specOf(e: ProviderEntry): string {
  return e.arg === "required" ? `${e.name}:<${e.argName ?? "arg"}>` : e.name;
}

/** Providers shown to users (no test doubles), as written in the city file. */
export function listedProviders(): string[] {
  return PROVIDERS.filter((e) => !e.internal).map(specOf);
}

/** Providers `gc conformance` can test (and the README's provider table lists). */
export function conformanceProviders(): string[] {
  return PROVIDERS.filter((e) => e.target).map(specOf);
}

/** Names that stand alone (no `:arg`), internal ones included. */
export function plainProviderNames(): string[] {
  return PROVIDERS.filter((e) => e.arg === "none").map((e) => e.name);
}

/** Kinds written `<name>:<arg>`. */
export function argProviderNames(): string[] {
  return PROVIDERS.filter((e) => e.arg === "required").map((e) => e.name);
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

/**
 * Builds the conformance target for a spec (`tmux`, `exec:PATH`).
 * @throws UsageError listing the built providers when there is none.
 */
export async function createConformanceTarget(spec: string): Promise<ConformanceTarget> {
  const p = parseProviderSpec(spec);
  if (typeof p === "string" || !p.entry.target) {
    const known = conformanceProviders().join(", ");
    throw new UsageError(`unknown provider ${JSON.stringify(spec)}; known providers: ${known}`);
  }
  return (await p.entry.target()).createTarget(p.arg);
}
