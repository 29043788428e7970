/**
 * City identity: what makes a runtime object *this* city's. It is created once, the first
 * time gc loads the city, and stored with the city in `<city>/.gc/city.json`: a random id and
 * the city's name at that moment. Everything that runs is tagged with the pair (the owner
 * key, {@link ownerKey}) and the default tmux socket is named after it, so renaming
 * `workspace.name` or moving the directory (`.gc` moves with it) keeps ownership: the running
 * fleet stays the city's, no second one is started. The file also records every session
 * provider the city has used, so `gc stop` covers them all after a provider switch.
 *
 * A city that ran before the file existed (a `.gc` directory without it) keeps the id it had:
 * the hash of its real path, so what runs stays its own.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/** Length in hex digits of a city id. */
const ID_HEX = 10;

/** The stored identity of a city (`.gc/city.json`). */
export interface CityIdentity {
  /** Random hex id, created once. */
  readonly id: string;
  /** The city's name when the identity was created: the name part of its owner key. */
  readonly name: string;
  /** Session provider specs the city has used (`tmux`, `subprocess`, …), in first-use order. */
  readonly providers: readonly string[];
}

/** Where a city's identity is stored. Pure. */
export function identityFile(cityDir: string): string {
  return join(cityDir, ".gc", "city.json");
}

/** The identity stored with the city, `undefined` when none is yet. @throws when malformed. */
export function storedIdentity(cityDir: string): CityIdentity | undefined {
  return readIdentity(identityFile(cityDir));
}

function readIdentity(file: string): CityIdentity | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const v = JSON.parse(text) as Partial<CityIdentity>;
  if (typeof v.id !== "string" || !/^[0-9a-f]{6,64}$/.test(v.id) || typeof v.name !== "string" || !v.name) {
    throw new Error(`${file}: not a city identity (want {"id","name","providers"})`);
  }
  const providers = Array.isArray(v.providers) ? v.providers.filter((p) => typeof p === "string") : [];
  return { id: v.id, name: v.name, providers };
}

/** The session store's database file under `.gc` (session/sqlite-store.ts `STATE_DB_FILE`): a city that has one ran before. */
export const RAN_BEFORE_FILE = "state.db";

/** The id a city that ran before identities were stored has: a hash of its real path. */
function legacyId(cityDir: string): string {
  let real = cityDir;
  try {
    real = realpathSync(cityDir);
  } catch {
    // a city directory that does not exist yet: its path as given
  }
  return createHash("sha256").update(real).digest("hex").slice(0, ID_HEX);
}

/**
 * The city's identity: read from `.gc/city.json`, or created there (0600, in a 0700 `.gc`)
 * with `name` when missing — exactly once, whoever gets there first (a losing concurrent
 * creator reads the winner's). When the directory cannot be written, the identity it would
 * get is returned without storing it. This is the one function that says which city a
 * runtime object belongs to.
 * @throws when the stored file is malformed (never silently replaced: what runs carries it).
 */
export function cityIdentity(cityDir: string, name: string): CityIdentity {
  const file = identityFile(cityDir);
  const found = readIdentity(file);
  if (found) return found;
  const stateDir = join(cityDir, ".gc");
  // A city that ran before identities has the session store's database in its `.gc`; a `.gc`
  // holding only what launching a controller makes (its log) is a new city's.
  const ranBefore = existsSync(join(stateDir, RAN_BEFORE_FILE));
  const fresh: CityIdentity = {
    id: ranBefore ? legacyId(cityDir) : randomBytes(ID_HEX / 2).toString("hex"),
    name,
    providers: [],
  };
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(tmp, `${JSON.stringify(fresh)}\n`, { mode: 0o600 });
    try {
      linkSync(tmp, file); // fails when another process created it first
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    } finally {
      rmSync(tmp, { force: true });
    }
  } catch {
    return fresh; // read-only city dir: the identity it would get
  }
  return readIdentity(file) ?? fresh;
}

/** The id of the city at `cityDir` ({@link cityIdentity}: created with `name` when missing). */
export function cityIdOf(cityDir: string, name: string): string {
  return cityIdentity(cityDir, name).id;
}

/**
 * Records that the city used session provider `spec` (so `gc stop` covers it later, after a
 * switch). Resolves the identity as stored afterwards; a no-op when already recorded.
 */
export function recordProvider(cityDir: string, name: string, spec: string): CityIdentity {
  const id = cityIdentity(cityDir, name);
  if (id.providers.includes(spec)) return id;
  const next: CityIdentity = { ...id, providers: [...id.providers, spec] };
  const file = identityFile(cityDir);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    writeFileSync(tmp, `${JSON.stringify(next)}\n`, { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
    return id;
  }
  return next;
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
