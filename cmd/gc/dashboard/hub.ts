/**
 * The dashboard's shared observations: one status snapshot per interval for all viewers
 * (not one per viewer), and one screen feed per watched session shared by its viewers.
 * Each loop runs only while someone listens.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../../../internal/base/errors.js";
import { gcBuildId } from "../../../internal/build/build-id.js";
import type { City } from "../../../internal/controller/city.js";
import { observeStatus } from "../../../internal/controller/status-observe.js";
import { type StatusJson, statusJson } from "../../../internal/controller/status-snapshot.js";
import {
  type Provider,
  supportsOutputStream,
  supportsStyledPeek,
  supportsTurns,
} from "../../../internal/runtime/provider.js";

/** A listener of a hub; returns nothing, must not throw. */
type Listener<T> = (value: T) => void;

/** The latest status snapshot and when it was taken. */
export interface Snapshot {
  readonly at: number;
  readonly json: StatusJson;
  /** `json` serialized once, shared by every response and event. */
  readonly text: string;
}

/**
 * Status snapshots of one city: {@link StatusHub.current} answers from a snapshot younger
 * than the interval or takes one (concurrent callers share it); while subscribers exist, a
 * loop takes one per interval and tells them when it changed.
 */
export class StatusHub {
  private latest: Snapshot | undefined;
  private inflight: Promise<Snapshot> | undefined;
  private readonly listeners = new Set<Listener<Snapshot>>();
  private loop: Promise<void> | undefined;
  /** Snapshots taken so far (the bench reads it). */
  taken = 0;

  private readonly city: City;
  private readonly intervalMs: number;
  private readonly signal: AbortSignal;

  constructor(city: City, intervalMs: number, signal: AbortSignal) {
    this.city = city;
    this.intervalMs = intervalMs;
    this.signal = signal;
  }

  /** The newest snapshot taken, whatever its age; `undefined` before the first. */
  get newest(): Snapshot | undefined {
    return this.latest;
  }

  /** A snapshot at most one interval old. */
  current(): Promise<Snapshot> {
    if (this.latest && Date.now() - this.latest.at < this.intervalMs) return Promise.resolve(this.latest);
    return this.refresh();
  }

  /**
   * The newest snapshot whatever its age, else a fresh one: what a new viewer is shown at
   * once, while the loop its subscription starts takes a fresh one and sends it if it differs.
   */
  latestOrCurrent(): Promise<Snapshot> {
    return this.latest ? Promise.resolve(this.latest) : this.current();
  }

  /** Takes a snapshot now (joining one in flight). */
  refresh(): Promise<Snapshot> {
    // A state.db deleted and written back by the controller (or replaced) is reopened first.
    this.inflight ??= this.city
      .checkStore()
      .catch(() => undefined)
      .then(() => observeStatus(this.city, this.signal))
      .then((o) => {
        this.taken++;
        const json = statusJson(this.city.name, o, gcBuildId());
        const snap = { at: Date.now(), json, text: JSON.stringify(json) };
        const changed = snap.text !== this.latest?.text;
        this.latest = snap;
        if (changed) for (const l of this.listeners) l(snap);
        return snap;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }

  /** Calls `l` with every changed snapshot until the returned function is called. */
  subscribe(l: Listener<Snapshot>): () => void {
    this.listeners.add(l);
    this.loop ??= this.run().finally(() => {
      this.loop = undefined;
    });
    return () => this.listeners.delete(l);
  }

  private async run(): Promise<void> {
    while (this.listeners.size > 0 && !this.signal.aborted) {
      const began = Date.now();
      await this.refresh().catch(() => undefined);
      const rest = this.intervalMs - (Date.now() - began);
      await sleep(Math.max(rest, 50), undefined, { signal: this.signal }).catch(() => undefined);
    }
  }
}

/** Where a session's screen comes from (see {@link screenSourceOf}). */
export type ScreenSource = "stream" | "styled" | "transcript" | "text";

/**
 * Where the dashboard reads a session's screen, best first: a session with structured turns
 * (ACP) has no terminal, so its screen is the rendered transcript (`peek`); else the raw
 * output stream (subprocess holders); else the styled screen (tmux `capture-pane -e`, also
 * inside docker containers and k8s pods); else the peek text. Pure.
 */
export function screenSourceOf(p: Provider): ScreenSource {
  if (supportsTurns(p)) return "transcript";
  if (supportsOutputStream(p)) return "stream";
  if (supportsStyledPeek(p)) return "styled";
  return "text";
}

/** One frame of a session's screen for xterm.js: replace the screen, or append raw output. */
export interface ScreenFrame {
  readonly kind: "reset" | "append";
  readonly data: string;
  /** Where it came from ({@link screenSourceOf}). */
  readonly source: ScreenSource;
  /** Set when the screen cannot be read (e.g. the session is not running). */
  readonly error?: string;
  /**
   * `stream`: the session's terminal size, which the raw output's cursor movements assume;
   * the viewer's terminal takes it (set on every stream frame, changed by e.g. `gc attach`).
   */
  readonly cols?: number;
  readonly rows?: number;
}

/** Screen lines read for a styled or text frame. */
const SCREEN_LINES = 200;

/**
 * The live screen of one session, shared by everyone watching it, from
 * {@link screenSourceOf} — polled every `pollMs` while watched; frames only on change.
 */
export class ScreenFeed {
  private readonly listeners = new Set<Listener<ScreenFrame>>();
  private last: ScreenFrame | undefined;
  private cursor = 0;
  private loop: Promise<void> | undefined;

  private readonly city: City;
  private readonly session: { name: string; provider: string };
  private readonly pollMs: number;
  private readonly signal: AbortSignal;
  private readonly onIdle: () => void;

  constructor(
    city: City,
    session: { name: string; provider: string },
    pollMs: number,
    signal: AbortSignal,
    onIdle: () => void,
  ) {
    this.city = city;
    this.session = session;
    this.pollMs = pollMs;
    this.signal = signal;
    this.onIdle = onIdle;
  }

  /** Sends the current screen to `l`, then every change, until the returned function is called. */
  subscribe(l: Listener<ScreenFrame>): () => void {
    this.listeners.add(l);
    if (this.last) l(this.last.kind === "reset" ? this.last : { ...this.last, kind: "reset", data: "" });
    if (this.loop === undefined) {
      this.cursor = 0;
      this.last = undefined;
      this.loop = this.run().finally(() => {
        this.loop = undefined;
        this.onIdle();
      });
    } else if (this.last?.source === "stream") {
      // A late joiner of a stream needs the whole ring again: restart from offset 0 for all.
      this.cursor = 0;
    }
    return () => this.listeners.delete(l);
  }

  private emit(f: ScreenFrame): void {
    this.last = f;
    for (const l of this.listeners) l(f);
  }

  private async run(): Promise<void> {
    while (this.listeners.size > 0 && !this.signal.aborted) {
      await this.poll().catch((e: unknown) => {
        const error = describeError(e);
        if (this.last?.error !== error) this.emit({ kind: "reset", data: "", source: "text", error });
      });
      await sleep(this.pollMs, undefined, { signal: this.signal }).catch(() => undefined);
    }
  }

  private async poll(): Promise<void> {
    const p = await this.city.providerFor(this.session.provider);
    const name = this.session.name;
    const source = screenSourceOf(p);
    if (source === "stream" && supportsOutputStream(p)) {
      const r = await p.output(name, this.cursor, { signal: this.signal });
      if (!r) throw new Error(`${name} is not running`);
      const fresh = this.cursor === 0 || r.truncated;
      const resized = this.last?.cols !== r.cols || this.last?.rows !== r.rows;
      this.cursor = r.next;
      const size = { cols: r.cols, rows: r.rows };
      if (fresh) this.emit({ kind: "reset", data: r.data, source: "stream", ...size });
      else if (r.data !== "" || resized)
        this.emit({ kind: "append", data: r.data, source: "stream", ...size });
      return;
    }
    const text =
      source === "styled" && supportsStyledPeek(p)
        ? await p.peekStyled(name, SCREEN_LINES, { signal: this.signal })
        : await p.peek(name, SCREEN_LINES, { signal: this.signal });
    const data = text.replace(/\r?\n/g, "\r\n");
    if (this.last?.data !== data || this.last.error) this.emit({ kind: "reset", data, source });
  }
}
