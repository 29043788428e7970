/** Test support: whether a program is installed (tests needing tmux, jq, screen skip without it). */
import { execFileSync } from "node:child_process";

/** True when `bin` is on PATH (`command -v`, with `bin` passed as an argument, never spliced into the script). */
export function onPath(bin: string): boolean {
  try {
    execFileSync("sh", ["-c", 'command -v "$1"', "sh", bin], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
