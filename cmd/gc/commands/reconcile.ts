/**
 * `gc reconcile [--dry-run]`: one pass now. With a running controller it pokes it and
 * streams that pass; otherwise it runs the pass in this process.
 */
import { UsageError } from "../../../internal/base/errors.js";
import { reconcileNow, runPassHere } from "../../../internal/operate/pass.js";
import { defineCommand } from "../context.js";
import { openCity } from "../deps.js";

const USAGE = `Usage: gc reconcile [--dry-run] [--allow-mass-stop]

Runs one reconcile pass now (through the controller when it runs). --dry-run prints the
plan and touches nothing. --allow-mass-stop applies a city file that the mass-stop guard
refused (it would stop more than daemon.mass_stop_percent of the running sessions).`;

export const command = defineCommand({
  usage: USAGE,
  options: { "dry-run": { type: "boolean" }, "allow-mass-stop": { type: "boolean" } },
  async run(ctx, { values, positionals }) {
    if (positionals.length > 0) throw new UsageError(`gc reconcile takes no arguments\n\n${USAGE}`);
    const city = await openCity(ctx, { strict: true });
    try {
      if (values["dry-run"]) return await runPassHere(ctx, city, { dryRun: true });
      return await reconcileNow(ctx, city, { allowMassStop: values["allow-mass-stop"] === true });
    } finally {
      await city.close();
    }
  },
});
