/**
 * `look` of the subprocess provider: the screens (with their interactions) of running
 * sessions, read through one status call per session, and a screen read only when the holder
 * reports output since the session's screen was last read — a quiet session costs one
 * status call. The cache follows holder incarnations and forgets sessions no longer running.
 */
import { nameProblem } from "../../base/names.js";
import { OP_TIMEOUT_MS } from "../../proc/run.js";
import type { PendingInteraction, SessionLook } from "../provider.js";
import { findInteraction } from "../screen/classify.js";
import type { SessionCalls } from "./session-calls.js";

/** The `look` reads of one provider. Safe for concurrent use. */
export class ScreenLooks {
  private readonly calls: SessionCalls;
  /**
   * What `look` last read per session: the screen, its interaction, when the read was asked
   * for, and the holder incarnation it came from (valid while the holder reports no output since).
   */
  private readonly screenCache = new Map<
    string,
    {
      readonly incarnation: string;
      readonly askedAt: number;
      readonly screen: string;
      readonly found: PendingInteraction | undefined;
    }
  >();

  constructor(calls: SessionCalls) {
    this.calls = calls;
  }

  /**
   * The screens (with their interactions) of the running sessions among `names` (invalid
   * names are skipped), as `SubprocessProvider.look` (provider.ts) describes.
   */
  async look(names: readonly string[], signal?: AbortSignal): Promise<Map<string, SessionLook>> {
    const out = new Map<string, SessionLook>();
    const live = new Set<string>();
    await Promise.all(
      names.map(async (name) => {
        if (nameProblem(name) !== undefined) return;
        const st = await this.calls.statusOf(name, signal);
        if (!st.ok || !st.value.running) return;
        live.add(name);
        const incarnation = `${st.value.holderPid}:${st.value.startedAt}`;
        const lastActivity = new Date(st.value.lastActivity);
        const hit = this.screenCache.get(name);
        if (hit && hit.incarnation === incarnation && hit.askedAt > st.value.lastActivity) {
          out.set(name, { screen: hit.screen, interaction: hit.found, lastActivity });
          return;
        }
        const askedAt = Date.now();
        const r = await this.calls.call(name, { op: "screen" }, OP_TIMEOUT_MS, signal);
        if (!r.ok) return;
        const found = findInteraction(r.value.styled ?? r.value.text);
        this.screenCache.set(name, { incarnation, askedAt, screen: r.value.text, found });
        out.set(name, { screen: r.value.text, interaction: found, lastActivity });
      }),
    );
    for (const n of names) if (!live.has(n)) this.screenCache.delete(n);
    return out;
  }
}
