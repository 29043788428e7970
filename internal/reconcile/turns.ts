/**
 * Recording structured turns (providers with {@link TurnProvider}, e.g. ACP) as session
 * events: one `turn.finished` event per finished turn with its prompt, reply, stop reason,
 * tool calls and error (the store redacts secrets before anything reaches disk). The
 * recorded position lives with the session itself (provider metadata
 * {@link TURN_CURSOR_KEY}), so a new agent process starts over and a controller that was
 * killed mid-turn records the turn once it is back. `gc run` and the controller both call
 * {@link recordTurns}; the session lock keeps them from recording the same turn twice.
 */

import type { Provider, TurnProvider, TurnRecord } from "../runtime/provider.js";
import type { SessionStore } from "../session/store.js";

/** Provider metadata key holding the id of the last recorded turn. */
export const TURN_CURSOR_KEY = "gc.turns.recorded";

/** Event type of a finished turn. */
export const TURN_EVENT = "turn.finished";

/** The event payload of a turn. Pure. */
export function turnPayload(t: TurnRecord) {
  return {
    turn: t.id,
    prompt: t.prompt,
    reply: t.reply,
    ...(t.stopReason ? { stopReason: t.stopReason } : {}),
    ...(t.error ? { error: t.error } : {}),
    toolCalls: t.toolCalls.map((c) => ({ id: c.id, title: c.title, kind: c.kind, status: c.status })),
    ...(t.startedAt !== undefined && t.endedAt !== undefined ? { durationMs: t.endedAt - t.startedAt } : {}),
  };
}

/**
 * Appends a `turn.finished` event for every finished turn of `session` not yet recorded,
 * in order, advancing the cursor after each. The caller holds the session lock.
 * @returns the turns recorded now.
 */
export async function recordTurns(
  provider: Provider & TurnProvider,
  store: SessionStore,
  session: string,
  signal?: AbortSignal,
): Promise<TurnRecord[]> {
  const cursor = Number((await provider.getMeta(session, TURN_CURSOR_KEY, { signal })) ?? "0") || 0;
  const out: TurnRecord[] = [];
  for (const t of await provider.turns(session, cursor, { signal })) {
    if (t.state !== "done") break; // later turns wait for this one: keep the order
    await store.appendEvent({
      session,
      type: TURN_EVENT,
      payload: turnPayload(t),
      ...(t.endedAt ? { at: t.endedAt } : {}),
    });
    await provider.setMeta(session, TURN_CURSOR_KEY, String(t.id), { signal });
    out.push(t);
  }
  return out;
}
