/**
 * Reading the city's tmux sessions' screens: peeks (plain or styled), the screens and
 * interactions of many sessions in one round trip (cached per session until it prints again),
 * answering an interaction, clearing scrollback, and attaching the caller's terminal.
 * Used by the tmux provider (provider.ts).
 */
import { spawn } from "node:child_process";
import { ProviderError, SessionNotFoundError } from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import type { InteractionResponse, OpOptions, PendingInteraction, SessionLook } from "../provider.js";
import { findInteraction } from "../screen/classify.js";
import { respondToInteraction } from "../screen/keys.js";
import { stripStyles } from "../screen/styled.js";
import type { CityServer } from "./city-server.js";
import { captureScreens, captureText, clearHistory, readPane } from "./pane.js";
import { sessionTarget } from "./quote.js";
import { isAbsent, isLive, isStaleTarget, PANE_FORMAT, parseSessions, type SessionInfo } from "./sessions.js";

/**
 * A look at this many sessions or fewer finds each by name (`list-panes -s -t`, about 0.2 ms
 * of the server's time each) instead of listing every pane (`list-panes -a`, about 20 ms at
 * 1,000 sessions); so does a look at up to a tenth of the sessions the last full listing
 * showed. The work watcher looks at a session in a turn every 100 ms.
 */
export const FEW_LOOKS = 16;

/** Whether a look at `wanted` sessions finds each by name, the last full listing having shown `listed`. Pure. */
export function looksOneByOne(wanted: number, listed: number): boolean {
  return wanted <= Math.max(FEW_LOOKS, listed / 10);
}

/** Screens, interactions and terminals of the city's tmux sessions. */
export class SessionScreens {
  private readonly srv: CityServer;
  /**
   * What `look` last read per session name: the session (`<generation>:<id>`), its screen and
   * the interaction on it, with the activity second it was read at: valid for that very
   * session while it printed nothing since.
   */
  private readonly interactionCache = new Map<
    string,
    {
      readonly session: string;
      readonly activity: number;
      readonly screen: string;
      readonly found: PendingInteraction | undefined;
    }
  >();

  /** How many running sessions of the city the last full listing showed. */
  private listed = 0;

  constructor(srv: CityServer) {
    this.srv = srv;
  }

  /**
   * The last `lines` lines of the pane (wrapped lines joined, trailing blanks dropped),
   * newest last; `lines <= 0` = all scrollback. Works on dead sessions too (last words).
   * @throws SessionNotFoundError when the session is missing.
   */
  async peek(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, false, opts);
  }

  /** {@link peek} with the screen's colours and attributes kept as SGR escapes (`capture-pane -e`). */
  async peekStyled(name: string, lines: number, opts: OpOptions = {}): Promise<string> {
    return this.screenText(name, lines, true, opts);
  }

  private async screenText(name: string, lines: number, styled: boolean, opts: OpOptions): Promise<string> {
    validateSessionName(name);
    const known = this.srv.remembered(name);
    if (known) {
      try {
        return await captureText(this.srv.pane(known.id, known.generation), lines, styled, opts.signal);
      } catch (e) {
        if (!isStaleTarget(e)) throw e;
        this.srv.ids.delete(name);
      }
    }
    const target = sessionTarget(name);
    // Capturing is read-only, so it goes out together with the ownership lookup (one round
    // trip) and its text is thrown away unless the session is ours.
    const [s, text] = await Promise.all([
      this.srv.lookup(target, opts.signal),
      captureText(this.srv.pane(target), lines, styled, opts.signal).catch((e: unknown) => {
        if (isAbsent(e)) return undefined;
        throw e;
      }),
    ]);
    if (s?.name !== name || text === undefined) throw new SessionNotFoundError(name);
    this.srv.ids.set(name, { id: s.id, generation: this.srv.client.generation });
    return text;
  }

  /** The approval prompt, dialog or menu on screen, or `undefined` (also when missing). */
  async pending(name: string, opts: OpOptions = {}): Promise<PendingInteraction | undefined> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) return undefined;
    const st = await readPane(this.srv.pane(s.id), opts.signal);
    return st ? findInteraction(st.styled) : undefined;
  }

  /** Pending interactions of the running sessions among `names`, from one {@link SessionScreens.look}. */
  async pendingAll(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, PendingInteraction>> {
    const out = new Map<string, PendingInteraction>();
    for (const [n, l] of await this.look(names, opts)) if (l.interaction) out.set(n, l.interaction);
    return out;
  }

  /**
   * The screens (with their interactions) of the running sessions among `names`: one
   * `list-panes -a` (or, for a few names, one lookup each: {@link looksOneByOne}), then command
   * lists (pane.ts `captureScreens`) capturing only the screens that printed since they were
   * last read (none in a quiet city). A capture is trusted only when it was taken in a later second than the session's
   * last output (tmux keeps activity in whole seconds), so no output is missed.
   */
  async look(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, SessionLook>> {
    if (looksOneByOne(names.length, this.listed)) {
      const found = await Promise.all(names.map((n) => this.srv.lookup(sessionTarget(n), opts.signal)));
      const live = found.filter(
        (s, i): s is SessionInfo => s !== undefined && s.name === names[i] && isLive(s),
      );
      const running = new Set(live.map((s) => s.name));
      for (const n of names) if (!running.has(n)) this.interactionCache.delete(n);
      return this.lookAtLive(live, this.srv.client.generation, opts);
    }
    let lines: string[];
    try {
      lines = await this.srv.tmux(["list-panes", "-a", "-F", PANE_FORMAT], {
        signal: opts.signal,
        retry: true,
      });
    } catch (e) {
      if (isAbsent(e)) return new Map();
      throw e;
    }
    const gen = this.srv.client.generation;
    const wanted = new Set(names);
    return this.lookAtListed(parseSessions(lines, this.srv.tag), gen, opts, (n) => wanted.has(n));
  }

  /**
   * {@link look} at the running sessions whose names `wanted` takes, from `listed`: the
   * sessions of one whole `list-panes -a` made on connection generation `gen` (the provider's
   * `snapshotWithLooks` gives its own listing's).
   */
  lookAtListed(
    listed: readonly SessionInfo[],
    gen: number,
    opts: OpOptions,
    wanted: (name: string) => boolean,
  ): Promise<Map<string, SessionLook>> {
    const ours = listed.filter((s) => s.name !== undefined && isLive(s));
    this.listed = ours.length;
    // Every running session was listed: the screens of the others leave the cache.
    const running = new Set(ours.map((s) => s.name));
    for (const n of this.interactionCache.keys()) if (!running.has(n)) this.interactionCache.delete(n);
    return this.lookAtLive(
      ours.filter((s) => wanted(s.name!)),
      gen,
      opts,
    );
  }

  /** The looks of `live` (running sessions found on connection `gen`): cached screens, the rest captured. */
  private async lookAtLive(
    live: readonly SessionInfo[],
    gen: number,
    opts: OpOptions,
  ): Promise<Map<string, SessionLook>> {
    const out = new Map<string, SessionLook>();
    const lookOf = (s: SessionInfo, screen: string, found: PendingInteraction | undefined): SessionLook => ({
      screen,
      interaction: found,
      lastActivity: s.activity > 0 ? new Date(s.activity * 1000) : undefined,
      readyPromptPrefix: s.readyPrefix,
    });
    const stale: SessionInfo[] = [];
    for (const s of live) {
      const hit = this.interactionCache.get(s.name!);
      if (hit && hit.session === `${gen}:${s.id}` && hit.activity === s.activity)
        out.set(s.name!, lookOf(s, hit.screen, hit.found));
      else stale.push(s);
    }
    if (stale.length === 0) return out;
    const readAt = Math.floor(Date.now() / 1000);
    // Each list of screens is read as it comes in, while the server captures the next ones.
    const read: ({ screen: string; found: PendingInteraction | undefined } | undefined)[] = [];
    await captureScreens(
      this.srv.client,
      stale.map((s) => `${s.id}:`),
      opts.signal,
      true,
      (screens, offset) =>
        screens.forEach((rows, j) => {
          if (rows === undefined) return;
          // Styled (SGR kept): a menu whose cursor is a highlighted row is read too; the look's
          // screen is its plain text.
          const styled = rows.join("\n");
          read[offset + j] = { screen: stripStyles(styled), found: findInteraction(styled) };
        }),
    );
    stale.forEach((s, i) => {
      const r = read[i];
      if (r === undefined) return;
      const { screen, found } = r;
      out.set(s.name!, lookOf(s, screen, found));
      if (readAt > s.activity)
        this.interactionCache.set(s.name!, {
          session: `${gen}:${s.id}`,
          activity: s.activity,
          screen,
          found,
        });
      else this.interactionCache.delete(s.name!);
    });
    return out;
  }

  /**
   * Answers the interaction on screen by moving the cursor to the chosen option, verifying
   * it, and confirming. @throws SessionNotFoundError when missing; ProviderError when
   * nothing is pending, the id differs, or no option fits; DialogRefusedError when it
   * could not be answered safely.
   */
  async respond(name: string, response: InteractionResponse, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s || !isLive(s)) throw new SessionNotFoundError(name);
    await respondToInteraction(this.srv.screenIO(s.id, opts.signal), response, { signal: opts.signal });
  }

  /** Drops the pane's scrollback. Best-effort: resolves when missing. */
  async clearScrollback(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s) return;
    try {
      await clearHistory(this.srv.pane(s.id), opts.signal);
    } catch (e) {
      if (!isAbsent(e)) throw e;
    }
  }

  /**
   * Runs `tmux attach-session` on this socket with the caller's terminal and resolves when
   * the user detaches (or the session ends). Aborting detaches.
   * @throws SessionNotFoundError when missing; ProviderError when stdin is not a terminal.
   */
  async attach(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    if (!s) throw new SessionNotFoundError(name);
    if (!process.stdin.isTTY) throw new ProviderError("tmux", "attach needs a terminal on stdin");
    const env = { ...process.env };
    delete env.TMUX;
    delete env.TMUX_PANE;
    const [bin, ...args] = this.srv.tmuxArgv();
    const child = spawn(bin!, [...args, "attach-session", "-t", s.id], { stdio: "inherit", env });
    const onAbort = () => child.kill("SIGTERM");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const code = await new Promise<number | null>((res, rej) => {
        child.once("error", rej);
        child.once("exit", (c) => res(c));
      });
      opts.signal?.throwIfAborted();
      if (code !== 0) throw new ProviderError("tmux", `attach-session exited with ${code}`);
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }
}
