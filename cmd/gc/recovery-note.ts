/**
 * The one-line note every command prints while the city's state.db has been recovered and
 * not yet reviewed (`gc session reset --all`). Loads only the recovery marker's reader, so
 * commands that skip opening the city (`gc status` beside a controller) say it too.
 */
import { readRecovery } from "../../internal/session/recovery.js";
import type { CommandContext } from "./context.js";

/** State dirs whose recovery this process has already reported (once per command). */
const announced = new Set<string>();

/** Prints the recovery note for the city whose state dir is `stateDir`, once per process. */
export function announceRecovery(ctx: CommandContext, stateDir: string): void {
  const recovered = readRecovery(stateDir);
  if (!recovered || announced.has(stateDir)) return;
  announced.add(stateDir);
  ctx.err(
    `gc: state.db was recovered at ${recovered.at} (old file: ${recovered.movedTo}); sessions that are not running stay down until \`gc session reset --all\``,
  );
}
