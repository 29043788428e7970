/**
 * Test support for the tmux control channels of the docker and k8s providers: a script that
 * kills a channel's tmux client where it runs, and the outcome of an operation that a lost
 * channel may fail.
 */
import { ProviderError } from "../../internal/base/errors.js";

/**
 * `sh -c KILL_CHANNEL gc-kill PATTERN`: SIGKILLs every process whose command line matches the
 * shell pattern `*PATTERN*-C attach-session*` (a channel's `tmux … -C attach-session …`;
 * PATTERN "" for any), printing `killed` for each.
 */
export const KILL_CHANNEL = [
  "for d in /proc/[0-9]*; do",
  "  c=$(tr '\\0' ' ' < \"$d/cmdline\" 2>/dev/null) || continue",
  '  case "$c" in *"$1"*"-C attach-session"*) kill -9 "${d#/proc/}" && echo killed;; esac',
  "done",
].join("\n");

/** "ok", or "provider-error" for a clean ProviderError (anything else fails the test). */
export async function settle(op: Promise<unknown>): Promise<string> {
  try {
    await op;
    return "ok";
  } catch (e) {
    if (e instanceof ProviderError) return "provider-error";
    throw e;
  }
}
