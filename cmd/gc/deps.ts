/**
 * The composition root: the only place that picks implementations. It opens the city with
 * the SQLite store and the providers this build has (built lazily, so `gc peek` on tmux never
 * loads another backend); everything else lives in internal/controller.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type City, openCity as openCityWith } from "../../internal/controller/city.js";
import { spawnController as spawnControllerWith } from "../../internal/controller/controller.js";
import { UsageError } from "../../internal/runtime/errors.js";
import type { ProviderFactoryOptions } from "../../internal/runtime/factory.js";
import { FakeProvider } from "../../internal/runtime/fake.js";
import type { Provider } from "../../internal/runtime/provider.js";
import { describeRecovery, readRecovery } from "../../internal/session/recovery.js";
import { openSqliteStore } from "../../internal/session/sqlite-store.js";
import type { CommandContext } from "./context.js";

export type { City } from "../../internal/controller/city.js";

/** Provider kinds `session.provider` may name that this build implements. */
export const PROVIDER_KINDS = ["tmux", "subprocess", "exec", "fake", "fail"] as const;

interface ProviderModule {
  createProvider(opts: ProviderFactoryOptions): Provider | Promise<Provider>;
}

/** Loads `internal/runtime/<kind>/index.js` (kind comes from a closed list, never from a user). */
async function importProvider(kind: "tmux" | "subprocess" | "exec"): Promise<ProviderModule> {
  return (await import(`../../internal/runtime/${kind}/index.js`)) as ProviderModule;
}

/** Builds a provider from a spec (`tmux`, `subprocess`, `exec:/path`, `fake`, `fail`). */
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

/** State dirs whose recovery this process has already reported (once per command). */
const announced = new Set<string>();

/**
 * Finds and loads the city for this invocation (`--city`, `--config`, `GC_CITY`, or the
 * nearest directory upward holding city.yaml).
 * @throws ConfigError when the file is missing or invalid.
 */
export function openCity(ctx: CommandContext, opts: { allowInvalid?: boolean } = {}): Promise<City> {
  return openCityWith(
    {
      cwd: ctx.cwd,
      env: ctx.env,
      cityDir: ctx.cityFlag ? resolve(ctx.cwd, ctx.cityFlag) : undefined,
      configFile: ctx.configFlag ? resolve(ctx.cwd, ctx.configFlag) : undefined,
      allowInvalid: opts.allowInvalid,
    },
    {
      createProvider,
      openStore: (cityDir) => {
        const store = openSqliteStore({ cityDir, singleTenant: true, recover: true });
        if (store.recovery) ctx.err(`gc: WARNING: ${describeRecovery(store.recovery)}`);
        return store;
      },
    },
  ).then((city) => {
    const recovered = readRecovery(city.stateDir);
    // Every command says it until the operator has reviewed (`gc session reset --all`).
    if (recovered && !announced.has(city.stateDir)) {
      announced.add(city.stateDir);
      ctx.err(
        `gc: state.db was recovered at ${recovered.at} (old file: ${recovered.movedTo}); sessions that are not running stay down until \`gc session reset --all\``,
      );
    }
    return city;
  });
}

/**
 * Starts this city's controller as a detached `gc start --foreground` and waits for its
 * control socket. Resolves its pid.
 */
export function spawnController(city: City, signal: AbortSignal): Promise<number> {
  const main = join(dirname(fileURLToPath(import.meta.url)), "main.js");
  return spawnControllerWith(city, signal, [
    process.execPath,
    main,
    "--city",
    city.cityDir,
    "--config",
    city.loaded.file,
    "start",
    "--foreground",
  ]);
}
