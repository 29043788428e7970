/**
 * The tmux server as seen from outside any connection: its socket (tmux's argv for it, the
 * path tmux puts it at, whether a server listens there), and its processes in /proc — control
 * clients left by a gc process that is gone ({@link orphanClients}) and the server itself
 * ({@link killServer}, for a wedged one). Never talks tmux's protocol. Used by the control
 * client (control-client.ts) and the tmux provider.
 */
import { readFile } from "node:fs/promises";
import { createConnection } from "node:net";
import { join } from "node:path";
import { hasOption } from "../../proc/census.js";
import { killPids } from "../../proc/kill.js";
import { ended, procStartTime, readArgv, readProcessTable } from "../../proc/process-table.js";

/**
 * Environment variable that tags every control client process with the gc process that spawned
 * it, `<pid>:<start time>` (removed from the server's global environment at once, so no session
 * sees it). A client whose tagging process is gone is an orphan of a dead gc process.
 */
export const CLIENT_OWNER_ENV = "GC_TMUX_CLIENT_OF";

/** This process as {@link CLIENT_OWNER_ENV} tags the control clients it spawns. */
export const OWNER_TAG = `${process.pid}:${procStartTime(process.pid) ?? ""}`;

/** Which tmux server: a socket name under tmux's socket dir (`-L`) or a socket path (`-S`). */
export type TmuxSocket = { readonly name: string } | { readonly path: string };

/** tmux's own argv for `socket`. Pure. */
export function socketArgs(socket: TmuxSocket): string[] {
  return "path" in socket ? ["-S", socket.path] : ["-L", socket.name];
}

/**
 * Where tmux puts the socket: `-S` paths as given, `-L` names under
 * `$TMUX_TMPDIR` (default `/tmp`) `/tmux-<uid>/`. Pure apart from reading the env.
 */
export function socketPath(socket: TmuxSocket, env: NodeJS.ProcessEnv = process.env): string {
  if ("path" in socket) return socket.path;
  return join(env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid?.() ?? 0}`, socket.name);
}

/**
 * True when a tmux server accepts connections on `path`. A missing file or a refused
 * connection (a socket left behind by a dead server) means no server; this never starts one.
 */
export function serverListening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ path });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", (e: NodeJS.ErrnoException) => {
      sock.destroy();
      resolve(e.code !== "ENOENT" && e.code !== "ECONNREFUSED" && e.code !== "ENOTSOCK");
    });
  });
}

/**
 * Control clients of the server at `socket` (tmux's argv for it, {@link socketArgs}) left by a
 * gc process that is gone: a `tmux: client` process tagged {@link CLIENT_OWNER_ENV} whose
 * tagging process no longer lives (pid and start time). Such a client never sees its stdin
 * close when something else still holds the other end, and it keeps the server (and a wedged
 * reply stream) alive. Clients of live gc processes and the server itself are never listed.
 */
export async function orphanClients(socket: readonly string[]): Promise<number[]> {
  const [flag, value] = socket as [string, string];
  const out: number[] = [];
  for (const p of await readProcessTable()) {
    if (p.comm !== "tmux: client" || ended(p)) continue;
    try {
      const argv = await readArgv(p.pid);
      if (!argv?.includes("-C") || !hasOption(argv, flag, value)) continue;
      const env = (await readFile(`/proc/${p.pid}/environ`, "utf8")).split("\0");
      const tag = env.find((e) => e.startsWith(`${CLIENT_OWNER_ENV}=`));
      if (tag === undefined) continue;
      const [pid = "", start = ""] = tag.slice(CLIENT_OWNER_ENV.length + 1).split(":");
      const now = procStartTime(Number(pid));
      if (now === null || (start !== "" && String(now) !== start)) out.push(p.pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/**
 * SIGKILLs the tmux server of `socket` (tmux's argv for it, {@link socketArgs}), found in
 * /proc by its process name and socket arguments (a wedged server answers nothing, not even
 * its pid). Its sessions end with it. Resolves the pids it killed.
 */
export async function killServer(socket: readonly string[]): Promise<number[]> {
  const [flag, value] = socket as [string, string];
  const pids: number[] = [];
  for (const p of await readProcessTable()) {
    if (p.comm !== "tmux: server" || ended(p)) continue;
    const argv = await readArgv(p.pid);
    if (argv && hasOption(argv, flag, value)) pids.push(p.pid);
  }
  if (pids.length > 0) await killPids(pids, { signal: "SIGKILL" });
  return pids;
}

/**
 * Kills {@link orphanClients} of `socket` while `client` holds the server's identify gate
 * shared (a client's exit makes tmux notify the others); resolves the pids it killed.
 */
export async function removeOrphanClients(
  socket: readonly string[],
  client: { gated<T>(fn: () => Promise<T>): Promise<T> },
): Promise<number[]> {
  const pids = await orphanClients(socket);
  if (pids.length > 0) await client.gated(() => killPids(pids, { signal: "SIGKILL" }));
  return pids;
}
