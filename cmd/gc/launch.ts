/**
 * Launching the city's background controller (`gc start`): where the city file is, and the
 * detached `gc start --foreground` process. The controller's boot (a second Node process) is
 * the longest step before the first session starts, so it is launched as early as can be:
 * by gc's loader before it compiles the CLI bundle ({@link launchEarlyFromLoader}, through
 * early.ts), else by `gc start` before it loads what opening the city takes. This module
 * imports neither the store nor the providers.
 */
import { existsSync, statSync } from "node:fs";
import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { CITY_FILE_NAME, type CityPlace, locateCity } from "../../internal/config/locate.js";
import { controllerPaths, findController } from "../../internal/controller/controller-find.js";
import {
  type LaunchedController,
  launchController as launchControllerWith,
} from "../../internal/controller/launch.js";

/** What locates an invocation's city: its cwd and flags (`--city`, else `GC_CITY`; `--config`). */
export interface CityFlags {
  readonly cwd: string;
  readonly cityFlag: string | undefined;
  readonly configFlag: string | undefined;
}

/** Where this invocation's city file is (`--city`, `--config`, `GC_CITY`, or upward from the cwd); nothing parsed. */
export function cityPlace(flags: CityFlags): Promise<CityPlace> {
  return locateCity({
    cwd: flags.cwd,
    cityDir: flags.cityFlag ? resolve(flags.cwd, flags.cityFlag) : undefined,
    configFile: flags.configFlag ? resolve(flags.cwd, flags.configFlag) : undefined,
  });
}

/**
 * Launches the controller of the city at `place` as a detached `gc start --foreground` of the
 * gc in `gcDir` (dist/cmd/gc), without waiting for it (internal/controller/launch.ts).
 */
export function launchController(place: CityPlace, gcDir: string): Promise<LaunchedController> {
  // The CommonJS loader (the bin) when built: the ES module entry main.js only imports it,
  // through the ES module loader, which the controller's boot would wait for (≈ 5–10 ms).
  const loader = join(gcDir, "main.cjs");
  return launchControllerWith(join(place.cityDir, ".gc"), [
    process.execPath,
    existsSync(loader) ? loader : join(gcDir, "main.js"),
    "--city",
    place.cityDir,
    "--config",
    place.file,
    "start",
    "--foreground",
  ]);
}

/**
 * The background controller of the city `flags` locate, launched before its file is read;
 * `undefined` (the usual path decides, after reading it) when the file is missing, a
 * controller already runs, or the launch fails. Never rejects.
 */
export async function launchEarly(flags: CityFlags, gcDir: string): Promise<LaunchedController | undefined> {
  try {
    const place = await cityPlace(flags);
    if (!(await stat(place.file)).isFile()) return undefined;
    if ((await findController(join(place.cityDir, ".gc"))).running) return undefined;
    return await launchController(place, gcDir);
  } catch {
    return undefined;
  }
}

/** Where the loader's early launch waits for the bundle (two bundles share no module state). */
const SLOT = Symbol.for("gc.early-start-launch");

/** The loader's early launch: for which flags, and the launch (see {@link launchEarly}). */
interface EarlyLaunch {
  readonly key: string;
  readonly launched: Promise<LaunchedController | undefined>;
}

/** The identity of the city `flags` locate, as far as the flags tell. Pure. */
function keyOf(flags: CityFlags): string {
  return JSON.stringify([flags.cwd, flags.cityFlag ?? null, flags.configFlag ?? null]);
}

/**
 * Called by gc's loader (early.ts) for a plain `gc start`: launches, leaving it for
 * {@link takeEarlyLaunch}. The loader compiles the CLI bundle right after, which keeps the
 * event loop busy: when the flags name the city and it has no pid file (no controller runs:
 * {@link launchEarly} would launch), the launch is done before this returns ({@link launchNow}).
 */
export function launchEarlyFromLoader(flags: CityFlags, gcDir: string): void {
  const early: EarlyLaunch = {
    key: keyOf(flags),
    launched: launchNow(flags, gcDir) ?? launchEarly(flags, gcDir),
  };
  (globalThis as Record<symbol, unknown>)[SLOT] = early;
}

/**
 * {@link launchEarly} done synchronously up to the controller's spawn, for `--city`/`GC_CITY`
 * (the city file at a known place) and a state dir without a pid file; `undefined` otherwise
 * (a controller may run: {@link launchEarly} looks, through its socket). Never throws.
 */
function launchNow(flags: CityFlags, gcDir: string): Promise<LaunchedController | undefined> | undefined {
  if (!flags.cityFlag || flags.configFlag) return undefined;
  const cityDir = resolve(flags.cwd, flags.cityFlag);
  const place = { cityDir, file: join(cityDir, CITY_FILE_NAME) };
  try {
    if (!statSync(place.file).isFile()) return Promise.resolve(undefined);
  } catch {
    return Promise.resolve(undefined); // no city file: launchEarly launches nothing either
  }
  if (existsSync(controllerPaths(join(cityDir, ".gc")).pid)) return undefined;
  return launchController(place, gcDir).catch(() => undefined);
}

/**
 * What the loader's early launch for exactly these `flags` came to (once: it is then
 * forgotten): the controller, or `undefined` where {@link launchEarly} launched none; itself
 * `undefined` when the loader did not launch for them, so the caller launches itself. A launch
 * for other flags (which the loader's guess at the arguments should never make) is abandoned
 * first. Never rejects.
 */
export async function takeEarlyLaunch(
  flags: CityFlags,
): Promise<{ readonly launched: LaunchedController | undefined } | undefined> {
  const slot = globalThis as Record<symbol, EarlyLaunch | undefined>;
  const early = slot[SLOT];
  if (early === undefined) return undefined;
  delete slot[SLOT];
  const launched = await early.launched;
  if (early.key === keyOf(flags)) return { launched };
  await launched?.abandon().catch(() => undefined);
  return undefined;
}
