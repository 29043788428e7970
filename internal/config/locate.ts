/**
 * Where a city lives, found with a few `stat`s and nothing else loaded: the city file's name
 * and the nearest directory upward holding it. Kept apart from load.ts so a command that only
 * needs the city's directory (e.g. `gc status` asking the running controller) does not load
 * the YAML parser and the schema.
 */
import { stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { ConfigError } from "../base/errors.js";

/** The city file's name inside a city directory. */
export const CITY_FILE_NAME = "city.yaml";

/** The nearest directory at or above `startDir` holding city.yaml, or `undefined`. */
export async function findCityDir(startDir: string): Promise<string | undefined> {
  let dir = resolve(startDir);
  for (;;) {
    try {
      if ((await stat(join(dir, CITY_FILE_NAME))).isFile()) return dir;
    } catch {
      // keep climbing
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Where the city file and its directory are. */
export interface CityPlace {
  readonly file: string;
  readonly cityDir: string;
}

/**
 * Where the city file is: `configFile` (its city directory `cityDir`, else the file's own),
 * else city.yaml in `cityDir`, else in the nearest directory upward from `cwd` holding one.
 * Reads nothing but `stat`s. @throws ConfigError when no city can be found.
 */
export async function locateCity(opts: {
  readonly cwd?: string | undefined;
  readonly cityDir?: string | undefined;
  readonly configFile?: string | undefined;
}): Promise<CityPlace> {
  const cwd = opts.cwd ?? process.cwd();
  if (opts.configFile !== undefined) {
    const file = resolve(cwd, opts.configFile);
    return { file, cityDir: opts.cityDir !== undefined ? resolve(cwd, opts.cityDir) : dirname(file) };
  }
  if (opts.cityDir !== undefined) {
    const cityDir = resolve(cwd, opts.cityDir);
    return { file: join(cityDir, CITY_FILE_NAME), cityDir };
  }
  const found = await findCityDir(cwd);
  if (found === undefined) {
    throw new ConfigError([
      {
        file: join(resolve(cwd), CITY_FILE_NAME),
        line: 1,
        col: 1,
        path: "",
        message: `no ${CITY_FILE_NAME} here or in any parent directory (run \`gc init\`, or pass --city DIR / --config FILE)`,
      },
    ]);
  }
  return { file: join(found, CITY_FILE_NAME), cityDir: found };
}
