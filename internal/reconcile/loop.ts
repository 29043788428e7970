/**
 * The controller loop: runs reconcile passes one at a time, on an interval, when poked, and
 * when a requeue time (backoff end) comes due. Cancellable through its signal; no floating
 * timers. Pure scheduling: the pass itself is injected.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** What the loop needs. */
export interface LoopOptions<R> {
  /** One pass; its `requeueAt` (epoch ms) brings the next pass forward. */
  pass(): Promise<{ report: R; requeueAt: number | undefined }>;
  readonly intervalMs: number;
  readonly signal: AbortSignal;
  readonly now?: () => number;
  /** Called after each pass (also after a failed one, with the error). */
  readonly onPass?: (r: { report?: R; error?: unknown }) => void;
}

/** A running loop: poke it to run a pass soon; await `done` for its end. */
export interface Loop {
  /** Requests a pass; several pokes during one pass coalesce into one more pass. */
  poke(): void;
  readonly done: Promise<void>;
}

/** Starts the loop (first pass at once). It ends when `signal` aborts. */
export function startLoop<R>(opts: LoopOptions<R>): Loop {
  const now = opts.now ?? Date.now;
  let wake: AbortController | undefined;
  let poked = true;
  const poke = () => {
    poked = true;
    wake?.abort();
  };
  const done = (async () => {
    let next = now();
    while (!opts.signal.aborted) {
      if (poked || now() >= next) {
        poked = false;
        let requeueAt: number | undefined;
        try {
          const r = await opts.pass();
          requeueAt = r.requeueAt;
          opts.onPass?.({ report: r.report });
        } catch (e) {
          if (opts.signal.aborted) break;
          opts.onPass?.({ error: e });
        }
        next = Math.min(now() + opts.intervalMs, requeueAt ?? Number.POSITIVE_INFINITY);
        continue;
      }
      wake = new AbortController();
      const delay = Math.max(10, next - now());
      try {
        await sleep(delay, undefined, { signal: AbortSignal.any([opts.signal, wake.signal]) });
      } catch {
        // woken by a poke or stopped by the signal; the loop condition decides
      }
      wake = undefined;
    }
  })();
  return { poke, done };
}
