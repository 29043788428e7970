/**
 * `gc conformance auto`: the auto router over tmux, subprocess and the exec reference script
 * (contrib/session-scripts/gc-session-tmux), each case on the next backend in turn.
 */
import type { ConformanceTarget } from "../harness.js";
import { createRoutingTarget, referenceScript } from "../routing-target.js";
import { createTarget as execTarget } from "./exec.js";
import { createTarget as subprocessTarget } from "./subprocess.js";
import { createTarget as tmuxTarget } from "./tmux.js";

/** An auto target (takes no argument). */
export function createTarget(): Promise<ConformanceTarget> {
  return createRoutingTarget(
    "auto",
    [tmuxTarget, subprocessTarget, () => execTarget(referenceScript())],
    (specs) => ({ kind: "auto", default: specs[0] as string }),
    `au.${process.pid}.`,
  );
}
