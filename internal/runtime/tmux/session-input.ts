/**
 * Input to the city's tmux sessions and waiting on their output: nudges (one paste
 * transaction, confirmed, serialized per session, optionally after an idle wait), raw keys,
 * idle waits and output watches driven by `%output` notifications of a second control client
 * attached to the session. Used by the tmux provider (provider.ts) and its start lifecycle.
 */
import { NudgeNotDeliveredError } from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import {
  flattenContent,
  type IdleResult,
  type NudgeContent,
  type NudgeOptions,
  type OpOptions,
  type SessionOutputWatch,
} from "../provider.js";
import { terminalText } from "../screen/delivery.js";
import type { CityServer } from "./city-server.js";
import { ControlClient } from "./control-client.js";
import { deliver, NudgeQueue, OutputWatch, sendKeys, validateKeys, waitIdle } from "./pane.js";
import { isAbsent, isLive, isStaleTarget, type SessionInfo } from "./sessions.js";

/** Nudges, keys, idle waits and output watches of the city's tmux sessions. */
export class SessionInput {
  private readonly srv: CityServer;
  /** Nudges to one session are serialized. */
  readonly nudges = new NudgeQueue();

  constructor(srv: CityServer) {
    this.srv = srv;
  }

  /**
   * Waits (up to `nudgeIdleWaitMs`) for the session to be idle, then delivers like
   * {@link nudgeNow}. Resolves when the session is missing or not running.
   * @throws NudgeNotDeliveredError when the text could not be confirmed as submitted, or
   * a menu/dialog is waiting for a choice (typing would answer it).
   */
  async nudge(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return;
    await this.nudgeSession(
      name,
      s,
      terminalText(flattenContent(content), opts),
      true,
      opts.signal,
      opts.multiline,
    );
  }

  /**
   * Delivers the text as one transaction: it goes into a named paste buffer (never argv,
   * never key by key), is pasted (bracketed when the program asked for it), then a literal
   * CR submits it; the screen is read to confirm the paste landed and the input was
   * submitted, and CR is retried (bounded) while the text still sits on the cursor line.
   * Nudges to one session are serialized. Resolves when the session is missing.
   * @throws NudgeNotDeliveredError when submission could not be confirmed, or a menu is on screen.
   */
  async nudgeNow(name: string, content: NudgeContent, opts: NudgeOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return;
    await this.nudgeSession(
      name,
      s,
      terminalText(flattenContent(content), opts),
      false,
      opts.signal,
      opts.multiline,
    );
  }

  nudgeSession(
    name: string,
    s: SessionInfo,
    text: string,
    waitIdle: boolean,
    signal: AbortSignal | undefined,
    multiline?: "paste" | "lines" | undefined,
  ): Promise<void> {
    if (text.includes("\0")) return Promise.reject(new NudgeNotDeliveredError(name, "the text contains NUL"));
    return this.nudges.run(name, async () => {
      if (text === "") return;
      if (waitIdle && this.srv.settings.nudgeIdleWaitMs > 0) {
        const r = await this.idleWait(s, this.srv.settings.nudgeIdleWaitMs, signal);
        if (r === "gone") return;
      }
      await deliver(this.srv.pane(s.id), name, text, {
        confirmMs: this.srv.settings.nudgeConfirmMs,
        multiline,
        signal,
      });
    });
  }

  /** Raw keys (tmux key names) in one `send-keys`; no implicit Enter. Resolves when missing or dead. */
  async sendKeys(name: string, keys: readonly string[], opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    if (keys.length === 0) return;
    validateKeys(keys);
    // Keys sent to a dead pane are dropped by tmux, so a remembered id needs no liveness check.
    const known = this.srv.remembered(name);
    if (known) {
      try {
        await sendKeys(this.srv.pane(known.id, known.generation), keys, opts.signal);
        return;
      } catch (e) {
        if (!isStaleTarget(e)) throw e;
        this.srv.ids.delete(name);
      }
    }
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return;
    try {
      await sendKeys(this.srv.pane(s.id, this.srv.client.generation), keys, opts.signal);
    } catch (e) {
      if (!isAbsent(e) && !isStaleTarget(e)) throw e;
    }
  }

  /**
   * Resolves `idle` once the screen has been unchanged for `idleQuietMs` with the ready
   * prompt visible (when the session declared one), no busy marker and no menu or dialog on
   * screen; `timeout` at `timeoutMs` (a hard bound); `gone` when missing or dead.
   */
  async waitForIdle(name: string, timeoutMs: number, opts: OpOptions = {}): Promise<IdleResult> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return "gone";
    return this.idleWait(s, timeoutMs, opts.signal);
  }

  /**
   * {@link waitIdle} driven by the session's `%output` notifications ({@link watchSession});
   * the screen is still read through the provider's client, only to confirm.
   */
  async idleWait(s: SessionInfo, timeoutMs: number, signal: AbortSignal | undefined): Promise<IdleResult> {
    const w = this.watchSession(s.id);
    try {
      return await waitIdle(this.srv.pane(s.id), timeoutMs, {
        readyPrefix: s.readyPrefix,
        quietMs: this.srv.settings.idleQuietMs,
        signal,
        watch: w.watch,
      });
    } finally {
      await w.close();
    }
  }

  /**
   * A watch on the session's output (see {@link watchSession}); `undefined` when the session
   * is missing or not running.
   */
  async watchOutput(name: string, opts: OpOptions = {}): Promise<SessionOutputWatch | undefined> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return undefined;
    const w = this.watchSession(s.id);
    try {
      await w.watch.arm(opts.signal);
    } catch (e) {
      await w.close();
      throw e;
    }
    return { settle: (o) => w.watch.settle(o), close: w.close };
  }

  /**
   * The `%output` notifications of session `id`: the provider's own client sees no output
   * (it sits in the keeper session, `no-output`), so a second control client attaches to the
   * session until `close` (`ignore-size`: it never resizes the window; it does not count as
   * an attached terminal, see {@link terminals}). Connects on first use.
   */
  private watchSession(id: string): { readonly watch: OutputWatch; close(): Promise<void> } {
    const client = new ControlClient({
      socket: this.srv.settings.socket,
      tmuxPath: this.srv.settings.tmuxPath,
      commandTimeoutMs: this.srv.settings.commandTimeoutMs,
      env: this.srv.clientEnv,
      attach: id,
    });
    const watch = new OutputWatch(client);
    return {
      watch,
      close: async () => {
        watch.dispose();
        await client.close();
      },
    };
  }
}
