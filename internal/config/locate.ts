/**
 * Where a city lives, found with a few `stat`s and nothing else loaded: the city file's name
 * and the nearest directory upward holding it. Kept apart from load.ts so a command that only
 * needs the city's directory (e.g. `gc status` asking the running controller) does not load
 * the YAML parser and the schema.
 */
import { stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";

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
