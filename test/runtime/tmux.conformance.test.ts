import { execFileSync } from "node:child_process";
import { describe } from "vitest";
import { createTarget } from "../../conformance/targets/tmux.js";
import { describeProviderConformance } from "../../conformance/vitest.js";

function hasTmux(): boolean {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

if (hasTmux()) describeProviderConformance("tmux", createTarget);
else describe.skip("tmux: provider conformance (no tmux binary)", () => undefined);
