/**
 * One watch on a city's pods, shared by every wait and observation of a provider: a labelled
 * LIST, then a WATCH from the list's resourceVersion (`allowWatchBookmarks`), kept as a cache
 * of the city's pods by name. A stream that ends is resumed from the last resourceVersion
 * seen (events or bookmarks); `410 Gone` (an `ERROR` event with code 410, or the HTTP status)
 * means that version expired: the cache is listed again. Waiters are woken on every change,
 * so a start or a deletion costs requests per pod, never per unit of time.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type * as K8s from "@kubernetes/client-node";
import { apiFailure, isTransient, type KubeApi } from "./api.js";

/** A pod as the cache holds it: typed from a LIST, plain JSON from watch events. */
export type CachedPod = K8s.V1Pod;

/** First delay before re-listing after a failure; doubled up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5_000;
/** A stream that ends cleanly sooner than this after opening counts towards the backoff. */
const QUICK_END_MS = 1_000;

/**
 * True when resourceVersion `have` is at or past `want`. kube-apiserver's resourceVersions are
 * etcd revisions (decimal, increasing); when either is not a decimal number the order is
 * unknown and this answers true (the caller then judges by the objects alone). Pure.
 */
export function rvAtLeast(have: string | undefined, want: string | undefined): boolean {
  if (want === undefined || have === undefined) return want === undefined;
  if (!/^\d+$/.test(have) || !/^\d+$/.test(want)) return true;
  return BigInt(have) >= BigInt(want);
}

/** Options of {@link PodWatch}. */
export interface PodWatchOptions {
  /** The API connection (made on first use). */
  readonly api: () => Promise<KubeApi>;
  /** The namespace (known once `api` resolved). */
  readonly namespace: () => string;
  /** The city's label selector. */
  readonly labelSelector: string;
}

interface Waiter {
  readonly check: () => boolean;
  readonly fail: (e: unknown) => void;
}

/** One run of the watch loop (from a start to a close). */
interface Run {
  closed: boolean;
  /** Resolves once the first LIST filled the cache (or failed). */
  readonly synced: Promise<void>;
  /** Wakes the loop's backoff early (close). */
  readonly wake: AbortController;
  stream: AbortController | undefined;
}

/**
 * The cache of a city's pods, fed by one watch. Started by the first call that needs it;
 * {@link PodWatch.close} ends it (a later call starts it again). Safe for any number of
 * concurrent waiters.
 */
export class PodWatch {
  private readonly opts: PodWatchOptions;
  private readonly pods = new Map<string, CachedPod>();
  /** resourceVersion the cache is synced to; undefined = list again. */
  private rv: string | undefined;
  /** True while a watch stream is open on a synced cache (observations may read the cache). */
  private live = false;
  private run: Run | undefined;
  private readonly waiters = new Set<Waiter>();

  constructor(opts: PodWatchOptions) {
    this.opts = opts;
  }

  /** Starts the watch when not running; resolves once the cache was listed once (or failed). */
  private start(): Promise<void> {
    if (!this.run) {
      let synced!: () => void;
      const run: Run = {
        closed: false,
        synced: new Promise<void>((r) => {
          synced = r;
        }),
        wake: new AbortController(),
        stream: undefined,
      };
      this.run = run;
      this.rv = undefined;
      void this.loop(run, synced).finally(() => {
        synced();
        if (this.run === run) this.run = undefined;
      });
    }
    return this.run.synced;
  }

  /** The pods of the city as the watch sees them, or `undefined` when the watch is not live. */
  async current(): Promise<CachedPod[] | undefined> {
    await this.start();
    return this.live ? [...this.pods.values()] : undefined;
  }

  /**
   * Pod `name` as the cache holds it (`null`: the city has no such pod), or `undefined` when
   * the watch is not live. Starts nothing and makes no request.
   */
  cached(name: string): CachedPod | null | undefined {
    if (!this.live) return undefined;
    return this.pods.get(name) ?? null;
  }

  /**
   * Resolves with the first non-`undefined` value of `test(pods)` — the cached pods of the
   * city by name — tested now and after every change of the cache, once the cache is synced
   * to resourceVersion `after` (the answer to the caller's own last write).
   * @throws the abort reason of `signal`; what `test` throws; the API's failure when the
   * cache cannot be listed (after the call's retries) or watched (RBAC); when closed.
   */
  async until<T>(
    test: (pods: ReadonlyMap<string, CachedPod>) => T | undefined,
    opts: { after?: string | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<T> {
    opts.signal?.throwIfAborted();
    await this.opts.api(); // a connection that cannot be made fails here, not in the loop
    await this.start();
    return new Promise<T>((resolve, reject) => {
      const done = (fn: () => void) => {
        this.waiters.delete(waiter);
        opts.signal?.removeEventListener("abort", onAbort);
        fn();
      };
      const onAbort = () => done(() => reject(opts.signal?.reason));
      const waiter: Waiter = {
        check: () => {
          if (!rvAtLeast(this.rv, opts.after)) return false;
          let v: T | undefined;
          try {
            v = test(this.pods);
          } catch (e) {
            done(() => reject(e));
            return true;
          }
          if (v === undefined) return false;
          done(() => resolve(v as T));
          return true;
        },
        fail: (e) => done(() => reject(e)),
      };
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.add(waiter);
      waiter.check();
    });
  }

  /** Ends the watch; pending waiters reject. Idempotent. */
  close(): void {
    const run = this.run;
    this.run = undefined;
    this.live = false;
    this.rv = undefined;
    this.pods.clear();
    if (run) {
      run.closed = true;
      run.stream?.abort();
      run.wake.abort();
    }
    this.failWaiters(new Error("the pod watch is closed"));
  }

  private notify(): void {
    for (const w of [...this.waiters]) w.check();
  }

  private failWaiters(e: unknown): void {
    for (const w of [...this.waiters]) w.fail(e);
  }

  /** Replaces the cache with a LIST's answer and its resourceVersion. */
  private fill(list: K8s.V1PodList): void {
    this.pods.clear();
    for (const p of list.items) if (p.metadata?.name) this.pods.set(p.metadata.name, p);
    this.rv = list.metadata?.resourceVersion;
  }

  private apply(run: Run, type: string, object: unknown): void {
    if (run.closed) return;
    const o = object as CachedPod & { code?: number };
    const rv = o?.metadata?.resourceVersion;
    switch (type) {
      case "ADDED":
      case "MODIFIED":
        if (o.metadata?.name) this.pods.set(o.metadata.name, o);
        break;
      case "DELETED":
        if (o.metadata?.name) this.pods.delete(o.metadata.name);
        break;
      case "BOOKMARK":
        break;
      case "ERROR":
        // 410 Expired: the version is gone from the server's history; list again. Other
        // errors end the stream too; resuming from the last version is then right.
        if (o.code === 410) this.rv = undefined;
        return;
      default:
        return;
    }
    if (rv) this.rv = rv;
    this.notify();
  }

  /** Sleeps about `ms` (±50 %), cut short by a close. */
  private pause(run: Run, ms: number): Promise<void> {
    return sleep(ms * (0.5 + Math.random()), undefined, { signal: run.wake.signal }).catch(() => undefined);
  }

  /** One watch stream from the cache's resourceVersion; resolves with how it ended (null: cleanly). */
  private stream(run: Run, api: KubeApi): Promise<unknown> {
    return new Promise<unknown>((resolve) => {
      void api
        .watch(
          `/api/v1/namespaces/${encodeURIComponent(this.opts.namespace())}/pods`,
          { labelSelector: this.opts.labelSelector, resourceVersion: this.rv, allowWatchBookmarks: true },
          (type, object) => this.apply(run, type, object),
          (err) => resolve(err ?? null),
        )
        .then((c) => {
          run.stream = c;
          if (run.closed) c.abort();
        }, resolve);
    });
  }

  /** The loop: list when needed, watch until the stream ends, repeat; back off on failures. */
  private async loop(run: Run, synced: () => void): Promise<void> {
    let backoff = FIRST_BACKOFF_MS;
    let api: KubeApi;
    try {
      api = await this.opts.api();
    } catch (e) {
      this.failWaiters(e);
      return;
    }
    while (!run.closed) {
      if (this.rv === undefined) {
        this.live = false;
        let list: K8s.V1PodList;
        try {
          list = await api.call((c) =>
            c.listNamespacedPod({ namespace: this.opts.namespace(), labelSelector: this.opts.labelSelector }),
          );
        } catch (e) {
          if (run.closed) return;
          // Nobody waits forever on a server that cannot be read: waiters get the failure.
          this.failWaiters(apiFailure("listing the city's pods", e));
          synced();
          await this.pause(run, backoff);
          backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
          continue;
        }
        if (run.closed) return;
        this.fill(list);
        this.notify();
      }
      synced();
      // The stream is open (or opening: it replays from `rv`): the cache follows the server.
      this.live = true;
      const opened = Date.now();
      const err = await this.stream(run, api);
      run.stream = undefined;
      if (run.closed) return; // a later run owns the cache now
      this.live = false;
      const status = (err as { statusCode?: unknown } | null)?.statusCode;
      if (status === 410) this.rv = undefined;
      if (err === null && Date.now() - opened >= QUICK_END_MS) {
        backoff = FIRST_BACKOFF_MS; // a clean end (timeout, server restart): resume at once
        continue;
      }
      if (typeof status === "number" && status !== 410) {
        const e = Object.assign(new Error(String((err as Error).message)), { code: status });
        // RBAC without `watch`, a bad selector: no wait can succeed; a 5xx may pass.
        if (!isTransient(e)) this.failWaiters(apiFailure("watching the city's pods", e));
      }
      // A failed stream may have missed events: list again. A quick clean end: resume, but
      // never spin on a server that ends every stream at once.
      if (err !== null) this.rv = undefined;
      await this.pause(run, backoff);
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
    }
  }
}
