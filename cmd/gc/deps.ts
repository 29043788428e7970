/**
 * The composition root: the only place that picks implementations. It opens the city with
 * the SQLite store and the providers of this build's registry (internal/runtime/registry.ts,
 * built lazily, so `gc peek` on tmux never loads another backend); everything else lives in
 * internal/controller.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type City, openCity as openCityWith } from "../../internal/controller/city.js";
import { spawnController as spawnControllerWith } from "../../internal/controller/controller.js";
import { createProviderFromSpec } from "../../internal/runtime/registry.js";
import { openSqliteStore } from "../../internal/session/sqlite-store.js";
import type { CommandContext } from "./context.js";

export type { City } from "../../internal/controller/city.js";

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
      createProvider: createProviderFromSpec,
      openStore: (cityDir) => openSqliteStore({ cityDir, singleTenant: true }),
    },
  );
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
