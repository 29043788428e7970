/**
 * The short socket directories gc makes under /tmp (`/tmp/gc-<uid>-<hash>/`) when a state
 * dir is too deep for a unix socket path (controller.ts, subprocess/layout.ts). Each is shared
 * by every process deriving the same hash — one controller, or one provider root's holder and
 * its sessions — so none owns it: each creates it before binding and, after unlinking its
 * socket, removes it only when empty (`rmdir`), so the directory goes with its last socket.
 * A bind that loses the race to such a removal fails and is retried after the directory is
 * made again ({@link bindInSocketDir}).
 */
import { existsSync, rmdirSync } from "node:fs";
import { dirname } from "node:path";

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
