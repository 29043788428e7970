/**
 * `gc attach SESSION`: hands this terminal to the session until you detach (tmux: C-b d).
 */
import { UsageError } from "../../../internal/base/errors.js";
import { requireRunning } from "../../../internal/operate/target.js";
import { sessionCapabilities } from "../../../internal/runtime/provider.js";
import { defineCommand, EXIT } from "../context.js";
import { withTarget } from "../operate.js";

const USAGE = `Usage: gc attach SESSION

Attaches this terminal to the session; returns when you detach. Needs a terminal and a
provider that can attach (tmux, subprocess, docker, k8s).`;

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
    if (positionals.length !== 1) throw new UsageError(`gc attach takes one session\n\n${USAGE}`);
    return withTarget(ctx, positionals[0]!, async (t) => {
      await requireRunning(t, ctx.signal);
      if (!(await sessionCapabilities(t.provider, t.name, { signal: ctx.signal })).attach) {
        ctx.err(`gc: provider ${t.provider.name} cannot attach a terminal; use \`gc peek ${t.name}\``);
        return EXIT.failed;
      }
      if (!process.stdin.isTTY) {
        ctx.err("gc: attach needs a terminal (stdin is not a TTY)");
        return EXIT.failed;
      }
      await t.provider.attach(t.name, { signal: ctx.signal });
      return EXIT.ok;
    });
  },
});
