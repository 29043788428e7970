/**
 * The replies a control connection waits for: each request (one command, or a command list
 * on one line) queues a {@link PendingReply}, and the connection settles the oldest with each
 * `%begin … %end/%error` block it reads (tmux answers in order). A request rejects on
 * `%error` (tmux drops the rest of a list), on its deadline, on abort, or when the connection
 * fails it. Used by the control client (control-client.ts); no I/O of its own.
 */
import { OperationTimeoutError } from "../../base/errors.js";
import { TmuxCommandError } from "./errors.js";
import { onAbortOf } from "./waits.js";

/** One request's place in a connection's reply queue. */
export interface PendingReply {
  readonly name: string;
  /** One `%begin … %end/%error` block arrived; returns true when the entry expects no more. */
  settle(ok: boolean, lines: string[]): boolean;
  fail(e: unknown): void;
}

/** How {@link queueReplies} waits. */
export interface ReplyWait {
  readonly signal?: AbortSignal | undefined;
  /** Deadline for every reply of the request. */
  readonly timeoutMs: number;
  /** Runs after the deadline rejected the request; `sentAt` is when it was queued. */
  readonly onTimeout: (sentAt: number) => void;
  /** Writes the request; runs once its entry is queued. */
  readonly send: () => void;
}

/**
 * Queues a request of `names.length` commands on `pending`, then sends it, and resolves with
 * each command's output lines.
 * @throws TmuxCommandError for the first command answered with `%error`.
 * @throws OperationTimeoutError past `timeoutMs`. Aborting rejects with the signal's reason
 * (the reply still arrives later and is dropped: the slot stays in the queue).
 */
export function queueReplies(
  pending: PendingReply[],
  names: readonly string[],
  w: ReplyWait,
): Promise<string[][]> {
  const name = names.join(" ; ");
  return new Promise<string[][]>((resolve, reject) => {
    let settled = false;
    const ms = w.timeoutMs;
    const done = () => {
      settled = true;
      clearTimeout(timer);
      unsubscribe();
    };
    const sentAt = Date.now();
    const timer = setTimeout(() => {
      if (settled) return;
      done();
      reject(new OperationTimeoutError(`tmux ${name}`, ms));
      w.onTimeout(sentAt);
    }, ms);
    const onAbort = () => {
      if (settled) return;
      done();
      reject(w.signal?.reason);
      // The reply still arrives later and is dropped: the slot stays in the queue.
    };
    const unsubscribe = w.signal ? onAbortOf(w.signal, onAbort) : () => undefined;
    const outputs: string[][] = [];
    let seen = 0;
    pending.push({
      name,
      settle(ok, lines) {
        // tmux drops the rest of a command list after a failure: an error ends the entry.
        const last = !ok || ++seen >= names.length;
        if (settled) return last;
        if (!ok) {
          done();
          reject(new TmuxCommandError(names[outputs.length] ?? name, lines));
          return true;
        }
        outputs.push(lines);
        if (last) {
          done();
          resolve(outputs);
        }
        return last;
      },
      fail(e) {
        if (settled) return;
        done();
        reject(e);
      },
    });
    w.send();
  });
}
