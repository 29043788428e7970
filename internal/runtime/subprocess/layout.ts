/**
 * Where the subprocess provider keeps each session on disk: one private directory per
 * session under `<stateDir>/subprocess/sessions/`, start locks, raw output logs, each
 * session's unix socket and the holder process's control socket (with a short hashed fallback
 * when the natural path would exceed the kernel's socket path limit). Shared by the provider
 * and the holder process.
 */
import { createHash } from "node:crypto";
import { closeSync, lstatSync, mkdirSync, openSync, renameSync, statSync, writeSync } from "node:fs";
import { appendFile, rename, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ensurePrivateDir } from "../socket-dir.js";

/** Longest unix socket path Linux accepts (`sun_path` is 108 bytes including the NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Files and directories of one session, all derived from the state dir and the name. */
export interface SessionPaths {
  /** `<stateDir>/subprocess`: everything this provider owns. */
  readonly root: string;
  /** `<root>/sessions/<name>`: removed when the session is stopped. */
  readonly dir: string;
  /** The holder's socket (inside `dir` when the path fits, else a short hashed path). */
  readonly socket: string;
  /** Written by the holder: identity, pids, exit status (`session.json`). */
  readonly record: string;
  /** Written by the holder: metadata key/values (`meta.json`). */
  readonly meta: string;
  /** Start lock (`<root>/locks/<name>.lock`), outside `dir` so stop never removes it. */
  readonly lock: string;
  /** Raw program output, rotated to `<log>.1`; kept after stop. */
  readonly log: string;
  /** The holder's own stdout/stderr (diagnostics); kept after stop. */
  readonly holderLog: string;
}

/** Short lowercase hex digest of `text`. Pure. */
export function shortHash(text: string, hexChars = 16): string {
  return createHash("sha256").update(text).digest("hex").slice(0, hexChars);
}

/** `<stateDir>/subprocess`. Pure. */
export function providerRoot(stateDir: string): string {
  return join(stateDir, "subprocess");
}

/** Directory holding one directory per session. Pure. */
export function sessionsDir(root: string): string {
  return join(root, "sessions");
}

/**
 * The socket path for `name`: `<dir>/holder.sock` when it fits in
 * {@link MAX_SOCKET_PATH_BYTES}, else `<root>/s/<hash>.sock`, else
 * `/tmp/gc-<uid>-<hash of root>/<hash>.sock`. Deterministic, so any process finds it. Pure.
 */
export function socketPathFor(root: string, name: string): string {
  const fits = (p: string) => Buffer.byteLength(p) <= MAX_SOCKET_PATH_BYTES;
  const direct = join(sessionsDir(root), name, "holder.sock");
  if (fits(direct)) return direct;
  const short = join(root, "s", `${shortHash(name)}.sock`);
  if (fits(short)) return short;
  return join(fallbackSocketDir(root), `${shortHash(name)}.sock`);
}

/**
 * `holder.sock` for slot 0, `holder-<slot>.sock` for the others: the file name of holder
 * process `slot`'s control socket ({@link holderSocketPath}). Pure.
 */
function slotFile(base: string, ext: string, slot: number): string {
  return slot === 0 ? `${base}.${ext}` : `${base}-${slot}.${ext}`;
}

/**
 * The control socket of holder process `slot` of a root (a root has up to
 * `SubprocessProviderOptions.holders` of them): `<root>/holder.sock` (slot 0) or
 * `<root>/holder-<slot>.sock` when it fits, else the same name in {@link fallbackSocketDir}.
 * Pure.
 */
export function holderSocketPath(root: string, slot = 0): string {
  const file = slotFile("holder", "sock", slot);
  const direct = join(root, file);
  return Buffer.byteLength(direct) <= MAX_SOCKET_PATH_BYTES ? direct : join(fallbackSocketDir(root), file);
}

/** The lock taken while spawning holder process `slot` (`<root>/holder.lock`, `holder-<slot>.lock`). Pure. */
export function holderLockPath(root: string, slot = 0): string {
  return join(root, slotFile("holder", "lock", slot));
}

/** Size at which a holder diagnostics log moves to `<path>.1` ({@link rotateIfLarge}). */
export const DIAGNOSTICS_LOG_MAX_BYTES = 1024 * 1024;

/**
 * Moves the append-only log `path` to `<path>.1` (replacing the previous one) once it has
 * reached `maxBytes`, so a log appended to across every restart of a session (or of the
 * holder) stays under about twice that on disk. A missing file is left alone.
 */
export function rotateIfLarge(path: string, maxBytes = DIAGNOSTICS_LOG_MAX_BYTES): void {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return;
  }
  if (size >= maxBytes) renameSync(path, `${path}.1`);
}

/**
 * Appends `text` to the log `path` (mode 0600), first moving it to `<path>.1` once it has
 * reached `maxBytes`, as {@link rotateIfLarge} does — without blocking the event loop.
 */
export async function appendRotating(
  path: string,
  text: string,
  maxBytes = DIAGNOSTICS_LOG_MAX_BYTES,
): Promise<void> {
  const size = (await stat(path).catch(() => undefined))?.size ?? 0;
  if (size >= maxBytes) await rename(path, `${path}.1`);
  try {
    await appendFile(path, text, { mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    ensurePrivateDir(dirname(path)); // its directory was removed since
    await appendFile(path, text, { mode: 0o600 });
  }
}

/** Holder process `slot`'s own diagnostics (`<root>/logs/holder.log`, `holder-<slot>.log`). Pure. */
export function holderLogPath(root: string, slot = 0): string {
  return join(root, "logs", slotFile("holder", "log", slot));
}

/**
 * The directory used for sockets when the state dir path is too long. Always under `/tmp`,
 * never `$TMPDIR`: every gc process must derive the same path, whatever its environment. Pure.
 */
export function fallbackSocketDir(root: string): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  return join("/tmp", `gc-${uid}-${shortHash(root, 12)}`);
}

/** Every path of session `name` under provider root `root`. Pure. */
export function sessionPaths(root: string, name: string): SessionPaths {
  const dir = join(sessionsDir(root), name);
  return {
    root,
    dir,
    socket: socketPathFor(root, name),
    record: join(dir, "session.json"),
    meta: join(dir, "meta.json"),
    lock: join(root, "locks", `${name}.lock`),
    log: join(root, "logs", `${name}.log`),
    holderLog: join(root, "logs", `${name}.holder.log`),
  };
}

/**
 * Creates `dir` (and parents) and makes sure it is a real directory owned by this user with
 * no group/other access. Used for every directory that holds a socket or secrets.
 * @throws UnsafeDirError when it exists but is a symlink, not ours, or writable by others.
 */
export { ensurePrivateDir } from "../socket-dir.js";

/** True when `path` does not exist (ENOENT; any other failure: false). */
export function pathAbsent(path: string): boolean {
  try {
    lstatSync(path);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/** Directories {@link ensurePrivateDirOnce} made sure of in this process. */
const knownPrivate = new Set<string>();

/**
 * {@link ensurePrivateDir}, once per directory and process: a provider root's fixed
 * directories (the root, `locks/`, `logs/`), asked for on every start. `forget` (after an
 * operation in it failed with ENOENT: it was removed since) makes the next call check again.
 * @throws UnsafeDirError as {@link ensurePrivateDir}.
 */
export function ensurePrivateDirOnce(dir: string, forget = false): void {
  if (forget) knownPrivate.delete(dir);
  if (knownPrivate.has(dir)) return;
  ensurePrivateDir(dir);
  knownPrivate.add(dir);
}

/**
 * Makes a new session's private directory `dir`: one `mkdir` (mode 0700) when it is new,
 * which is then ours and private; {@link ensurePrivateDir} (parents, checks) otherwise.
 * @returns whether `dir` is new (empty).
 * @throws UnsafeDirError as {@link ensurePrivateDir}.
 */
export function makePrivateDir(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o700 });
    return true;
  } catch {
    ensurePrivateDir(dir); // it exists, or its parent does not: the full way
    return false;
  }
}

/**
 * Writes `text` to `path` atomically (temp file, rename) with mode 0600: readers see the old
 * or the new content, never a mix. No fsync: these files describe processes that do not
 * survive a machine crash either, and a holder writes one per session start (an fsync each
 * would serialize every start of the city behind the disk).
 */
export function writeFileAtomicSync(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
