/**
 * `gc scale AGENT N`: how many instances a pool agent runs, between its
 * `min_active_sessions` and `max_active_sessions`. Recorded under `.gc/` (it outlives the
 * controller) and applied at once by a reconcile pass: new instances start, surplus ones
 * are stopped (instance names stay stable: AGENT-1 … AGENT-N).
 */
import { parseArgs } from "node:util";
import { poolBounds } from "../../../internal/config/index.js";
import { didYouMean } from "../../../internal/config/suggest.js";
import { writePoolScale } from "../../../internal/controller/pool-scale.js";
import { UsageError } from "../../../internal/runtime/errors.js";
import type { Command } from "../context.js";
import { openCity } from "../deps.js";
import { reconcileNow } from "../pass.js";

const USAGE = `Usage: gc scale AGENT N

Sets how many instances the pool AGENT runs (between its min_active_sessions and
max_active_sessions) and reconciles at once. Instances are named AGENT-1 … AGENT-N.`;

export const command: Command = {
  name: "scale",
  summary: "set how many instances a pool runs",
  usage: USAGE,
  async run(ctx, args) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    const [agentName, countText] = positionals;
    if (!agentName || countText === undefined || positionals.length !== 2) throw new UsageError(USAGE);
    const count = Number(countText);
    if (!Number.isSafeInteger(count) || count < 0)
      throw new UsageError(`N must be a whole number, got ${JSON.stringify(countText)}`);
    const city = await openCity(ctx);
    try {
      const agents = city.loaded.config.agents;
      const agent = agents.find((a) => a.name === agentName);
      if (!agent) {
        throw new UsageError(
          `no agent ${JSON.stringify(agentName)} in ${city.loaded.file}${didYouMean(
            agentName,
            agents.map((a) => a.name),
          )}`,
        );
      }
      const bounds = poolBounds(agent);
      if (!bounds) {
        throw new UsageError(
          `${agentName} is not a pool (give it min_active_sessions / max_active_sessions)`,
        );
      }
      if (count < bounds.min || count > bounds.max) {
        throw new UsageError(
          `${agentName} runs between ${bounds.min} and ${bounds.max} instances; ${count} is outside`,
        );
      }
      await writePoolScale(city.stateDir, agentName, count);
      if (!ctx.json)
        ctx.out(
          `${agentName}: ${count} instance${count === 1 ? "" : "s"} (bounds ${bounds.min}…${bounds.max})`,
        );
      return await reconcileNow(ctx, city);
    } finally {
      await city.close();
    }
  },
};
