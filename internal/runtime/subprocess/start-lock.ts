/**
 * Start locks of the subprocess provider: a lock file taken by exclusive create (hard-linked
 * into place with its owner already written, `<pid> <start time>`), so one starter of a
 * session name — or of the provider root's holder — wins across processes. A lock whose
 * owner died (or whose pid was reused, or that stayed empty) is taken over.
 */
import { link, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { pidAlive } from "../../proc/kill.js";
import { procStartTime } from "../../proc/process-table.js";
import { ensurePrivateDirOnce } from "./layout.js";

/** A start lock that stayed empty this long was left by a crashed starter. */
const EMPTY_LOCK_STALE_MS = 10_000;

/** This process's start time (clock ticks since boot), for lock files; read once. */
let ownStart: number | "" | undefined;

/**
 * Takes lock file `path` under provider root `root` (exclusive create, recording
 * `<pid> <start time>`). A lock whose owner pid is dead (or that stayed empty) is moved aside
 * and retaken once. @returns its release, or `undefined` when a live process holds it.
 */
export async function tryLock(root: string, path: string): Promise<(() => Promise<void>) | undefined> {
  // The lock appears with its owner already in it (written aside, then hard-linked into
  // place): a starter killed at any moment never leaves an empty lock behind.
  const mine = `${path}.new-${process.pid}-${Math.random().toString(36).slice(2)}`;
  ownStart ??= procStartTime(process.pid) ?? "";
  for (let again = false; ; again = true) {
    // Made sure of once per process; again when they were removed since.
    ensurePrivateDirOnce(root, again);
    ensurePrivateDirOnce(dirname(path), again);
    try {
      await writeFile(mine, `${process.pid} ${ownStart}\n`, { mode: 0o600, flag: "wx" });
      break;
    } catch (e) {
      if (again || (e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await link(mine, path);
        return () => rm(path, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      const owner = await lockOwner(path);
      if (owner === "live") return undefined;
      // Stale: move it aside; if what we moved was not the stale lock we judged, put it back.
      const aside = `${path}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
      try {
        await rename(path, aside);
      } catch {
        continue; // someone else moved it first
      }
      if ((await lockOwner(aside)) === "live") {
        await link(aside, path).catch(() => undefined);
        await rm(aside, { force: true });
        return undefined;
      }
      await rm(aside, { force: true });
    }
    return undefined;
  } finally {
    await rm(mine, { force: true });
  }
}

/**
 * `live` when the process recorded in lock file `path` (`<pid> <start time>`) still runs, or
 * the file was created so recently that its owner may still be writing it; else `stale`
 * (dead owner, reused pid, long-empty file) or `none` (no lock).
 */
export async function lockOwner(path: string): Promise<"live" | "stale" | "none"> {
  let text: string;
  let mtimeMs: number;
  try {
    text = await readFile(path, "utf8");
    mtimeMs = (await stat(path)).mtimeMs;
  } catch {
    return "none";
  }
  const [pidText = "", startText = ""] = text.trim().split(" ");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0)
    return Date.now() - mtimeMs < EMPTY_LOCK_STALE_MS ? "live" : "stale";
  if (!(await pidAlive(pid))) return "stale";
  // A live pid that started at another time is a reused pid, not the starter.
  const started = procStartTime(pid);
  return startText === "" || started === null || String(started) === startText ? "live" : "stale";
}
