/**
 * `gc scale AGENT N`: how many instances a pool agent runs, between its
 * `min_active_sessions` and `max_active_sessions`. Recorded under `.gc/` (it outlives the
 * controller) and applied at once by a reconcile pass: new instances start, surplus ones
 * are drained and stopped (instance names stay stable: AGENT-1 … AGENT-N). A city stopped
 * by `gc stop` stays stopped: the scale applies at its next `gc start`.
 */

import { UsageError } from "../../../internal/base/errors.js";
import { didYouMean } from "../../../internal/base/suggest.js";
import { poolBounds } from "../../../internal/config/index.js";
import { findController } from "../../../internal/controller/controller.js";
import { writePoolScale } from "../../../internal/controller/pool-scale.js";
import { readStopIntent } from "../../../internal/controller/stop-intent.js";
import { reconcileNow } from "../../../internal/operate/pass.js";
import { defineCommand, EXIT } from "../context.js";
import { openCity } from "../deps.js";

const USAGE = `Usage: gc scale AGENT N

Sets how many instances the pool AGENT runs (between its min_active_sessions and
max_active_sessions) and reconciles at once. Instances are named AGENT-1 … AGENT-N. Each
instance scaled away is drained first: Ctrl-C, then up to daemon.drain_timeout to go idle,
then stopped. A city stopped by \`gc stop\` stays stopped: the new scale applies at its next
\`gc start\`.`;

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
    const [agentName, countText] = positionals;
    if (!agentName || countText === undefined || positionals.length !== 2) throw new UsageError(USAGE);
    const count = Number(countText);
    if (!Number.isSafeInteger(count) || count < 0)
      throw new UsageError(`N must be a whole number, got ${JSON.stringify(countText)}`);
    const city = await openCity(ctx, { strict: true });
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
      // A city stopped by `gc stop` (and not started since) stays stopped: a pass here would
      // start every session of it, with nothing to watch over them.
      if (readStopIntent(city.stateDir) !== undefined && !(await findController(city.stateDir)).running) {
        if (ctx.json) ctx.out(JSON.stringify({ summary: null, cityStopped: true }, null, 2));
        else ctx.out(`the city is stopped (gc stop): the new scale applies when \`gc start\` runs it`);
        return EXIT.ok;
      }
      return await reconcileNow(ctx, city);
    } finally {
      await city.close();
    }
  },
});
