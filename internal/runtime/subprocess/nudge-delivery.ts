/**
 * Nudge delivery of the subprocess provider: the text is pasted into the session's pty and
 * submitted with Enter, confirmed on screen by the shared delivery rule (../screen/delivery.ts
 * `deliverText`, as tmux does); a session without a screen model (an ACP session, or a
 * holder of an earlier gc) takes the holder's `nudge` op instead.
 */
import { NudgeNotDeliveredError, ProviderError } from "../../base/errors.js";
import { OP_TIMEOUT_MS } from "../../proc/run.js";
import { deliverText, type TerminalState } from "../screen/delivery.js";
import type { HolderResults } from "./protocol.js";
import type { CallResult, SessionCalls } from "./session-calls.js";

/** How long one Enter may take to show on screen before it counts as swallowed (as tmux's default). */
const NUDGE_CONFIRM_MS = 1_500;
/** Screen poll interval while a nudge is confirmed. */
const NUDGE_POLL_MS = 25;

/**
 * Delivers `text` to session `name`. Resolves for a missing or exited session, unless
 * `strict` (the start's initial nudge): then SessionDiedDuringStartupError.
 * @throws NudgeNotDeliveredError when a menu or dialog waits for a choice, or the program did
 * not visibly take the text.
 */
export async function deliverNudge(
  calls: SessionCalls,
  name: string,
  text: string,
  signal: AbortSignal | undefined,
  strict: boolean,
  multiline?: "paste" | "lines" | undefined,
): Promise<void> {
  const wrap = (e: unknown): unknown =>
    e instanceof ProviderError ? new NudgeNotDeliveredError(name, e.message, { cause: e, sent: true }) : e;
  const first = await calls.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal).catch((e: unknown) => {
    throw e instanceof ProviderError ? new NudgeNotDeliveredError(name, e.message, { cause: e }) : e;
  });
  if (!first.ok) {
    if (strict) await calls.requireAlive(name, signal);
    return;
  }
  if (first.value.rows === undefined) {
    // An ACP session (the protocol confirms the prompt) or a holder of an earlier gc.
    let r: CallResult<HolderResults["nudge"]>;
    try {
      r = await calls.call(name, { op: "nudge", text }, OP_TIMEOUT_MS, signal);
    } catch (e) {
      throw wrap(e);
    }
    if (!r.ok && strict) await calls.requireAlive(name, signal);
    return;
  }
  const state = async (): Promise<TerminalState | undefined> => {
    const r = await calls.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal);
    if (!r.ok || r.value.rows === undefined) return undefined;
    const v = r.value;
    return {
      rows: v.rows!,
      cursorX: v.cursorX ?? 0,
      cursorY: v.cursorY ?? 0,
      history: v.history,
      styled: v.styled,
    };
  };
  let gone = false;
  try {
    await deliverText(
      name,
      {
        state,
        paste: async (body) => {
          gone = !(await calls.call(name, { op: "paste", text: body }, OP_TIMEOUT_MS, signal)).ok;
        },
        submit: async () => {
          if (!gone) await calls.call(name, { op: "keys", keys: ["Enter"] }, OP_TIMEOUT_MS, signal);
        },
        erase: async () => {
          if (!gone) await calls.call(name, { op: "keys", keys: ["BSpace"] }, OP_TIMEOUT_MS, signal);
        },
      },
      text,
      { confirmMs: NUDGE_CONFIRM_MS, pollMs: NUDGE_POLL_MS, multiline, signal },
    );
  } catch (e) {
    throw wrap(e);
  }
}
