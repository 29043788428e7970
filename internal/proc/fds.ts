/**
 * Descriptor hygiene for gc's background processes. Node opens every descriptor of its own
 * close-on-exec, but a process inherits whatever its spawner left open without that flag (a
 * CI runner's or test harness's pipe, say). A detached controller would hand such a pipe on to
 * every tmux server, hook and holder it starts, keeping the spawner's pipe open for as long as
 * they live (a `… | tee` that never ends). Linux only; elsewhere nothing is done.
 */
import { closeSync, readdirSync, readFileSync } from "node:fs";

/** `O_CLOEXEC` as it appears in `/proc/<pid>/fdinfo/<fd>` flags (octal). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes this process's inherited descriptors: every fd ≥ 3 without close-on-exec, except
 * Node's IPC channel (`NODE_CHANNEL_FD`). Resolves the fds it closed. Never throws.
 */
export function closeInheritedFds(env: NodeJS.ProcessEnv = process.env): number[] {
  const keep = new Set([0, 1, 2, Number(env.NODE_CHANNEL_FD ?? -1)]);
  const closed: number[] = [];
  let fds: string[];
  try {
    fds = readdirSync("/proc/self/fd");
  } catch {
    return closed; // no /proc
  }
  for (const entry of fds) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || keep.has(fd)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
      if (flags === undefined || (Number.parseInt(flags, 8) & O_CLOEXEC) !== 0) continue;
      closeSync(fd);
      closed.push(fd);
    } catch {
      // gone meanwhile (the directory listing's own fd), or not closable
    }
  }
  return closed;
}
