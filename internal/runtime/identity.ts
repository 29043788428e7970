/**
 * City identity: what makes a runtime object *this* city's. A city is its directory, not its
 * name — two cities named `demo` in two directories are two cities. The id is derived from
 * the real path of the city directory (so every gc process, whatever its cwd or symlink,
 * finds the same id without reading state), and the name stays alongside for humans.
 */
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";

/** Length in hex digits of a city id. */
const ID_HEX = 10;

/** The city's stable id: a short hash of the real path of `cityDir`. Reads the filesystem (realpath). */
export function cityIdOf(cityDir: string): string {
  let real = cityDir;
  try {
    real = realpathSync(cityDir);
  } catch {
    // a city directory that does not exist yet (tests, `gc init` in progress): its path as given
  }
  return createHash("sha256").update(real).digest("hex").slice(0, ID_HEX);
}

/**
 * The ownership key of a city: `<name>-<id>`, or the name alone when no id is given (unit
 * tests and `gc conformance`, which use unique names). Providers tag every runtime object
 * with it and match only their own. Pure.
 */
export function ownerKey(name: string, id: string | undefined): string {
  return id === undefined ? name : `${name}-${id}`;
}

/**
 * The default tmux socket of a city: `gc-<name>-<id>`, or a hashed form when that is not a
 * plain file name of at most 64 characters. Two cities never share a server by accident. Pure.
 */
export function defaultSocketName(name: string, id?: string): string {
  const key = ownerKey(name, id);
  if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(key)) return `gc-${key}`;
  const slug = name.replace(/[^A-Za-z0-9._-]/g, "").slice(0, 32);
  const hash = createHash("sha256").update(key).digest("hex").slice(0, 8);
  return `gc-${slug}-${hash}`;
}
