/**
 * Fault injection for the loopback API server: request latency, bursts of 500/429 answers,
 * pods that never schedule, images that never pull. Server restarts live on the server handle
 * ({@link ApiServer.restart}). Mutable at any time during a test.
 */
import type { KObject } from "./selectors.js";
import { type ApiError, internalError, tooManyRequests } from "./status.js";

/** Which requests a fault applies to; omitted fields match everything. */
export interface RequestMatch {
  /** HTTP method, e.g. "POST". */
  readonly method?: string;
  /** Matched against the path (no query string). */
  readonly path?: string | RegExp;
  /** Also fail watch requests (default false: watches are left alone). */
  readonly watch?: boolean;
}

/** Options of {@link Faults.failNext}. */
export interface FailOptions extends RequestMatch {
  /** 500 (InternalError, the default) or 429 (TooManyRequests). */
  readonly code?: 500 | 429;
  /** Sends `Retry-After: N` (always for 429; default 1). kubectl only retries with it. */
  readonly retryAfterSeconds?: number;
}

type PodMatch = string | RegExp | ((pod: KObject) => boolean);

function matchesText(m: string | RegExp, text: string): boolean {
  return typeof m === "string" ? m === text : m.test(text);
}

/** The fault switches; see each member. */
export class Faults {
  /** Delay before every request is handled (ms). */
  latencyMs = 0;
  private readonly bursts: { remaining: number; opts: FailOptions }[] = [];
  private readonly pending: PodMatch[] = [];
  private readonly pulls: (string | RegExp)[] = [];

  /** Answers the next `count` matching requests with a 500 (or 429) Status. */
  failNext(count: number, opts: FailOptions = {}): void {
    this.bursts.push({ remaining: count, opts });
  }

  /** Pods matching (by name, or predicate) stay Pending/Unschedulable forever. */
  stickPending(match: PodMatch): void {
    this.pending.push(match);
  }

  /** Containers whose image matches fail to pull: ErrImagePull, then ImagePullBackOff. */
  failImagePull(image: string | RegExp): void {
    this.pulls.push(image);
  }

  /** Removes every fault. */
  clear(): void {
    this.latencyMs = 0;
    this.bursts.length = 0;
    this.pending.length = 0;
    this.pulls.length = 0;
  }

  /** The error to answer this request with, consuming one burst slot; undefined to proceed. */
  takeFailure(method: string, path: string, isWatch: boolean): ApiError | undefined {
    for (const b of this.bursts) {
      const o = b.opts;
      if (b.remaining <= 0) continue;
      if (o.method && o.method.toUpperCase() !== method) continue;
      if (o.path && !matchesText(o.path, path)) continue;
      if (isWatch && !o.watch) continue;
      b.remaining--;
      return o.code === 429
        ? tooManyRequests(o.retryAfterSeconds ?? 1)
        : internalError("injected fault", o.retryAfterSeconds);
    }
    return undefined;
  }

  /** True when `pod` must never be scheduled. */
  isStuckPending(pod: KObject): boolean {
    return this.pending.some((m) =>
      typeof m === "function" ? m(pod) : matchesText(m, pod.metadata.name ?? ""),
    );
  }

  /** True when pulling `image` must fail. */
  isImagePullFailure(image: string): boolean {
    return this.pulls.some((m) => matchesText(m, image));
  }
}
