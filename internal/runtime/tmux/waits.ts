/**
 * Promise helpers of the control client (control-client.ts): a deadline on a promise, a
 * bounded wait for one to settle, and abort handling that puts a single listener on a signal
 * however many commands wait on it. Pure apart from timers.
 */

export const TIMED_OUT = Symbol("timed out");

/** `p`, or a rejection with {@link TIMED_OUT} after `ms`. */
export async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

export async function settlesWithin(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), t]);
  } finally {
    clearTimeout(timer);
  }
}

/** Callbacks waiting on each signal, behind one "abort" listener per signal. */
const abortWaiters = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `fn` once when `signal` aborts; returns the unsubscribe function. However many
 * commands are queued on one signal (a 20-session `gc status`), the signal carries a single
 * listener, so Node never warns about a listener leak.
 */
export function onAbortOf(signal: AbortSignal, fn: () => void): () => void {
  let set = abortWaiters.get(signal);
  if (!set) {
    const waiters = new Set<() => void>();
    set = waiters;
    abortWaiters.set(signal, waiters);
    signal.addEventListener(
      "abort",
      () => {
        abortWaiters.delete(signal);
        for (const w of waiters) w();
      },
      { once: true },
    );
  }
  const waiters = set;
  waiters.add(fn);
  return () => {
    waiters.delete(fn);
  };
}

export function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const unsubscribe = onAbortOf(signal, () => reject(signal.reason));
    p.then(
      (v) => {
        unsubscribe();
        resolve(v);
      },
      (e: unknown) => {
        unsubscribe();
        reject(e);
      },
    );
  });
}
