/**
 * Launching the city's background controller (`gc start`): where the city file is, and the
 * detached `gc start --foreground` process. Apart from deps.ts, so that `gc start` launches the
 * controller before it loads what opening the city takes (the store, the providers): the
 * controller's boot is the longest step before the first session starts.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type CityPlace, locateCity } from "../../internal/config/locate.js";
import {
  type LaunchedController,
  launchController as launchControllerWith,
} from "../../internal/controller/launch.js";
import type { CommandContext } from "./context.js";

/** Where this invocation's city file is (`--city`, `--config`, `GC_CITY`, or upward from the cwd); nothing parsed. */
export function cityPlace(ctx: CommandContext): Promise<CityPlace> {
  return locateCity({
    cwd: ctx.cwd,
    cityDir: ctx.cityFlag ? resolve(ctx.cwd, ctx.cityFlag) : undefined,
    configFile: ctx.configFlag ? resolve(ctx.cwd, ctx.configFlag) : undefined,
  });
}

/**
 * Launches the controller of the city at `place` as a detached `gc start --foreground`,
 * without waiting for it (internal/controller/launch.ts).
 */
export function launchController(place: CityPlace): Promise<LaunchedController> {
  // The CommonJS loader (the bin) when built: the ES module entry main.js only imports it,
  // through the ES module loader, which the controller's boot would wait for (≈ 5–10 ms).
  const here = dirname(fileURLToPath(import.meta.url));
  const loader = join(here, "main.cjs");
  return launchControllerWith(join(place.cityDir, ".gc"), [
    process.execPath,
    existsSync(loader) ? loader : join(here, "main.js"),
    "--city",
    place.cityDir,
    "--config",
    place.file,
    "start",
    "--foreground",
  ]);
}
