/**
 * Settings of the tmux provider (`session.tmux` in the city file) with their defaults, and
 * the socket naming rule (one server per city, never the user's default server).
 */
import { ProviderError } from "../../base/errors.js";
import type { TmuxSocket } from "./server.js";

/** Tunables of the tmux provider; every duration is in milliseconds. */
export interface TmuxSettings {
  /** Socket name (`-L`), or a socket path when it contains `/` (`-S`). Default `gc-<city>-<city id>` (see identity.ts). */
  readonly socket?: string | undefined;
  /** tmux binary. Default `tmux`. */
  readonly tmuxPath?: string | undefined;
  /** Size of new sessions' windows. Default 200 × 50. */
  readonly cols?: number | undefined;
  readonly rows?: number | undefined;
  /** Scrollback lines kept per pane. Default 10 000. */
  readonly historyLimit?: number | undefined;
  /** Deadline for one tmux command. Default 10 s. */
  readonly commandTimeoutMs?: number | undefined;
  /** How long start waits for `ready_prompt_prefix` before going on anyway. Default 60 s. */
  readonly readyTimeoutMs?: number | undefined;
  /** How long start watches for startup dialogs when `emits_permission_warning` is set. Default 10 s. */
  readonly dialogTimeoutMs?: number | undefined;
  /** `nudge` first waits up to this long for the session to be idle (0 = never). Default 10 s. */
  readonly nudgeIdleWaitMs?: number | undefined;
  /** How long one Enter press may take to show on screen before it is retried. Default 1.5 s. */
  readonly nudgeConfirmMs?: number | undefined;
  /** A screen unchanged this long (with the prompt, if known) is idle. Default 600 ms. */
  readonly idleQuietMs?: number | undefined;
}

/** Settings with every default filled in. */
export type ResolvedTmuxSettings = {
  readonly [K in Exclude<keyof TmuxSettings, "socket">]-?: NonNullable<TmuxSettings[K]>;
} & {
  readonly socket: TmuxSocket;
  /** The socket as configured (name or path), given to hooks as `GC_TMUX_SOCKET`. */
  readonly socketLabel: string;
};

const DEFAULTS = {
  tmuxPath: "tmux",
  cols: 200,
  rows: 50,
  historyLimit: 10_000,
  commandTimeoutMs: 10_000,
  readyTimeoutMs: 60_000,
  dialogTimeoutMs: 10_000,
  nudgeIdleWaitMs: 10_000,
  nudgeConfirmMs: 1_500,
  idleQuietMs: 600,
} as const;

import { defaultSocketName } from "../identity.js";

export { defaultSocketName };

/**
 * Validates raw settings from the city file and fills in defaults.
 * @throws ProviderError naming the bad key.
 */
export function resolveSettings(
  city: string,
  raw: Readonly<Record<string, unknown>> | undefined,
  cityId?: string,
): ResolvedTmuxSettings {
  const s = raw ?? {};
  const known = new Set([...Object.keys(DEFAULTS), "socket"]);
  for (const k of Object.keys(s)) {
    if (!known.has(k)) throw new ProviderError("tmux", `unknown setting ${JSON.stringify(k)}`);
  }
  const num = (k: keyof typeof DEFAULTS, min: number): number => {
    const v = s[k];
    if (v === undefined) return DEFAULTS[k] as number;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min) {
      throw new ProviderError("tmux", `setting ${k} must be an integer ≥ ${min}`);
    }
    return v;
  };
  const str = (k: "socket" | "tmuxPath"): string | undefined => {
    const v = s[k];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v === "" || v.includes("\0")) {
      throw new ProviderError("tmux", `setting ${k} must be a non-empty string`);
    }
    return v;
  };
  const sock = str("socket") ?? defaultSocketName(city, cityId);
  if (!sock.includes("/") && !/^[A-Za-z0-9._-]+$/.test(sock)) {
    throw new ProviderError("tmux", "setting socket must be a plain name ([A-Za-z0-9._-]) or a path");
  }
  return {
    socket: sock.includes("/") ? { path: sock } : { name: sock },
    socketLabel: sock,
    tmuxPath: str("tmuxPath") ?? DEFAULTS.tmuxPath,
    cols: num("cols", 20),
    rows: num("rows", 5),
    historyLimit: num("historyLimit", 100),
    commandTimeoutMs: num("commandTimeoutMs", 100),
    readyTimeoutMs: num("readyTimeoutMs", 0),
    dialogTimeoutMs: num("dialogTimeoutMs", 0),
    nudgeIdleWaitMs: num("nudgeIdleWaitMs", 0),
    nudgeConfirmMs: num("nudgeConfirmMs", 100),
    idleQuietMs: num("idleQuietMs", 0),
  };
}
