/**
 * Start locks of the subprocess provider: a lock file taken by exclusive create (a hard link
 * to the taking process's owner file, `<pid> <start time>`, so it appears with its owner
 * already written), so one starter of a session name — or of the provider root's holder —
 * wins across processes. A lock whose owner died (or whose pid was reused, or that stayed
 * empty) is taken over. Each process keeps one owner file per lock directory
 * (`.owner-<pid>-<random>`), removed when it exits; those of killed processes are swept.
 */
import { unlinkSync } from "node:fs";
import { link, readdir, readFile, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pidAlive } from "../../proc/kill.js";
import { procStartTime } from "../../proc/process-table.js";
import { ensurePrivateDirOnce } from "./layout.js";

/** A start lock that stayed empty this long was left by a crashed starter. */
const EMPTY_LOCK_STALE_MS = 10_000;

/** This process's start time (clock ticks since boot), for lock files; read once. */
let ownStart: number | "" | undefined;

/**
 * This process's owner file in each lock directory (`.owner-<pid>-<random>`, holding
 * `<pid> <start time>`), made on first use: every lock this process takes there is a hard link
 * to it, so a lock is one `link` and its release one `unlink`.
 */
const ownerFiles = new Map<string, Promise<string>>();

/** An owner file's name, with its process's pid. */
const OWNER_FILE = /^\.owner-(\d+)-/;

/** The owner files this process made, removed when it exits. */
const ownedFiles = new Set<string>();

/** Removes this process's owner files (at exit; those of a killed process are swept later). */
function removeOwnerFiles(): void {
  for (const f of ownedFiles) {
    try {
      unlinkSync(f);
    } catch {
      // gone already
    }
  }
}

/**
 * This process's owner file in `dir`, made when there is none (`again`: afresh, the one made
 * before was removed since); then removes the owner files of dead processes there.
 */
function ownerFile(dir: string, again: boolean): Promise<string> {
  let made = again ? undefined : ownerFiles.get(dir);
  if (!made) {
    made = (async () => {
      const f = join(dir, `.owner-${process.pid}-${Math.random().toString(36).slice(2)}`);
      ownStart ??= procStartTime(process.pid) ?? "";
      await writeFile(f, `${process.pid} ${ownStart}\n`, { mode: 0o600, flag: "wx" });
      if (ownedFiles.size === 0) process.once("exit", removeOwnerFiles);
      ownedFiles.add(f);
      void sweepOwnerFiles(dir);
      return f;
    })();
    ownerFiles.set(dir, made);
    made.catch(() => {
      if (ownerFiles.get(dir) === made) ownerFiles.delete(dir);
    });
  }
  return made;
}

/** Removes the owner files in `dir` of processes that no longer run. Never throws. */
async function sweepOwnerFiles(dir: string): Promise<void> {
  try {
    for (const e of await readdir(dir)) {
      const pid = Number(OWNER_FILE.exec(e)?.[1]);
      if (pid > 0 && pid !== process.pid && !(await pidAlive(pid))) await rm(join(dir, e), { force: true });
    }
  } catch {
    // left for the next process to sweep
  }
}

/** Removes lock file `path`; already gone is fine. */
async function unlock(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
}

/**
 * Takes lock file `path` under provider root `root` (exclusive create, recording
 * `<pid> <start time>`). A lock whose owner pid is dead (or that stayed empty) is moved aside
 * and retaken once. @returns its release, or `undefined` when a live process holds it.
 */
export async function tryLock(root: string, path: string): Promise<(() => Promise<void>) | undefined> {
  const dir = dirname(path);
  for (let again = false; ; again = true) {
    // Made sure of once per process; again when they were removed since.
    ensurePrivateDirOnce(root, again);
    ensurePrivateDirOnce(dir, again);
    try {
      // The lock appears with its owner already in it (a hard link to this process's owner
      // file): a starter killed at any moment never leaves an empty lock behind.
      return await linkLock(await ownerFile(dir, again), path);
    } catch (e) {
      // The directory, or this process's owner file in it, was removed since: once more, afresh.
      if (again || (e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
}

/** {@link tryLock} with the owner file `mine`. */
async function linkLock(mine: string, path: string): Promise<(() => Promise<void>) | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await link(mine, path);
      return () => unlock(path);
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
