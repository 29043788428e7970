/**
 * The short socket directories gc makes under /tmp (`/tmp/gc-<uid>-<hash>/`) when a state
 * dir is too deep for a unix socket path (controller.ts, subprocess/layout.ts). Each is shared
 * by every process deriving the same hash — one controller, or one provider root's holder and
 * its sessions — so none owns it: each creates it before binding and, after unlinking its
 * socket, removes it only when empty (`rmdir`), so the directory goes with its last socket.
 * A bind that loses the race to such a removal fails and is retried after the directory is
 * made again ({@link bindInSocketDir}).
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, rmdirSync } from "node:fs";
import { dirname } from "node:path";

/**
 * A directory gc would put sockets in (or connect through) that another user could control:
 * not a directory, a symlink, owned by someone else, or writable by group or others. A
 * socket there may be someone else's posing as gc's, so gc refuses to use it.
 */
export class UnsafeDirError extends Error {
  override readonly name = "UnsafeDirError";
  readonly code = "GC_UNSAFE_DIR";
}

/** This process's uid (0 where there is none). */
function myUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : 0;
}

/**
 * Checks that `dir` is safe for gc's sockets, by `lstat` (a symlink is never followed): a real
 * directory owned by this user and not writable by group or others. Resolves false when it
 * does not exist.
 * @throws UnsafeDirError naming what is wrong and the fix.
 */
export function checkPrivateDir(dir: string): boolean {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw e;
  }
  const uid = myUid();
  const why = st.isSymbolicLink()
    ? "is a symbolic link"
    : !st.isDirectory()
      ? "is not a directory"
      : st.uid !== uid
        ? `is owned by uid ${st.uid}, not by this user (uid ${uid})`
        : (st.mode & 0o022) !== 0
          ? `is writable by ${(st.mode & 0o020) !== 0 ? "its group" : "others"} (mode ${(st.mode & 0o777).toString(8)})`
          : undefined;
  if (why) {
    throw new UnsafeDirError(
      `refusing to use ${dir} for gc's sockets: it ${why}; another user could pose as gc there. Remove it (or ask its owner to) and run the command again`,
    );
  }
  return true;
}

/**
 * Creates `dir` (0700, parents too) or checks the one that exists ({@link checkPrivateDir});
 * read/execute bits for group or others on a directory of ours are removed.
 * @throws UnsafeDirError when it exists and is not safe.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  checkPrivateDir(dir);
  if ((lstatSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** `/tmp/gc-<uid>-<12 hex>`: the only directories {@link releaseSocketDir} removes. */
const SHORT_SOCKET_DIR = /^\/tmp\/gc-\d+-[0-9a-f]{12}$/;

/** Whether `dir` is one of the short socket directories under /tmp. Pure. */
export function isShortSocketDir(dir: string): boolean {
  return SHORT_SOCKET_DIR.test(dir);
}

/**
 * After `socket` was unlinked: removes its directory when that is a short socket directory
 * and nothing else is left in it. A directory still holding another socket (or anything) is
 * left alone: `rmdir` refuses it atomically.
 */
export function releaseSocketDir(socket: string): void {
  const dir = dirname(socket);
  if (!isShortSocketDir(dir)) return;
  try {
    rmdirSync(dir);
  } catch {
    // not empty (another process's socket is in it), or already gone
  }
}

/** Binds tried after a short socket directory vanished under them, before giving up. */
const BIND_ATTEMPTS = 5;

/**
 * Runs `bind` (a listen on `socket`); when it fails because the short socket directory was
 * removed between its creation and the bind ({@link releaseSocketDir} of another process),
 * makes the directory again with `makeDir` and binds again. (libuv reports a bind in a
 * missing directory as EACCES, not ENOENT, so the directory's absence is what is checked.)
 */
export async function bindInSocketDir(
  socket: string,
  bind: () => Promise<void>,
  makeDir: (dir: string) => void | Promise<void>,
): Promise<void> {
  const dir = dirname(socket);
  for (let attempt = 1; ; attempt++) {
    try {
      await bind();
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const lostDir = (code === "EACCES" || code === "ENOENT") && isShortSocketDir(dir) && !existsSync(dir);
      if (!lostDir || attempt >= BIND_ATTEMPTS) throw e;
      await makeDir(dir);
    }
  }
}
