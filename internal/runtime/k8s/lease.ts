/**
 * One controller per city: a coordination.k8s.io/v1 Lease per city (named like the city
 * object, from the city's identity) says which checkout acts on the city's fleet. The holder
 * is this host and the city's real directory, so the controller and the CLI of one checkout
 * share it, while the same city (the same `.gc/city.json`) in another directory or on another
 * machine is refused, naming the holder, until the lease expires unrenewed. The holder renews
 * it every third of its duration while its provider is open.
 */
import { realpathSync } from "node:fs";
import { hostname } from "node:os";
import type * as K8s from "@kubernetes/client-node";
import { ProviderError } from "../../base/errors.js";
import { apiFailure, httpStatus, type KubeApi } from "./api.js";
import { ANNOTATIONS } from "./names.js";
import { cityObjectName } from "./owner.js";
import { cityLabels } from "./spec.js";

/** Default lease duration: a holder that stops renewing is taken over this long after. */
export const LEASE_DURATION_MS = 30_000;

/** The holder identity of the city at `cityDir` on this host: `<hostname>:<real path>`. */
export function holderOf(cityDir: string): string {
  let real = cityDir;
  try {
    real = realpathSync(cityDir);
  } catch {
    // a city dir that does not exist: as given
  }
  return `${hostname()}:${real}`;
}

/** Name of the Lease of `owner` (the city's identity): the city object's name. Pure. */
export function leaseName(owner: string): string {
  return cityObjectName(owner);
}

/** RFC 3339 with microseconds, as a `MicroTime` is written. Pure. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** Milliseconds of a `MicroTime` (string, or a Date from a typed client), NaN when absent. */
function timeOf(v: unknown): number {
  if (v instanceof Date) return v.getTime();
  return typeof v === "string" ? Date.parse(v) : Number.NaN;
}

/** Options of {@link CityLease}. */
export interface CityLeaseOptions {
  readonly api: () => Promise<KubeApi>;
  readonly namespace: () => string;
  /** The city's identity (ownership key). */
  readonly owner: string;
  /** This checkout's holder identity ({@link holderOf}). */
  readonly holder: string;
  readonly durationMs?: number | undefined;
}

/**
 * The city's Lease as this checkout sees it. {@link CityLease.claim} before acting on the
 * fleet: it costs no request while the lease is held with more than half its duration left.
 */
export class CityLease {
  private readonly opts: CityLeaseOptions;
  private readonly durationMs: number;
  /** Local time until which this holder is known to hold the lease. */
  private heldUntil = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private claiming: Promise<void> | undefined;
  /** The other holder's record as last seen, and when it was first seen unchanged. */
  private seen: { record: string; at: number } | undefined;

  constructor(opts: CityLeaseOptions) {
    this.opts = opts;
    this.durationMs = opts.durationMs ?? LEASE_DURATION_MS;
  }

  /**
   * Makes sure this checkout holds the city's Lease: creates it, renews it, or takes it over
   * from a holder that has not renewed it within its duration.
   * @throws ProviderError (a configuration problem, not counted towards quarantine) naming
   * the holder while another checkout holds it; the API's failure otherwise.
   */
  claim(signal?: AbortSignal): Promise<void> {
    if (Date.now() < this.heldUntil - this.durationMs / 2) return Promise.resolve();
    this.claiming ??= this.acquire(signal).finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  /** Gives the lease up (the fleet is stopped): another checkout may take it at once. */
  async release(signal?: AbortSignal): Promise<void> {
    this.stopRenewing();
    if (this.heldUntil === 0) return;
    this.heldUntil = 0;
    const api = await this.opts.api();
    const name = leaseName(this.opts.owner);
    const namespace = this.opts.namespace();
    const lease = await this.read(api, signal);
    if (!lease || lease.spec?.holderIdentity !== this.opts.holder) return;
    const { holderIdentity: _, ...rest } = lease.spec ?? {};
    const spec = { ...rest, leaseDurationSeconds: 1 };
    await api
      .callCoordination(
        (c) => c.replaceNamespacedLease({ name, namespace, body: { ...lease, spec } }),
        signal,
      )
      .catch((e: unknown) => {
        if (httpStatus(e) !== 409 && httpStatus(e) !== 404) throw apiFailure(`releasing lease ${name}`, e);
      });
  }

  /** Stops renewing (the provider closes; a later claim renews again). The lease then expires after its duration. */
  close(): void {
    this.stopRenewing();
  }

  private stopRenewing(): void {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  private async read(api: KubeApi, signal?: AbortSignal): Promise<K8s.V1Lease | undefined> {
    const name = leaseName(this.opts.owner);
    try {
      return await api.callCoordination(
        (c) => c.readNamespacedLease({ name, namespace: this.opts.namespace() }),
        signal,
      );
    } catch (e) {
      if (httpStatus(e) === 404) return undefined;
      throw apiFailure(`reading lease ${name}`, e);
    }
  }

  private async acquire(signal?: AbortSignal): Promise<void> {
    const api = await this.opts.api();
    const name = leaseName(this.opts.owner);
    const namespace = this.opts.namespace();
    const seconds = Math.max(1, Math.ceil(this.durationMs / 1000));
    // A conflict (another writer between our read and write) is read again, a few times.
    for (let attempt = 0; ; attempt++) {
      const now = Date.now();
      const lease = await this.read(api, signal);
      const mine = {
        holderIdentity: this.opts.holder,
        leaseDurationSeconds: seconds,
        renewTime: microTime(now) as unknown as Date,
      };
      try {
        if (!lease) {
          await api.callCoordination(
            (c) =>
              c.createNamespacedLease({
                namespace,
                body: {
                  apiVersion: "coordination.k8s.io/v1",
                  kind: "Lease",
                  metadata: {
                    name,
                    namespace,
                    labels: cityLabels(this.opts.owner),
                    annotations: { [ANNOTATIONS.city]: this.opts.owner },
                  },
                  spec: { ...mine, acquireTime: microTime(now) as unknown as Date, leaseTransitions: 0 },
                },
              }),
            signal,
          );
        } else {
          const spec = lease.spec ?? {};
          const holder = spec.holderIdentity ?? "";
          if (holder !== this.opts.holder && holder !== "" && !this.expired(lease, now)) {
            throw this.refusal(lease, now);
          }
          const takeover = holder !== this.opts.holder;
          await api.callCoordination(
            (c) =>
              c.replaceNamespacedLease({
                name,
                namespace,
                body: {
                  ...lease,
                  spec: {
                    ...spec,
                    ...mine,
                    ...(takeover
                      ? {
                          acquireTime: microTime(now) as unknown as Date,
                          leaseTransitions: (spec.leaseTransitions ?? 0) + 1,
                        }
                      : {}),
                  },
                },
              }),
            signal,
          );
        }
      } catch (e) {
        if (e instanceof ProviderError) throw e;
        const code = httpStatus(e);
        if ((code === 409 || code === 404) && attempt < 4) continue;
        throw apiFailure(`claiming lease ${name}`, e);
      }
      this.heldUntil = now + this.durationMs;
      this.seen = undefined;
      this.renewing();
      return;
    }
  }

  /** Renews every third of the duration while held (the timer never keeps the process alive). */
  private renewing(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => {
      this.heldUntil = Math.min(this.heldUntil, Date.now()); // renew now, whatever is left
      this.claim().catch(() => {
        // lost to another holder, or the API is down: the next claim says which
        this.stopRenewing();
      });
    }, this.durationMs / 3);
    this.renewTimer.unref();
  }

  /**
   * True when the holder has not renewed within the lease's duration: by the lease's own
   * renewTime, or (clocks may disagree) by this process seeing the same record unchanged
   * for that long.
   */
  private expired(lease: K8s.V1Lease, now: number): boolean {
    const spec = lease.spec ?? {};
    const duration = (spec.leaseDurationSeconds ?? 0) * 1000;
    const renewed = timeOf(spec.renewTime ?? spec.acquireTime);
    if (Number.isFinite(renewed) && renewed + duration < now) return true;
    const record = `${spec.holderIdentity}|${String(timeOf(spec.renewTime))}|${lease.metadata?.resourceVersion}`;
    if (this.seen?.record !== record) this.seen = { record, at: now };
    return now - this.seen.at >= duration;
  }

  private refusal(lease: K8s.V1Lease, now: number): ProviderError {
    const spec = lease.spec ?? {};
    const duration = (spec.leaseDurationSeconds ?? 0) * 1000;
    const renewed = timeOf(spec.renewTime ?? spec.acquireTime);
    const left = Number.isFinite(renewed) ? Math.max(0, Math.ceil((renewed + duration - now) / 1000)) : 0;
    const name = leaseName(this.opts.owner);
    return new ProviderError(
      "k8s",
      `city ${this.opts.owner} is run by another controller: ${spec.holderIdentity} holds lease ` +
        `${this.opts.namespace()}/${name} (renewed every ${Math.round(duration / 3000)} s; ` +
        `expires ${left} s after its last renewal); this checkout (${this.opts.holder}) takes over only ` +
        "once it expires — stop the other controller, or run this city from one place",
      { fault: "configuration" },
    );
  }
}
