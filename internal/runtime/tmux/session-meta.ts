/**
 * Metadata of the city's tmux sessions: each key a session user option `@gc_m_<hex key>`
 * holding the hex-encoded value, so tmux never parses one; it lives as long as the session.
 * Used by the tmux provider (provider.ts).
 */
import { SessionNotFoundError } from "../../base/errors.js";
import { validateMetaKey, validateSessionName } from "../../base/names.js";
import type { OpOptions } from "../provider.js";
import type { CityServer } from "./city-server.js";
import { fromHex, sessionTarget, toHex } from "./quote.js";
import { isAbsent, isStaleTarget } from "./sessions.js";

/** Per-session metadata of the city's tmux sessions. */
export class SessionMeta {
  private readonly srv: CityServer;

  constructor(srv: CityServer) {
    this.srv = srv;
  }

  /**
   * Stores `value` (any UTF-8) as the session user option `@gc_m_<hex key>`, hex-encoded,
   * so no value is ever parsed by tmux. Lives as long as the session.
   * @throws SessionNotFoundError when missing.
   */
  async setMeta(name: string, key: string, value: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.setOption(name, `@gc_m_${toHex(key)}`, `v${toHex(value)}`, opts.signal);
  }

  /** The stored value or `undefined`; one tmux command. @throws SessionNotFoundError when missing. */
  async getMeta(name: string, key: string, opts: OpOptions = {}): Promise<string | undefined> {
    validateSessionName(name);
    validateMetaKey(key);
    let lines: string[];
    try {
      lines = await this.srv.tmux(
        [
          "list-panes",
          "-s",
          "-t",
          sessionTarget(name),
          "-F",
          `#{@gc_city}|#{@gc_name}|#{@gc_m_${toHex(key)}}`,
        ],
        { signal: opts.signal, retry: true },
      );
    } catch (e) {
      if (isAbsent(e)) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw e;
    }
    const [city, owner, stored] = (lines[0] ?? "").split("|");
    if (city !== this.srv.tag || owner !== name) throw new SessionNotFoundError(name);
    if (!stored) return undefined;
    return stored.startsWith("v") ? (fromHex(stored.slice(1)) ?? undefined) : undefined;
  }

  /** Removes a key; resolves when it was not set. @throws SessionNotFoundError when missing. */
  async removeMeta(name: string, key: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    validateMetaKey(key);
    await this.setOption(name, `@gc_m_${toHex(key)}`, undefined, opts.signal);
  }

  private async setOption(name: string, option: string, value: string | undefined, signal?: AbortSignal) {
    const argv = (id: string) =>
      value === undefined ? ["set-option", "-u", "-t", id, option] : ["set-option", "-t", id, option, value];
    const known = this.srv.remembered(name);
    if (known) {
      try {
        await this.srv.tmux(argv(known.id), { signal, generation: known.generation });
        return;
      } catch (e) {
        if (!isStaleTarget(e)) throw e;
        this.srv.ids.delete(name);
      }
    }
    const s = await this.srv.find(name, signal);
    if (!s) throw new SessionNotFoundError(name);
    try {
      await this.srv.tmux(argv(s.id), { signal, generation: this.srv.client.generation });
    } catch (e) {
      if (isAbsent(e) || isStaleTarget(e)) throw new SessionNotFoundError(name, undefined, { cause: e });
      throw e;
    }
  }
}
