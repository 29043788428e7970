/**
 * The provider conformance suite against the exec provider driving the reference tmux
 * script (contrib/session-scripts/gc-session-tmux). Needs tmux and jq on PATH.
 */
import { fileURLToPath } from "node:url";
import { describe } from "vitest";
import { createTarget } from "../../conformance/targets/exec.js";
import { describeProviderConformance } from "../../conformance/vitest.js";
import { onPath } from "../support/path.js";

const SCRIPT = fileURLToPath(new URL("../../contrib/session-scripts/gc-session-tmux", import.meta.url));

describe.skipIf(!onPath("tmux") || !onPath("jq"))("exec + gc-session-tmux", () => {
  describeProviderConformance("exec:gc-session-tmux", () => createTarget(SCRIPT));
});
