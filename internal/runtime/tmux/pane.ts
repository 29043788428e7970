/**
 * Every operation on a session's tmux pane — screen reads, keys, the nudge transaction,
 * interrupt, idle wait, activity, attached clients, scrollback — written once, over a
 * {@link ControlClient}. The tmux provider reaches its panes through a local client; docker
 * and k8s through a client running inside the container or pod (one long-lived stream each).
 * This is the only module that builds `capture-pane`, `send-keys` and `paste-buffer` commands.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidNameError, NudgeNotDeliveredError } from "../../base/errors.js";
import { captureFlags, paneText } from "../pane-text.js";
import type { IdleResult, SettleOptions, SettleResult } from "../provider.js";
import { screenLooksIdle } from "../screen/classify.js";
import { deliverText, type TerminalState } from "../screen/delivery.js";
import { stripStyles } from "../screen/styled.js";
import type { CommandOptions, ControlClient } from "./control-client.js";
import { TmuxConnectionError, TmuxGenerationError } from "./errors.js";
import { isAbsent } from "./sessions.js";

/** How often idle waits and nudge confirmation read the pane. */
export const STATE_POLL_MS = 25;
const IDLE_POLL_MS = 100;
const ENTER_ATTEMPTS = 3;

/** One pane, as every operation addresses it. */
export interface Pane {
  readonly client: ControlClient;
  /**
   * Pane target: `$<session id>:` (the tmux provider) or `<session name>:` (one session per
   * container or pod). A read checks that the answer came from this very session.
   */
  readonly target: string;
  /** Only run on this connection generation (targets made of session ids). */
  readonly generation?: number | undefined;
}

/** What the pane looks like right now. */
export interface PaneState {
  readonly dead: boolean;
  /** The program's exit status once tmux reaped it (dead panes only). */
  readonly exitStatus: number | undefined;
  /** Time of the window's last output, seconds since the epoch (0 when unknown). */
  readonly activity: number;
  readonly cursorX: number;
  readonly cursorY: number;
  /** Lines scrolled off the top so far. */
  readonly history: number;
  /** Every visible row, right-trimmed. */
  readonly rows: readonly string[];
  /**
   * The visible screen with its colours and attributes as SGR escapes, from the same capture
   * (`rows` is its plain text): what menus are read from (screen/styled.ts).
   */
  readonly styled: string;
  /** Changes whenever anything visible (or the history size) changes. */
  readonly sig: string;
}

const STATE_FORMAT =
  "#{session_id}|#{session_name}|#{pane_dead}|#{pane_dead_status}|#{window_activity}|#{cursor_x}|#{cursor_y}|#{history_size}";

/**
 * True when `e` means the pane's session or its whole server is gone: tmux's "not found"
 * answers, and a channel whose client could not attach to the session any more.
 */
export function isGone(e: unknown): boolean {
  return (
    isAbsent(e) ||
    (e instanceof TmuxConnectionError &&
      /can't find session|no server running|no sessions|error connecting|session not found/i.test(e.message))
  );
}

function opts(p: Pane, signal: AbortSignal | undefined, retry = true): CommandOptions {
  return { signal, retry: retry && p.generation === undefined, generation: p.generation, create: false };
}

/** True when the `#{session_id}`/`#{session_name}` pair answered is the one `target` names. */
function sameSession(target: string, id: string, name: string): boolean {
  const t = target.replace(/:$/, "");
  return t.startsWith("$") ? t === id : t.replace(/^=/, "") === name;
}

/**
 * The pane's state from ONE round trip (a command list: the state line, then the visible
 * screen); `undefined` when the session is gone.
 */
export async function readPane(p: Pane, signal?: AbortSignal): Promise<PaneState | undefined> {
  let replies: string[][];
  for (let attempt = 0; ; attempt++) {
    try {
      replies = await p.client.commandList(
        [
          ["display-message", "-p", "-t", p.target, STATE_FORMAT],
          ["capture-pane", ...STYLED_SCREEN, "-t", p.target],
        ],
        opts(p, signal),
      );
      break;
    } catch (e) {
      if (isGone(e)) return undefined;
      // A read is harmless to repeat: once, on a fresh connection.
      if (e instanceof TmuxConnectionError && !(e instanceof TmuxGenerationError) && attempt === 0) continue;
      throw e;
    }
  }
  const [sid = "", sname = "", dead, status, activity, cx, cy, hist] = (replies[0]?.[0] ?? "").split("|");
  // display-message falls back to another pane when the target is gone: check the session.
  if (!sameSession(p.target, sid, sname)) return undefined;
  const styled = (replies[1] ?? []).join("\n");
  const rows = stripStyles(styled).split("\n");
  return {
    dead: dead === "1",
    exitStatus: status && /^\d+$/.test(status) ? Number(status) : undefined,
    activity: Number(activity) || 0,
    cursorX: Number(cx) || 0,
    cursorY: Number(cy) || 0,
    history: Number(hist) || 0,
    rows,
    styled,
    sig: `${cx},${cy},${hist}\n${rows.join("\n")}`,
  };
}

/**
 * `capture-pane` flags for a visible screen whose menus are read: SGR escapes kept (`-e`)
 * and the blanks a program wrote at a row's end too (`-N`: a status bar's padding), so the
 * parser sees highlighted rows; stripped and right-trimmed, it is the plain `-p` capture.
 */
const STYLED_SCREEN = ["-p", "-e", "-N"];

/** The visible screen of a live pane, "" when it is dead or gone (nothing on it can be answered). */
export async function screen(p: Pane, signal?: AbortSignal): Promise<string> {
  const st = await readPane(p, signal);
  return st && !st.dead ? st.rows.join("\n") : "";
}

/** {@link screen} as a styled capture (SGR escapes kept), for the menu parser and key driver. */
export async function styledScreen(p: Pane, signal?: AbortSignal): Promise<string> {
  const st = await readPane(p, signal);
  return st && !st.dead ? st.styled : "";
}

/**
 * The last `lines` lines of the pane (wrapped lines joined, trailing blanks dropped), newest
 * last; `lines <= 0` = all history; SGR escapes kept when `styled`.
 * @throws TmuxCommandError (see isAbsent) when the session is gone.
 */
export async function captureText(
  p: Pane,
  lines: number,
  styled: boolean,
  signal?: AbortSignal,
): Promise<string> {
  const out = await p.client.command(
    ["capture-pane", ...captureFlags(lines, styled), "-t", p.target],
    opts(p, signal),
  );
  return paneText(out.join("\n"), lines);
}

/**
 * Captures per command list: tmux's cost of a list grows faster than its length (1,000
 * captures in one list cost its server ~64 ms of CPU, in lists of 100 ~44 ms).
 */
const CAPTURE_LIST_MAX = 100;

/**
 * The visible screens of `targets` on one client, in command lists of at most
 * {@link CAPTURE_LIST_MAX} sent at once; when one vanished meanwhile (a list stops at its
 * first error), each of that list is captured on its own. `undefined` for a session that is
 * gone. `styled`: SGR escapes kept (the styled screen of {@link PaneState}). `each`, when
 * given, is called with each list's screens as soon as they are in (`offset`: the index in
 * `targets` of its first), so a caller reads them while the server captures the next lists.
 */
export async function captureScreens(
  client: ControlClient,
  targets: readonly string[],
  signal?: AbortSignal,
  styled = false,
  each?: (screens: readonly (string[] | undefined)[], offset: number) => void,
): Promise<(string[] | undefined)[]> {
  const argv = (t: string) => ["capture-pane", ...(styled ? STYLED_SCREEN : ["-p"]), "-t", t];
  const captureList = async (list: readonly string[]): Promise<(string[] | undefined)[]> => {
    try {
      return await client.commandList(list.map(argv), { signal, create: false });
    } catch (e) {
      if (signal?.aborted) throw e;
      return Promise.all(
        list.map((t) =>
          client.command(argv(t), { signal, retry: true, create: false }).catch((err: unknown) => {
            if (isAbsent(err)) return undefined;
            throw err;
          }),
        ),
      );
    }
  };
  const lists: string[][] = [];
  for (let i = 0; i < targets.length; i += CAPTURE_LIST_MAX)
    lists.push(targets.slice(i, i + CAPTURE_LIST_MAX));
  return (
    await Promise.all(
      lists.map(async (list, i) => {
        const screens = await captureList(list);
        each?.(screens, i * CAPTURE_LIST_MAX);
        return screens;
      }),
    )
  ).flat();
}

/** @throws InvalidNameError unless every key is a non-empty tmux key name without NUL. */
export function validateKeys(keys: readonly string[]): void {
  for (const k of keys) {
    if (k === "" || k.includes("\0"))
      throw new InvalidNameError("key", k, "must be a non-empty key name without NUL");
  }
}

/** Raw tmux key names in one `send-keys` (no implicit Enter). Keys to a dead pane are dropped by tmux. */
export async function sendKeys(p: Pane, keys: readonly string[], signal?: AbortSignal): Promise<void> {
  if (keys.length === 0) return;
  await p.client.command(["send-keys", "-t", p.target, "--", ...keys], opts(p, signal, false));
}

/** Ctrl-C to the pane's program. */
export function interrupt(p: Pane, signal?: AbortSignal): Promise<void> {
  return sendKeys(p, ["C-c"], signal);
}

/** Drops the pane's scrollback. */
export async function clearHistory(p: Pane, signal?: AbortSignal): Promise<void> {
  await p.client.command(["clear-history", "-t", p.target], opts(p, signal, false));
}

/**
 * Terminals attached to `session` other than gc's own: control-mode clients and clients
 * that never size the window (`ignore-size`: a container's console client) do not count.
 */
export async function attachedClients(
  client: ControlClient,
  session: string,
  signal?: AbortSignal,
): Promise<number> {
  const lines = await client.command(
    ["list-clients", "-t", session, "-F", "#{client_control_mode}|#{client_flags}"],
    { signal, retry: true, create: false },
  );
  return lines.filter((l) => {
    const [control, flags = ""] = l.split("|");
    return l.trim() !== "" && control !== "1" && !flags.includes("ignore-size");
  }).length;
}

/** The subscription that reports the pane's death as a notification (tmux ≥ 3.2 checks it each second). */
const DEAD_SUBSCRIPTION = "gc-pane-dead::#{pane_dead}";

/** What woke a {@link OutputWatch.next}: new output, or something else that may have ended the pane. */
export type WatchWake = "output" | "changed" | "timeout";

/**
 * The `%output` notifications of one session, as a control client attached to it receives
 * them (a client only gets the output of its own session's panes): when the pane last
 * printed, and a way to sleep until it prints again. Also wakes on the pane's death (a
 * subscription on `#{pane_dead}`) and on the loss of the connection, so a wait never sleeps
 * through the end of what it watches. {@link dispose} unsubscribes.
 */
export class OutputWatch {
  private readonly client: ControlClient;
  private last = 0;
  private readonly waiters = new Set<(why: WatchWake) => void>();
  private readonly offs: (() => void)[];
  private armedGeneration = -1;
  private armedOk = false;

  constructor(client: ControlClient) {
    this.client = client;
    const wake = (why: WatchWake) => {
      for (const w of [...this.waiters]) w(why);
    };
    this.offs = [
      client.onNotification((n) => {
        if (n.name === "output" || n.name === "extended-output") {
          this.last = Date.now();
          wake("output");
        } else if (n.name === "subscription-changed" || n.name === "exit") wake("changed");
      }),
      client.onConnectionLost(() => wake("changed")),
    ];
  }

  /** When the last `%output` arrived (ms since the epoch), 0 when none was seen. */
  get lastOutputMs(): number {
    return this.last;
  }

  /**
   * Connects the client when needed and makes sure this connection reports the pane's death.
   * False when it cannot (the caller then polls); never throws but for an abort.
   */
  async arm(signal?: AbortSignal): Promise<boolean> {
    try {
      await this.client.connect(signal);
      if (this.armedGeneration === this.client.generation) return this.armedOk;
      const gen = this.client.generation;
      this.armedOk = await this.client
        .command(["refresh-client", "-B", DEAD_SUBSCRIPTION], { signal, create: false })
        .then(
          () => true,
          () => false,
        );
      this.armedGeneration = gen;
      return this.armedOk;
    } catch (e) {
      if (signal?.aborted) throw e;
      return false;
    }
  }

  /** Resolves at the next notification that matters, or with "timeout" after `ms`. Aborting rejects. */
  next(ms: number, signal?: AbortSignal): Promise<WatchWake> {
    return new Promise<WatchWake>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const finish = (why: WatchWake) => {
        clearTimeout(timer);
        this.waiters.delete(finish);
        signal?.removeEventListener("abort", onAbort);
        resolve(why);
      };
      const onAbort = () => {
        clearTimeout(timer);
        this.waiters.delete(finish);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => finish("timeout"), Math.max(0, ms));
      this.waiters.add(finish);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Resolves "quiet" once no `%output` arrived for `quietMs`, measured from the later of
   * `from` and the last output; with `afterOutput`, only after some output later than `from`
   * (a screen that cannot turn idle without printing). "timeout" when `timeoutMs` passed
   * first; "changed" when the pane may have ended (its death, the connection's loss), or
   * when the watch cannot be armed (after `quietMs`, so the caller polls at that pace).
   * The caller reads the screen next. Aborting rejects.
   */
  async settle(o: SettleOptions): Promise<SettleResult> {
    const deadline = Date.now() + o.timeoutMs;
    if (!(await this.arm(o.signal))) {
      await sleep(Math.max(0, Math.min(o.quietMs, deadline - Date.now())), undefined, { signal: o.signal });
      return "changed";
    }
    if (o.afterOutput && this.last <= o.from) {
      const w = await this.next(deadline - Date.now(), o.signal);
      if (w !== "output") return w;
    }
    for (;;) {
      const left = Math.max(o.from, this.last) + o.quietMs - Date.now();
      if (left <= 0) return "quiet";
      const budget = deadline - Date.now();
      if (budget <= 0) return "timeout";
      if ((await this.next(Math.min(left, budget), o.signal)) === "changed") return "changed";
    }
  }

  dispose(): void {
    for (const off of this.offs) off();
    for (const w of [...this.waiters]) w("changed");
  }
}

/** Options of {@link waitIdle}. */
export interface IdleOptions {
  /** The session's ready prompt prefix: idle only while it shows. */
  readonly readyPrefix?: string | undefined;
  /** How long the pane must stay quiet. */
  readonly quietMs: number;
  readonly signal?: AbortSignal | undefined;
  /**
   * The pane's output notifications. With it the wait is event-driven: the quiet period is
   * measured from the last `%output`, and the screen is read only to confirm (the ready
   * prompt, busy markers, dialogs) once a quiet period passed or the pane may have ended.
   * Without it (or when it cannot be armed) the screen is polled every {@link IDLE_POLL_MS}.
   */
  readonly watch?: OutputWatch | undefined;
}

/**
 * Resolves `idle` once the pane has been quiet for `quietMs` with the ready prompt visible
 * (when declared), no busy marker and no menu or dialog; `timeout` at `timeoutMs` (a hard
 * bound); `gone` when the pane is missing or dead. Quiet means: no `%output` (with a watch)
 * and an unchanged screen between two reads.
 */
export async function waitIdle(p: Pane, timeoutMs: number, o: IdleOptions): Promise<IdleResult> {
  const { signal, watch } = o;
  const deadline = Date.now() + timeoutMs;
  const armed = watch !== undefined && (await watch.arm(signal));
  let lastSig: string | undefined;
  let since = Date.now();
  let outputAtRead = watch?.lastOutputMs ?? 0;
  for (;;) {
    const readAt = Date.now();
    const st = await readPane(p, signal);
    if (!st || st.dead) return "gone";
    const now = Date.now();
    const out = watch?.lastOutputMs ?? 0;
    // A changed screen restarts the quiet period — from the output that changed it when the
    // watch saw that output, from now otherwise (a resize, or no watch).
    if (st.sig !== lastSig) {
      lastSig = st.sig;
      since = armed && out > outputAtRead ? Math.max(since, out) : now;
    }
    if (armed) since = Math.max(since, out);
    outputAtRead = out;
    const ready = screenLooksIdle(st.styled, o.readyPrefix);
    if (ready && now - since >= o.quietMs) return "idle";
    if (now >= deadline) return "timeout";
    if (!armed || !watch) {
      await sleep(Math.min(IDLE_POLL_MS, deadline - now), undefined, { signal });
      continue;
    }
    // Ready: read again once the quiet period passed without output. Not ready: only output
    // can change that (or the pane's end), so wait for output, then for quiet.
    await watch.settle({
      from: ready ? since : readAt,
      afterOutput: !ready,
      quietMs: o.quietMs,
      timeoutMs: deadline - Date.now(),
      signal,
    });
  }
}

let bufferSeq = 0;

/** Options of {@link deliver}. */
export interface DeliverOptions {
  /** How long one Enter may take to show its effect. */
  readonly confirmMs: number;
  /** Text of several lines as one paste (default) or line by line (../screen/delivery.ts). */
  readonly multiline?: "paste" | "lines" | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Delivers `text` to the pane through the shared delivery rule (../screen/delivery.ts): the text goes
 * into a named paste buffer (never argv, never key by key) and is pasted in one command list
 * (bracketed when the program asked for it), then a CR on its own submits it; delivered only
 * when the input line took it. Resolves when the pane is gone or dies (the program took the
 * input and exited).
 * @throws NudgeNotDeliveredError when submission could not be confirmed, a menu or dialog is
 * on screen, or the text holds NUL.
 */
export async function deliver(p: Pane, name: string, text: string, o: DeliverOptions): Promise<void> {
  const { signal } = o;
  if (text.includes("\0")) throw new NudgeNotDeliveredError(name, "the text contains NUL");
  if (text === "") return;
  const state = async (): Promise<TerminalState | undefined> => {
    const st = await readPane(p, signal);
    return st && !st.dead ? st : undefined;
  };
  await deliverText(
    name,
    {
      state,
      paste: async (body) => {
        const buffer = `gc-nudge-${process.pid}-${++bufferSeq}`;
        // One command list: the server runs it whole, so no buffer is left behind by a lost
        // connection, and an abort cannot fall between the two. Never retried (not idempotent).
        try {
          await p.client.commandList(
            [
              ["set-buffer", "-b", buffer, "--", body],
              ["paste-buffer", "-p", "-d", "-b", buffer, "-t", p.target],
            ],
            { generation: p.generation, create: false },
          );
        } catch (e) {
          // A list stopped at the paste leaves the buffer: remove it.
          await p.client.command(["delete-buffer", "-b", buffer], { create: false }).catch(() => undefined);
          if (isGone(e)) return;
          throw e;
        }
      },
      submit: async () => {
        await p.client.command(["send-keys", "-t", p.target, "-H", "0d"], opts(p, signal, false));
      },
      erase: async () => {
        await p.client.command(["send-keys", "-t", p.target, "-H", "7f"], opts(p, signal, false));
      },
    },
    text,
    {
      confirmMs: o.confirmMs,
      pollMs: STATE_POLL_MS,
      enterAttempts: ENTER_ATTEMPTS,
      multiline: o.multiline,
      signal,
    },
  );
}

/**
 * Serializes the nudges to each session: a nudge starts when the previous one to the same
 * name settled (either way).
 */
export class NudgeQueue {
  private readonly chains = new Map<string, Promise<void>>();

  /** Runs `fn` after every earlier nudge to `name`; settles with `fn`'s outcome. */
  run(name: string, fn: () => Promise<void>): Promise<void> {
    const prev = this.chains.get(name) ?? Promise.resolve();
    const mine = prev.then(fn);
    const tail = mine.catch(() => undefined);
    this.chains.set(name, tail);
    void tail.then(() => {
      if (this.chains.get(name) === tail) this.chains.delete(name);
    });
    return mine;
  }

  /** Forgets `name` (its session stopped). */
  forget(name: string): void {
    this.chains.delete(name);
  }

  clear(): void {
    this.chains.clear();
  }
}
