/**
 * Typing into a held session's pty as a terminal does: each input operation (a paste, a
 * nudge, keys, Ctrl-C, an attached terminal's bytes) runs after the previous one finished,
 * and a write resolves only once its bytes reached the kernel.
 */
import type { Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import type { IPty } from "@lydell/node-pty";
import { describeError } from "../../base/errors.js";
import { screenAwaitsChoice } from "../screen/classify.js";
import { OpError } from "./holder-mode.js";
import { keyBytes } from "./keys.js";
import type { HolderResults } from "./protocol.js";
import type { Screen } from "./screen.js";

/** Pause between a paste and its Enter for full-screen programs, so Enter is not read as pasted. */
const SUBMIT_DELAY_MS = 120;
/** A write into the pty that has not drained by then fails the nudge. */
const WRITE_TIMEOUT_MS = 10_000;

/** What the input side reads of its session. */
export interface PtyInputIO {
  /** The session's pty (spawned before any input arrives). */
  term(): IPty;
  readonly screen: Screen;
  /** @throws OpError `not_running` once the program has exited. */
  requireRunning(): void;
}

/** The input side of one pty session. */
export class PtyInput {
  private readonly io: PtyInputIO;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(io: PtyInputIO) {
    this.io = io;
  }

  /** Writes to the pty and resolves once the bytes reached the kernel. Serialize through {@link serialize}. */
  write(data: string | Buffer): Promise<void> {
    const sock = (this.io.term() as unknown as { _socket?: Socket })._socket;
    const p = new Promise<void>((resolve, reject) => {
      if (!sock || typeof sock.write !== "function") {
        this.io.term().write(data as string);
        resolve();
        return;
      }
      const timer = setTimeout(
        () => reject(new OpError("write_failed", `input not accepted within ${WRITE_TIMEOUT_MS} ms`)),
        WRITE_TIMEOUT_MS,
      );
      sock.write(data, (err) => {
        clearTimeout(timer);
        if (err) reject(new OpError("write_failed", describeError(err)));
        else resolve();
      });
    });
    return p;
  }

  /** Runs `fn` after every earlier input operation finished, so inputs never interleave. */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Types `text` as a terminal pastes it: inside `ESC[200~…ESC[201~` with newlines as CR when
   * the program enabled bracketed paste, else the characters as typed (a newline stays LF:
   * a line end for a line-reading program, Ctrl-J — a newline in the input, not Enter — for a
   * raw-mode one). No Enter: the caller confirms the text showed, then presses it.
   */
  paste(text: string): Promise<HolderResults["paste"]> {
    return this.serialize(async () => {
      this.io.requireRunning();
      await this.io.screen.flush();
      const body = this.io.screen.bracketedPaste ? `\x1b[200~${text.replace(/\r?\n/g, "\r")}\x1b[201~` : text;
      if (body !== "") await this.write(body);
      return { bytes: Buffer.byteLength(body) };
    });
  }

  nudge(text: string): Promise<HolderResults["nudge"]> {
    return this.serialize(async () => {
      this.io.requireRunning();
      await this.io.screen.flush();
      if (screenAwaitsChoice(this.io.screen.styledText())) {
        throw new OpError(
          "awaiting_choice",
          "a menu or dialog is waiting for a choice; typing would answer it",
        );
      }
      const paste = this.io.screen.bracketedPaste;
      const tui = paste || this.io.screen.alternateScreen;
      // Bracketed paste like a real terminal: newlines become CR inside the markers.
      const body = paste ? `\x1b[200~${text.replace(/\r?\n/g, "\r")}\x1b[201~` : text;
      if (!tui) {
        // A line-oriented program reads the same bytes either way: one write, one round trip.
        await this.write(`${body}\r`);
      } else {
        await this.write(body);
        await delay(SUBMIT_DELAY_MS);
        this.io.requireRunning();
        await this.write("\r");
      }
      return { bytes: Buffer.byteLength(body) + 1 };
    });
  }

  keys(keys: unknown): Promise<HolderResults["keys"]> {
    if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) {
      throw new OpError("bad_request", "keys must be an array of strings");
    }
    return this.serialize(async () => {
      this.io.requireRunning();
      await this.io.screen.flush();
      const modes = { applicationCursorKeys: this.io.screen.applicationCursorKeys };
      let bytes = "";
      for (const k of keys as string[]) {
        const b = keyBytes(k, modes);
        if (b === undefined) throw new OpError("invalid_key", `unknown key ${JSON.stringify(k)}`);
        bytes += b;
      }
      if (bytes !== "") await this.write(bytes);
      return { bytes: Buffer.byteLength(bytes) };
    });
  }

  /**
   * Ctrl-C typed into the pty, as a terminal (and tmux's `C-c`) does: a program in cooked mode
   * gets SIGINT from the line discipline; a full-screen agent reading raw keys (Claude Code,
   * Gemini CLI) gets its own "cancel" key — a SIGINT signal would make those exit.
   */
  async interrupt(): Promise<HolderResults["interrupt"]> {
    this.io.requireRunning();
    await this.serialize(() => this.write("\x03"));
    return {};
  }
}
