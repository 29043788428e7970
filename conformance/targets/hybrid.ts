/**
 * `gc conformance hybrid`: the hybrid router with tmux as the local side and subprocess as
 * the remote one; `remote_match` sends every session whose counter is odd to the remote side.
 */
import type { ConformanceTarget } from "../harness.js";
import { createRoutingTarget } from "../routing-target.js";
import { createTarget as subprocessTarget } from "./subprocess.js";
import { createTarget as tmuxTarget } from "./tmux.js";

/** A hybrid target (takes no argument). */
export function createTarget(): Promise<ConformanceTarget> {
  const prefix = `hy.${process.pid}.`;
  return createRoutingTarget(
    "hybrid",
    [tmuxTarget, subprocessTarget],
    (specs) => ({
      kind: "hybrid",
      local: specs[0] as string,
      remote: specs[1] as string,
      // Names are <prefix><4-digit counter><stem>.
      remoteMatch: `^hy\\.[0-9]+\\.[0-9]{3}[13579]`,
    }),
    prefix,
  );
}
