/**
 * Starting a city's controller as a detached background process (`gc start` without flags):
 * launched first, waited for (its control socket) second, so the caller can do its own
 * checks of the city file while the controller boots, and abandon it, leaving nothing
 * behind, when they fail.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { pidAlive } from "../proc/kill.js";
import { withoutOwnerTag } from "../runtime/launch.js";
import { controllerPaths, findController, StopWonError } from "./controller-find.js";
import { START_ORIGIN_ENV, startOriginMs, stopWins } from "./stop-intent.js";

/** How long a launched controller has to open its control socket. */
const READY_TIMEOUT_MS = 20_000;
/** How long an abandoned controller has to exit after SIGTERM before SIGKILL. */
const ABANDON_GRACE_MS = 5_000;

/** A controller process launched in the background ({@link launchController}). */
export interface LaunchedController {
  readonly pid: number;
  /**
   * Waits until the controller answers on its control socket; resolves its pid (or that of
   * the controller another `gc start` launched meanwhile, when this one lost the race).
   * @throws StopWonError when a later `gc stop` made it exit before starting anything.
   * @throws Error with the log's tail when it exited during startup, or after 20 s.
   */
  ready(signal: AbortSignal): Promise<number>;
  /**
   * Stops it (SIGTERM, SIGKILL after 5 s) and removes what launching it created: the state
   * directory when it made it (nothing was there before), else the log file when it made that.
   * For a start refused after the launch (the file this process read is invalid).
   */
  abandon(): Promise<void>;
}

/**
 * Launches `command` (argv that runs the controller for the city in the foreground: `gc …
 * start --foreground`, whose argv is how a pid file's process is recognised as a controller)
 * detached, its output appended to `<stateDir>/controller.log`. Creates `stateDir` (mode
 * 0700) when missing. Does not wait for it: see {@link LaunchedController.ready}.
 */
export async function launchController(
  stateDir: string,
  command: readonly [string, ...string[]],
): Promise<LaunchedController> {
  const paths = controllerPaths(stateDir);
  // Synchronous up to the spawn (a few small file steps): the controller is on its way when
  // this call returns, even when the caller then keeps the event loop busy (gc's loader
  // compiling the CLI bundle).
  let madeDir: boolean;
  try {
    mkdirSync(stateDir, { mode: 0o700 });
    madeDir = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    madeDir = false;
  }
  const madeLog = madeDir || !existsSync(paths.log);
  const log = openSync(paths.log, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(command[0], command.slice(1), {
      detached: true,
      stdio: ["ignore", log, log],
      // Started from inside a session, the controller must not carry its owner tag (census.ts).
      env: {
        ...withoutOwnerTag(process.env),
        GC_CONTROLLER_CHILD: "1",
        [START_ORIGIN_ENV]: String(startOriginMs()),
      },
    });
  } finally {
    closeSync(log);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error("could not start the controller process");
  const exited = once(child, "exit").then(
    () => undefined,
    () => undefined,
  );
  child.unref();
  return {
    pid,
    ready: (signal) => awaitReady(stateDir, pid, signal),
    async abandon() {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
      const grace = new AbortController();
      const late = sleep(ABANDON_GRACE_MS, false, { signal: grace.signal }).catch(() => false);
      const ended = await Promise.race([exited.then(() => true), late]);
      grace.abort(); // the timer must not hold this process for the rest of the grace
      if (!ended) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
        await exited;
      }
      if (madeDir) await rm(stateDir, { recursive: true, force: true });
      else if (madeLog) await rm(paths.log, { force: true });
    },
  };
}

/** {@link LaunchedController.ready}. */
async function awaitReady(stateDir: string, pid: number, signal: AbortSignal): Promise<number> {
  const paths = controllerPaths(stateDir);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    const info = await findController(stateDir);
    if (info.running && info.status) return info.pid ?? pid;
    if (!(await pidAlive(pid))) {
      const other = await findController(stateDir);
      if (other.running) return other.pid ?? pid; // lost a race to another `gc start`: use the winner
      if (stopWins(stateDir, startOriginMs())) throw new StopWonError();
      const tail = (await readFile(paths.log, "utf8").catch(() => "")).split("\n").slice(-8).join("\n");
      throw new Error(`the controller exited during startup; log ${paths.log}:\n${tail}`);
    }
    await sleep(50, undefined, { signal });
  }
  throw new Error(`the controller did not open ${paths.socket} within ${READY_TIMEOUT_MS / 1000} s`);
}
