/**
 * State-file faults: telling a damaged `state.db` (0 bytes, not a database, corrupt pages)
 * from a healthy or merely foreign one, moving a damaged file aside under a timestamped name,
 * and the recovery marker (`<city>/.gc/state-recovered.json`) that tells every later command
 * and the controller that bookkeeping was lost. Used by sqlite-store.ts and cmd/gc.
 */
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Name of the marker written next to the database when it was recovered. */
export const RECOVERY_FILE = "state-recovered.json";

/** SQLite result codes that mean the bytes on disk are not (or no longer) a database. */
const DAMAGE_CODES = new Set([
  "SQLITE_NOTADB",
  "SQLITE_CORRUPT",
  "SQLITE_CORRUPT_VTAB",
  "SQLITE_CORRUPT_SEQUENCE",
]);

/** The state file is damaged: gc may move it aside and start over (see {@link moveAside}). */
export class StateFileFault extends Error {
  override readonly name = "StateFileFault";
  /** Inode of the damaged file, so a concurrent recoverer never moves a fresh file aside. */
  readonly ino: number;
  constructor(message: string, ino: number, options?: ErrorOptions) {
    super(message, options);
    this.ino = ino;
  }
}

/** True when `e` (a better-sqlite3 error) says the file is damaged rather than busy or foreign. Pure. */
export function isDamage(e: unknown): boolean {
  return e instanceof Error && "code" in e && typeof e.code === "string" && DAMAGE_CODES.has(e.code);
}

/** What a recovery did; persisted as {@link RECOVERY_FILE}. */
export interface StoreRecovery {
  /** When the damaged file was found (ISO 8601). */
  readonly at: string;
  /** Why it was unusable (`empty (0 bytes)`, `file is not a database`, …). */
  readonly reason: string;
  /** Where the damaged file (and its -wal/-shm) now are. */
  readonly movedTo: string;
}

/**
 * Renames the damaged `path` (and its `-wal`/`-shm`) to `<path>.<label>-<timestamp>` when it
 * is still the file that was examined (`ino`). Returns the new path, or `undefined` when
 * another process already moved it (its fresh database must not be touched).
 */
export function moveAside(path: string, ino: number, now: Date, label = "corrupt"): string | undefined {
  try {
    if (statSync(path).ino !== ino) return undefined;
  } catch {
    return undefined;
  }
  const stamp = now.toISOString().replaceAll(":", "-");
  let dest = `${path}.${label}-${stamp}`;
  for (let i = 1; existsSync(dest); i++) dest = `${path}.${label}-${stamp}-${i}`;
  try {
    renameSync(path, dest);
  } catch {
    return undefined;
  }
  for (const ext of ["-wal", "-shm"]) {
    try {
      renameSync(`${path}${ext}`, `${dest}${ext}`);
    } catch {
      rmSync(`${path}${ext}`, { force: true });
    }
  }
  return dest;
}

/** Writes the recovery marker (0600) into `stateDir`. Best-effort: the loud report already happened. */
export function writeRecovery(stateDir: string, r: StoreRecovery): void {
  try {
    writeFileSync(join(stateDir, RECOVERY_FILE), `${JSON.stringify(r, null, 2)}\n`, { mode: 0o600 });
  } catch {
    // the caller reports the recovery on stderr regardless
  }
}

/** The recovery marker of the city whose state dir is `stateDir`, or `undefined`. */
export function readRecovery(stateDir: string): StoreRecovery | undefined {
  try {
    const v = JSON.parse(readFileSync(join(stateDir, RECOVERY_FILE), "utf8")) as Partial<StoreRecovery>;
    if (typeof v.at !== "string" || typeof v.reason !== "string" || typeof v.movedTo !== "string")
      return undefined;
    return { at: v.at, reason: v.reason, movedTo: v.movedTo };
  } catch {
    return undefined;
  }
}

/** Removes the recovery marker (the operator reviewed the city). Idempotent. */
export function clearRecovery(stateDir: string): void {
  rmSync(join(stateDir, RECOVERY_FILE), { force: true });
}

/**
 * The operator-facing explanation of a recovery: what happened, what gc did, and exactly
 * what to run next. One implementation for every command that reports it.
 */
export function describeRecovery(r: StoreRecovery): string {
  return [
    `state.db was unusable (${r.reason}) at ${r.at}; it was moved to ${r.movedTo} and a fresh one created.`,
    "Running sessions were adopted from their runtime ownership tags. Sessions that were not running",
    "are NOT started, because holds set by `gc stop NAME` were lost with the old file.",
    "Check `gc status`, hold what must stay down with `gc stop NAME`, then run `gc session reset --all`",
    "to let the controller start the rest.",
  ].join("\n");
}
