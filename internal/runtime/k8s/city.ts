/**
 * What every part of the k8s provider shares for one city: its settings and ownership, the
 * API connection (made on first use) and the session namespace it resolves, the one watch on
 * the city's pods, the city's Lease, and one tmux control channel per pod. Built once by
 * K8sProvider; pods.ts, pod-exec.ts and start.ts work through it.
 */
import { ProviderError } from "../../base/errors.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { ownerKey } from "../identity.js";
import { type Channel, ChannelPool } from "../tmux/channels.js";
import { remoteGate } from "../tmux/gate.js";
import { connect, type KubeApi } from "./api.js";
import { k8sTransport } from "./channel.js";
import { CityLease, holderOf } from "./lease.js";
import { podName, selector } from "./names.js";
import { type K8sSettings, resolveSettings } from "./settings.js";
import { cityLabels, type SessionIdentity, TMUX_SESSION, tmuxSocket } from "./spec.js";
import { PodWatch } from "./watch.js";

/** Deadline of one exec into a pod (and of one control-channel command). */
export const EXEC_TIMEOUT_MS = 30_000;

/** Options of the k8s provider. */
export interface K8sProviderOptions extends ProviderFactoryOptions {
  /** An already connected API (tests); default: {@link connect} with the settings. */
  readonly api?: KubeApi | undefined;
  /** Duration of the city's Lease (tests shorten it); default 30 s. */
  readonly leaseDurationMs?: number | undefined;
}

/** One city's connection and shared machinery. */
export class K8sCity {
  readonly settings: K8sSettings;
  /** Ownership value: the city's identity. */
  readonly owner: string;
  readonly cityDir: string;
  /** The one watch on the city's pods: start and deletion waits, observation. */
  readonly watch: PodWatch;
  /** The city's Lease: one checkout acts on the fleet. */
  readonly lease: CityLease;
  /** One long-lived tmux control stream per pod (by pod name). */
  readonly channels: ChannelPool;
  private apiPromise: Promise<KubeApi> | undefined;
  /** The session namespace: `session.k8s.namespace`, else the kubeconfig context's, else `default`. */
  private namespace: string | undefined;

  /** @throws ProviderError for invalid settings. */
  constructor(opts: K8sProviderOptions) {
    this.settings = resolveSettings(opts.settings);
    this.owner = ownerKey(opts.city, opts.cityId);
    this.cityDir = opts.cityDir;
    if (opts.api) {
      this.namespace = this.settings.namespace ?? opts.api.contextNamespace() ?? "default";
      this.apiPromise = Promise.resolve(opts.api);
    }
    this.watch = new PodWatch({
      api: () => this.api(),
      namespace: () => this.ns,
      labelSelector: selector(cityLabels(this.owner)),
    });
    this.lease = new CityLease({
      api: () => this.api(),
      namespace: () => this.ns,
      owner: this.owner,
      holder: holderOf(opts.cityDir),
      durationMs: opts.leaseDurationMs,
    });
    this.channels = new ChannelPool((pod) => ({
      transport: k8sTransport(() => this.api(), this.ns, pod),
      socket: { path: tmuxSocket(pod) },
      attach: TMUX_SESSION,
      commandTimeoutMs: EXEC_TIMEOUT_MS,
      gate: remoteGate(`k8s:${this.ns}/${pod}`),
    }));
  }

  /** The API connection, made on first use. */
  api(): Promise<KubeApi> {
    if (!this.apiPromise) {
      const p = connect({ kubeconfig: this.settings.kubeconfig, context: this.settings.context }).then(
        (api) => {
          this.namespace = this.settings.namespace ?? api.contextNamespace() ?? "default";
          return api;
        },
      );
      this.apiPromise = p;
      p.catch(() => {
        if (this.apiPromise === p) this.apiPromise = undefined;
      });
    }
    return this.apiPromise;
  }

  /** The session namespace; known once {@link K8sCity.api} resolved, which every caller awaits first. */
  get ns(): string {
    if (this.namespace === undefined)
      throw new ProviderError("k8s", "the namespace is read before connecting");
    return this.namespace;
  }

  /** Pod name and identity of session `name`. */
  identity(name: string): SessionIdentity {
    return { owner: this.owner, name, pod: podName(this.owner, name) };
  }

  /** The control channel into pod `pod` (made on first use, kept until the pod is deleted). */
  channel(pod: string): Channel {
    return this.channels.get(pod);
  }
}
