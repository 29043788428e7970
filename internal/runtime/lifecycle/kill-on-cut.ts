/**
 * Commands run in a remote target (a container, a pod) over its exec API that do not outlive
 * gc's interest in them: the exec API only closes its stream when gc gives up, so the command
 * runs under {@link RUN_GROUP} and, when the exec is cut short, a second exec of
 * {@link KILL_GROUP} kills its process group — the contract `run` keeps for local commands.
 */
import { randomUUID } from "node:crypto";
import { isGcError } from "../../base/errors.js";
import { KILL_GRACE_MS } from "../../proc/kill.js";
import { KILL_GROUP, RUN_GROUP } from "./target-scripts.js";

/** Options of {@link execKillable}. */
export interface KillableOptions<T> {
  /** Directory in the target for the group file ("" = the target's `${TMPDIR:-/tmp}`). */
  readonly dir: string;
  /** The caller's abort signal (the one `run` uses). */
  readonly signal?: AbortSignal | undefined;
  /** Runs argv in the target with the caller's signal and deadline. */
  readonly run: (argv: readonly string[]) => Promise<T>;
  /** Runs argv in the target without the caller's signal, within `timeoutMs`. */
  readonly runKill: (argv: readonly string[], timeoutMs: number) => Promise<unknown>;
}

/**
 * Runs `argv` in the target through `opts.run`, in a process group of its own. When the exec
 * is cut short — it rejects with `GC_TIMEOUT`, or `opts.signal` aborted — the command and
 * everything in its group are killed (SIGTERM, SIGKILL after {@link KILL_GRACE_MS}) by a
 * second exec (`opts.runKill`) before the original error is rethrown; a command that already
 * ended is left alone. A failing kill is not reported (the original error is). Other results
 * and errors pass through unchanged; an already aborted signal rejects at once with its reason.
 */
export async function execKillable<T>(argv: readonly string[], opts: KillableOptions<T>): Promise<T> {
  opts.signal?.throwIfAborted(); // nothing started: nothing to kill
  const id = randomUUID();
  try {
    return await opts.run(["/bin/sh", "-c", RUN_GROUP, "gc-exec", opts.dir, id, ...argv]);
  } catch (e) {
    if (opts.signal?.aborted || isGcError(e, "GC_TIMEOUT")) {
      const ticks = Math.ceil(KILL_GRACE_MS / 100);
      await opts
        .runKill(
          ["/bin/sh", "-c", KILL_GROUP, "gc-kill", opts.dir, id, String(ticks)],
          KILL_GRACE_MS * 3 + 5_000,
        )
        .catch(() => undefined);
    }
    throw e;
  }
}
