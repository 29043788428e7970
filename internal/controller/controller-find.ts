/**
 * Finding a city's controller: its files under the state dir, and whether the process its
 * pid file names is a live controller (and what it says on its control socket). Apart from
 * controller.ts, which runs it, so that `gc start` can look and launch one before it loads
 * what a controller runs.
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pidAlive } from "../proc/kill.js";
import { readArgv } from "../proc/process-table.js";
import { type ControlMessage, controlSocketPath, requestControl } from "./control.js";
import type { ControllerInfo } from "./status-snapshot.js";

/** Logged (and reported by `gc start`) when a later `gc stop` wins over a start. */
export const STOPPED_BEFORE_START =
  "a gc stop issued after this start wins: starting nothing, controller exiting";

/** A `gc stop` invoked after this `gc start` won: nothing was (or will be) started. */
export class StopWonError extends Error {
  override readonly name = "StopWonError";
  constructor() {
    super(STOPPED_BEFORE_START);
  }
}

/** Files of the controller under the state dir. */
export function controllerPaths(stateDir: string) {
  return {
    pid: join(stateDir, "controller.pid"),
    socket: controlSocketPath(stateDir),
    log: join(stateDir, "controller.log"),
  };
}

/** True when `pid` runs `gc start --foreground` (a reused pid of another program is not ours). */
export async function isControllerProcess(pid: number): Promise<boolean> {
  const argv = await readArgv(pid);
  return argv?.includes("start") === true && argv.includes("--foreground");
}

/**
 * Reads the pid file and asks the socket for status (and, with `desired`, for what its last
 * pass resolved). Never throws.
 */
export async function findController(
  stateDir: string,
  opts: { desired?: boolean } = {},
): Promise<ControllerInfo> {
  const paths = controllerPaths(stateDir);
  let pid: number | undefined;
  try {
    pid = Number((await readFile(paths.pid, "utf8")).trim()) || undefined;
  } catch {
    pid = undefined;
  }
  if (pid === undefined || !(await pidAlive(pid)) || !(await isControllerProcess(pid)))
    return { running: false, pid: undefined, status: undefined };
  const ask = (op: "status" | "desired") =>
    requestControl(paths.socket, { op }, { timeoutMs: 3_000 }).catch(() => [] as ControlMessage[]);
  const [msgs, more] = await Promise.all([ask("status"), opts.desired ? ask("desired") : []]);
  const st = msgs.find((m) => m.type === "status");
  const d = more.find((m) => m.type === "desired");
  return {
    running: true,
    pid,
    status: st?.type === "status" ? st.status : undefined,
    ...(d?.type === "desired" && d.desired !== null ? { desired: d.desired } : {}),
  };
}
