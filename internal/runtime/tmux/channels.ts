/**
 * Long-lived tmux control channels into containers or pods: one {@link ControlClient} per
 * container (keyed by the caller), attached to the session's tmux session, opened on first
 * use (start or adoption) and re-established with backoff when the stream is lost. A lost
 * stream is infrastructure: commands in flight fail with TmuxConnectionError, nothing else
 * happens to the session. The session's activity is the last `%output` seen on the channel
 * (read once from tmux per connection, then kept from notifications: no polling reads).
 * Used by the docker and k8s providers.
 */

import type { IdleResult, SessionOutputWatch } from "../provider.js";
import { ControlClient, type ControlClientOptions } from "./control-client.js";
import { ServerGate } from "./gate.js";
import {
  attachedClients,
  captureText,
  clearHistory,
  deliver,
  type IdleOptions,
  OutputWatch,
  type Pane,
  type PaneState,
  readPane,
  screen,
  sendKeys,
  waitIdle,
} from "./pane.js";

/** First delay of the reconnect backoff; doubled per failure up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5_000;
/** Reconnects tried after a loss before the channel waits for the next operation. */
const RECONNECT_ATTEMPTS = 6;

/** One container's channel. */
export class Channel {
  readonly client: ControlClient;
  readonly pane: Pane;
  /** The `%output` notifications of the session (the client is attached to it). */
  readonly watch: OutputWatch;
  private base: { readonly generation: number; readonly ms: number } | undefined;
  private closed = false;
  private reconnecting = false;

  constructor(opts: ControlClientOptions & { readonly attach: string }) {
    this.client = new ControlClient(opts);
    this.pane = { client: this.client, target: `${opts.attach}:` };
    this.watch = new OutputWatch(this.client);
    this.client.onConnectionLost(() => this.reconnect());
  }

  /** {@link readPane} of the session's pane. */
  read(signal?: AbortSignal): Promise<PaneState | undefined> {
    return readPane(this.pane, signal);
  }

  /** {@link screen} of the session's pane. */
  screen(signal?: AbortSignal): Promise<string> {
    return screen(this.pane, signal);
  }

  /** {@link captureText} of the session's pane. */
  capture(lines: number, styled: boolean, signal?: AbortSignal): Promise<string> {
    return captureText(this.pane, lines, styled, signal);
  }

  /** {@link sendKeys} to the session's pane. */
  sendKeys(keys: readonly string[], signal?: AbortSignal): Promise<void> {
    return sendKeys(this.pane, keys, signal);
  }

  /** {@link deliver}s a nudge's text to the session's pane (`multiline`: the session's rule). */
  deliver(
    name: string,
    text: string,
    confirmMs: number,
    signal?: AbortSignal,
    multiline?: "paste" | "lines" | undefined,
  ): Promise<void> {
    return deliver(this.pane, name, text, { confirmMs, signal, multiline });
  }

  /** {@link waitIdle} on the session's pane, driven by the channel's `%output` notifications. */
  waitIdle(timeoutMs: number, o: Omit<IdleOptions, "watch">): Promise<IdleResult> {
    return waitIdle(this.pane, timeoutMs, { ...o, watch: this.watch });
  }

  /**
   * The session's output as a provider hands it out ({@link SessionOutputWatch}): the
   * channel's own notifications; closing it leaves the channel open.
   */
  async output(signal?: AbortSignal): Promise<SessionOutputWatch | undefined> {
    if (!(await this.watch.arm(signal))) return undefined;
    return { settle: (o) => this.watch.settle(o), close: async () => undefined };
  }

  /** {@link clearHistory} of the session's pane. */
  clearHistory(signal?: AbortSignal): Promise<void> {
    return clearHistory(this.pane, signal);
  }

  /** True when a terminal (not gc's channel, not a container's console client) is attached. */
  async attached(signal?: AbortSignal): Promise<boolean> {
    return (await attachedClients(this.client, this.pane.target.replace(/:$/, ""), signal)) > 0;
  }

  /**
   * When the pane last printed: the later of tmux's `window_activity` (read once per
   * connection) and the last `%output` this channel saw.
   */
  async lastActivity(signal?: AbortSignal): Promise<Date | undefined> {
    const gen = this.client.generation;
    if (this.base === undefined || this.base.generation !== gen || gen === 0) {
      const [line = ""] = await this.client.command(
        ["display-message", "-p", "-t", this.pane.target, "#{window_activity}"],
        { signal, retry: true, create: false },
      );
      this.base = { generation: this.client.generation, ms: (Number(line.trim()) || 0) * 1000 };
    }
    const ms = Math.max(this.base.ms, this.watch.lastOutputMs);
    return ms > 0 ? new Date(ms) : undefined;
  }

  /** Re-establishes a lost stream in the background, with backoff; stops when closed. */
  private reconnect(): void {
    if (this.closed || this.reconnecting) return;
    this.reconnecting = true;
    void (async () => {
      let delay = FIRST_BACKOFF_MS;
      try {
        for (let i = 0; i < RECONNECT_ATTEMPTS && !this.closed; i++) {
          await new Promise<void>((r) => setTimeout(r, delay).unref());
          if (this.closed) return;
          try {
            await this.client.connect();
            return;
          } catch {
            delay = Math.min(delay * 2, MAX_BACKOFF_MS);
          }
        }
      } finally {
        this.reconnecting = false;
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.watch.dispose();
    await this.client.close();
  }
}

/** The channels of one provider, by container or pod. */
export class ChannelPool {
  private readonly channels = new Map<string, Channel>();
  private readonly options: (key: string) => ControlClientOptions & { readonly attach: string };

  /**
   * @param options the client options for container `key` (its transport, the session to
   * attach to).
   */
  constructor(options: (key: string) => ControlClientOptions & { readonly attach: string }) {
    this.options = options;
  }

  /** The channel of `key`, made (not yet connected) on first use. */
  get(key: string): Channel {
    let ch = this.channels.get(key);
    if (!ch) {
      ch = new Channel(this.options(key));
      this.channels.set(key, ch);
    }
    return ch;
  }

  /** Closes and forgets the channel of `key` (its container is gone), and its server's gate file. */
  async drop(key: string): Promise<void> {
    const ch = this.channels.get(key);
    this.channels.delete(key);
    await ch?.close();
    const file = this.options(key).gate?.file;
    if (file !== undefined) ServerGate.remove(file);
  }

  /** Closes every channel (the sessions keep running). */
  async closeAll(): Promise<void> {
    const all = [...this.channels.values()];
    this.channels.clear();
    await Promise.all(all.map((c) => c.close()));
  }

  /** How many channels are open or opening (for tests and benchmarks). */
  get size(): number {
    return this.channels.size;
  }
}
