/**
 * Delivering queued nudges at a session's next idle moment, and the idle probe that
 * decides "idle" for nudges, `gc wait --idle` and `gc run`. The controller calls
 * {@link deliverDueNudges} once per pass; every attempt ends in delivered, failed with a
 * reason (retried with backoff) or a dead letter, so a busy session never starves a queued
 * nudge silently (field-lessons §5 D). Delivery is at most once: an attempt that typed the
 * text but could not confirm it, or whose deliverer stopped mid-attempt (the claim, recorded
 * before anything is sent, lapsed), is a dead letter, never sent again.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describeError, isGcError, NudgeNotDeliveredError } from "../base/errors.js";
import {
  type Provider,
  sessionCapabilities,
  supportsIdleWait,
  supportsInteraction,
  supportsOutputWatch,
} from "../runtime/provider.js";
import type { Nudge, SessionLock, SessionStore } from "../session/store.js";

/** How long the controller waits for a session to look idle before it defers a nudge. */
export const DELIVERY_IDLE_BOUND_MS = 2_000;
/** First retry delay after a failed attempt; doubles per attempt up to {@link NUDGE_RETRY_MAX_MS}. */
export const NUDGE_RETRY_MIN_MS = 15_000;
/** Longest retry delay between attempts of one queued nudge. */
export const NUDGE_RETRY_MAX_MS = 10 * 60_000;
/** Poll interval of the idle probe. */
export const IDLE_POLL_MS = 150;
/** Without a ready prompt or provider support: the screen must not change for this long. */
export const IDLE_QUIET_MS = 1_500;

/**
 * Screen text as comparable lines: `\r\n` normalised, trailing whitespace of each line and
 * trailing blank lines dropped (terminals pad both). Pure.
 */
export function screenLines(text: string): string[] {
  const lines = text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((l) => l.trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * True when the program sits at an empty prompt: the last non-blank screen line is exactly
 * the ready prompt (trailing spaces ignored). A prompt with typed text after it, or output
 * below it, is not idle. Pure.
 */
export function atBarePrompt(lines: readonly string[], readyPromptPrefix: string): boolean {
  const prompt = readyPromptPrefix.trimEnd();
  return prompt !== "" && lines.length > 0 && lines[lines.length - 1] === prompt;
}

/** Result of {@link probeIdle}. */
export type IdleProbe = "idle" | "busy" | "gone" | "waiting-for-input";

/** Options of {@link probeIdle}. */
export interface IdleProbeOptions {
  /** The session's ready prompt (`>>> `): idle means sitting at it, empty. */
  readonly readyPromptPrefix?: string | undefined;
  /**
   * Only the prompt decides: a last line that is not the bare prompt is busy, and the
   * provider's own idle heuristic is never consulted (for programs known to end their
   * screen with the prompt when idle, e.g. a REPL or a shell).
   */
  readonly promptOnly?: boolean | undefined;
  /**
   * Also idle: a last line that looks like a shell prompt (ends in `>`, `$`, `%`, `#`, `❯`)
   * and has not changed for `quietMs` (the prompt text itself may change, e.g. with the cwd).
   */
  readonly promptLike?: boolean | undefined;
  /** Hard bound: `busy` when the session has not looked idle by then. */
  readonly boundMs: number;
  /**
   * Extra condition on the screen (full scrollback is peeked when given): idle only counts
   * while it holds, e.g. "the turn visibly started".
   */
  readonly accept?: ((screen: string) => boolean) | undefined;
  /**
   * The session's own busy markers (preset `busy_markers`, regular expression sources matched
   * case-insensitively on the last 50 screen lines): a screen showing one is never idle.
   */
  readonly busyMarkers?: readonly string[] | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly pollMs?: number | undefined;
  readonly quietMs?: number | undefined;
}

/** True when one of `markers` (regular expression sources) matches the last 50 lines of `screen`. Pure. */
export function showsBusyMarker(screen: string, markers: readonly string[] | undefined): boolean {
  if (!markers || markers.length === 0) return false;
  const tail = screenLines(screen).slice(-50).join("\n");
  return markers.some((m) => new RegExp(m, "i").test(tail));
}

/** True when `line` ends like a shell or REPL prompt. Pure. */
export function looksLikePromptLine(line: string): boolean {
  return /[>$%#❯]$/u.test(line.trimEnd());
}

/**
 * Decides whether a session is idle, within `boundMs`, without ever typing into it.
 * A pending interaction (approval prompt, menu) is never idle. Per poll, first that applies:
 * the last screen line is a prompt line (starts with the ready prompt, or `promptOnly`) →
 * idle when it is the bare prompt on two consecutive polls with the same screen; a provider
 * with `waitForIdle` → its answer (full-screen programs whose prompt is not the last line);
 * otherwise → the screen unchanged for `quietMs`. Between polls: `pollMs` (or the rest of
 * `quietMs`), or, when the provider watches the session's output ({@link supportsOutputWatch}),
 * until that quiet period passed without output — and until something printed at all while
 * the screen cannot turn idle by itself. Resolves `gone` when the session is not
 * running. Rejects with `signal.reason` when aborted and with provider errors other than a
 * missing session.
 */
export async function probeIdle(
  provider: Provider,
  name: string,
  opts: IdleProbeOptions,
): Promise<IdleProbe> {
  const { signal } = opts;
  const pollMs = opts.pollMs ?? IDLE_POLL_MS;
  const quietMs = opts.quietMs ?? IDLE_QUIET_MS;
  const deadline = Date.now() + opts.boundMs;
  const prompt = opts.readyPromptPrefix?.trimEnd() || undefined;
  const caps = await sessionCapabilities(provider, name, { signal });
  const idleWait = supportsIdleWait(provider) && caps.idleWait ? provider : undefined;
  const peekLines = opts.accept ? 0 : 50;
  // With the session's output watched (tmux control-mode notifications), the screen is read
  // again only once something may have changed it: never on a timer while nothing prints.
  const watch = supportsOutputWatch(provider)
    ? await provider.watchOutput(name, { signal }).catch((e: unknown) => {
        if (signal?.aborted) throw e;
        return undefined;
      })
    : undefined;
  try {
    let previous: string | undefined;
    let since = Date.now();
    for (;;) {
      signal?.throwIfAborted();
      const readAt = Date.now();
      if (!(await provider.isRunning(name, { signal }))) return "gone";
      if (supportsInteraction(provider) && caps.interaction) {
        const p = await provider.pending(name, { signal }).catch((e: unknown) => {
          if (isGcError(e, "GC_SESSION_NOT_FOUND")) return undefined;
          throw e;
        });
        if (p) return "waiting-for-input";
      }
      let screen: string;
      try {
        screen = await provider.peek(name, peekLines, { signal });
      } catch (e) {
        if (isGcError(e, "GC_SESSION_NOT_FOUND")) return "gone";
        throw e;
      }
      const now = Date.now();
      const same = screen === previous;
      if (!same) {
        previous = screen;
        since = now;
      }
      const accepted =
        (opts.accept ? opts.accept(screen) : true) && !showsBusyMarker(screen, opts.busyMarkers);
      const last = screenLines(screen).at(-1) ?? "";
      // What the next read waits for: the same screen a while later (it may then be idle), or
      // a changed one (nothing else can make it idle).
      let quiet: { readonly from: number; readonly ms: number } | undefined;
      if (prompt !== undefined && (opts.promptOnly || last.startsWith(prompt))) {
        if (accepted && last === prompt && same) return "idle";
        if (accepted && opts.promptLike && looksLikePromptLine(last) && now - since >= quietMs) return "idle";
        if (accepted && last === prompt) quiet = { from: readAt, ms: pollMs };
        else if (accepted && opts.promptLike && looksLikePromptLine(last))
          quiet = { from: since, ms: quietMs };
      } else if (idleWait) {
        if (accepted) {
          const r = await idleWait.waitForIdle(name, Math.max(1, Math.min(deadline - now, 5_000)), {
            signal,
          });
          if (r === "gone") return "gone";
          if (r === "idle") return "idle";
        }
      } else if (accepted && now - since >= quietMs) {
        return "idle";
      } else if (accepted) {
        quiet = { from: since, ms: quietMs };
      }
      const left = Math.max(1, deadline - Date.now());
      if (Date.now() >= deadline) return "busy";
      if (watch) {
        await watch.settle({
          from: quiet?.from ?? readAt,
          afterOutput: quiet === undefined,
          quietMs: quiet?.ms ?? pollMs,
          timeoutMs: left,
          signal,
        });
      } else {
        await sleep(Math.min(pollMs, left), undefined, { signal });
      }
    }
  } finally {
    await watch?.close();
  }
}

/** Delay before the next attempt after `attempts` attempts: 15 s doubling, capped at 10 min. Pure. */
export function nudgeRetryDelayMs(attempts: number): number {
  return Math.min(NUDGE_RETRY_MAX_MS, NUDGE_RETRY_MIN_MS * 2 ** Math.max(0, attempts - 1));
}

/** Where a session lives and how to tell it is idle. */
export interface DeliveryTarget {
  readonly provider: string;
  readonly readyPromptPrefix?: string | undefined;
  /** The session's own busy markers (preset `busy_markers`). */
  readonly busyMarkers?: readonly string[] | undefined;
}

/** What {@link deliverDueNudges} needs. */
export interface NudgeDeliveryDeps {
  readonly store: SessionStore;
  providerFor(provider: string): Promise<Provider>;
  /** The session's provider and ready prompt; `undefined` for a session the city does not know. */
  targetOf(session: string): DeliveryTarget | undefined;
  readonly now?: (() => number) | undefined;
  /** Idle probe bound per attempt (default {@link DELIVERY_IDLE_BOUND_MS}). */
  readonly idleBoundMs?: number | undefined;
  /** Sessions handled at once (default 4). */
  readonly concurrency?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

/** What one delivery round did. */
export interface NudgeDeliveryReport {
  readonly delivered: readonly Nudge[];
  /** Attempts that failed; the nudge is queued again or, when `state` is `dead`, a dead letter. */
  readonly failed: readonly Nudge[];
  /** Nudges that expired (TTL) this round, now dead letters. */
  readonly expired: readonly Nudge[];
  /** Earliest time a remaining queued nudge becomes due, if any. */
  readonly nextDueAt: number | undefined;
}

/**
 * One delivery round: expired nudges become dead letters; then, for each session with a due
 * nudge, one attempt: take the session lock without waiting (a `gc run` in progress means
 * busy), claim the next nudge, confirm the session runs, has nothing pending and is idle
 * (bounded), nudge, and complete it — or fail it with the reason and a backoff. One nudge
 * per session per round: a delivered nudge makes the session busy. Each step is recorded as
 * an event (`nudge.delivered`, `nudge.failed`, `nudge.dead`). Never rejects for one
 * session's failure; rejects on abort or when the store fails.
 */
export async function deliverDueNudges(deps: NudgeDeliveryDeps): Promise<NudgeDeliveryReport> {
  const now = deps.now ?? Date.now;
  const log = deps.log ?? (() => undefined);
  const { store, signal } = deps;
  const expired = await store.expireNudges();
  for (const n of expired) {
    log(`nudge #${n.id} for ${n.session} is a dead letter: ${n.deadReason ?? "expired"}`);
    await store.appendEvent({
      session: n.session,
      type: "nudge.dead",
      payload: { id: n.id, reason: n.deadReason ?? "expired", lastError: n.lastError, attempts: n.attempts },
    });
  }
  const open = await store.listNudges({ states: ["queued", "claimed"] });
  const at = now();
  const due = [
    ...new Set(
      open
        .filter((n) =>
          n.state === "queued" ? n.notBefore <= at : n.claimedUntil !== null && n.claimedUntil <= at,
        )
        .map((n) => n.session),
    ),
  ].sort();
  const delivered: Nudge[] = [];
  const failed: Nudge[] = [];
  const queue = [...due];
  const worker = async () => {
    for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
      signal?.throwIfAborted();
      const r = await attemptOne(deps, s, log);
      if (r?.ok) delivered.push(r.nudge);
      else if (r) failed.push(r.nudge);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(deps.concurrency ?? 4, due.length)) }, worker));
  const left = await store.listNudges({ states: ["queued"] });
  const nextDueAt = left.length > 0 ? Math.min(...left.map((n) => n.notBefore)) : undefined;
  return { delivered, failed, expired, nextDueAt };
}

async function attemptOne(
  deps: NudgeDeliveryDeps,
  session: string,
  log: (line: string) => void,
): Promise<{ ok: boolean; nudge: Nudge } | undefined> {
  const { store } = deps;
  let lock: SessionLock | undefined;
  let busy: string | undefined;
  try {
    lock = await store.tryLock(session, { purpose: "nudge delivery" });
  } catch (e) {
    if (!isGcError(e, "GC_LOCKED")) throw e;
    busy = describeError(e);
  }
  try {
    const n = await store.claimNudge(session);
    if (!n) return undefined;
    const outcome =
      busy === undefined ? await tryDeliver(deps, session, n.text) : { reason: busy, sent: false };
    if (outcome === undefined) {
      const done = await store.completeNudge(n.id, n.attempts);
      log(`nudge #${n.id} delivered to ${session} (attempt ${n.attempts})`);
      await store.appendEvent({
        session,
        type: "nudge.delivered",
        payload: { id: n.id, attempt: n.attempts, source: n.source },
      });
      return { ok: true, nudge: done };
    }
    const { reason, sent } = outcome;
    const f = await store.failNudge(n.id, n.attempts, reason, {
      retryAfterMs: nudgeRetryDelayMs(n.attempts),
      final: sent,
    });
    log(
      f.state === "dead"
        ? `nudge #${n.id} for ${session} is a dead letter: ${f.deadReason ?? reason}`
        : `nudge #${n.id} for ${session}: attempt ${n.attempts}/${n.maxAttempts} failed: ${reason}`,
    );
    await store.appendEvent({
      session,
      type: f.state === "dead" ? "nudge.dead" : "nudge.failed",
      payload: {
        id: n.id,
        attempt: n.attempts,
        reason,
        ...(f.deadReason ? { deadReason: f.deadReason } : {}),
      },
    });
    return { ok: false, nudge: f };
  } finally {
    await lock?.release();
  }
}

/**
 * One delivery attempt; resolves `undefined` when delivered, else why not and whether the
 * text may have reached the session anyway (`sent`: a nudge typed but not confirmed is never
 * sent again, so it arrives at most once).
 */
async function tryDeliver(
  deps: NudgeDeliveryDeps,
  session: string,
  text: string,
): Promise<{ readonly reason: string; readonly sent: boolean } | undefined> {
  const no = (reason: string) => ({ reason, sent: false });
  const target = deps.targetOf(session);
  if (!target) return no("session is not part of the city");
  try {
    const provider = await deps.providerFor(target.provider);
    const bound = deps.idleBoundMs ?? DELIVERY_IDLE_BOUND_MS;
    const state = await probeIdle(provider, session, {
      readyPromptPrefix: target.readyPromptPrefix,
      busyMarkers: target.busyMarkers,
      boundMs: bound,
      signal: deps.signal,
    });
    switch (state) {
      case "gone":
        return no("session is not running");
      case "waiting-for-input":
        return no("session is waiting for input (pending interaction)");
      case "busy":
        return no(`session busy (not idle within ${bound} ms)`);
      case "idle":
        await provider.nudge(session, text, { signal: deps.signal });
        return undefined;
    }
  } catch (e) {
    if (deps.signal?.aborted) throw e;
    return { reason: describeError(e), sent: e instanceof NudgeNotDeliveredError && e.sent };
  }
}
