/**
 * `gc peek SESSION [-n LINES]`: the session's recent screen text, read without touching the
 * program (no keys, no resize, no cursor of any observer moves).
 */
import { isGcError, SessionNotRunningError, UsageError } from "../../../internal/base/errors.js";
import { startHint } from "../../../internal/operate/target.js";
import { defineCommand, EXIT } from "../context.js";
import { printJson, withTarget } from "../operate.js";

const USAGE = `Usage: gc peek SESSION [-n LINES] [--json]

Prints the last LINES lines (default 50; 0 = all scrollback) of the session's screen.
Observing never types into, pauses or restarts the session. Exits 1 when the session is
not running (after printing its last screen when the provider kept it).`;

export const command = defineCommand({
  usage: USAGE,
  options: { lines: { type: "string", short: "n" } },
  async run(ctx, { positionals, values }) {
    if (positionals.length !== 1) throw new UsageError(`gc peek takes one session\n\n${USAGE}`);
    const lines = values.lines === undefined ? 50 : Number(values.lines);
    if (!Number.isSafeInteger(lines) || lines < 0) throw new UsageError("-n: expected a whole number ≥ 0");
    return withTarget(ctx, positionals[0]!, async (t) => {
      let text: string;
      try {
        text = await t.provider.peek(t.name, lines, { signal: ctx.signal });
      } catch (e) {
        // The city knows the session, so "not found" from the provider means "not running".
        if (isGcError(e, "GC_SESSION_NOT_FOUND"))
          throw new SessionNotRunningError(t.name, t.session.record?.state, { hint: startHint(t), cause: e });
        throw e;
      }
      // A provider may keep an ended session's last screen (tmux's dead pane, a holder's):
      // it is shown, and the exit status still says the session is not running.
      const running = await t.provider.isRunning(t.name, { signal: ctx.signal });
      const notRunning = running
        ? undefined
        : new SessionNotRunningError(t.name, t.session.record?.state, {
            hint: `${ctx.json ? "" : "its last screen is above; "}${startHint(t)}`,
          });
      if (ctx.json) {
        if (notRunning) throw notRunning;
        printJson(ctx, { session: t.name, lines, text });
      } else ctx.stdout.write(text.endsWith("\n") || text === "" ? text : `${text}\n`);
      if (notRunning) throw notRunning;
      return EXIT.ok;
    });
  },
});
