/**
 * `gc start [--once] [--foreground] [--dry-run]`: reconcile the city. By default starts the
 * background controller (or reports the running one), shows progress of the first pass and
 * returns with its summary.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "../../../internal/base/errors.js";
import { buildMismatchText, gcBuildId } from "../../../internal/build/build-id.js";
import {
  controllerPaths,
  findController,
  StopWonError,
} from "../../../internal/controller/controller-find.js";
import type { LaunchedController } from "../../../internal/controller/launch.js";
import { clearStopIntent, startOriginMs, stopWins } from "../../../internal/controller/stop-intent.js";
import { closeInheritedFds } from "../../../internal/proc/fds.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";
import type { City } from "../deps.js";
import { launchController, launchEarly, takeEarlyLaunch } from "../launch.js";

/** gc's own directory (dist/cmd/gc): the controller runs its loader. */
const GC_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");

const USAGE = `Usage: gc start [--once] [--foreground] [--dry-run]

Reconciles the city: starts what is missing, restarts what drifted, stops what is no longer
wanted. Exits 0 when the pass succeeded, 1 when any session failed to start (the controller
still runs and retries it). Without flags it runs the controller in the background (pid, log and control socket
under <city>/.gc/), shows progress of the first pass and returns.
  --once        one pass in this process, no controller
  --foreground  run the controller in this process until Ctrl-C
  --dry-run     print the plan and touch nothing`;

export const command = defineCommand({
  usage: USAGE,
  options: { once: { type: "boolean" }, foreground: { type: "boolean" }, "dry-run": { type: "boolean" } },
  async run(ctx, { values, positionals }) {
    if (positionals.length > 0) throw new UsageError(`gc start takes no arguments\n\n${USAGE}`);
    const background = !values.once && !values.foreground && !values["dry-run"];
    // In the background, the controller's boot (a second Node process) is the longest step
    // before the first session starts: it is launched before this process reads the file, and
    // abandoned, leaving nothing behind, when this process refuses the file (as it would).
    const early = background ? await launchFirst(ctx) : undefined;
    let city: City;
    let heavy: Awaited<ReturnType<typeof loadHeavy>>;
    try {
      // What opening the city and running or watching a pass take (the store, the providers,
      // the reconciler) is loaded once the controller is on its way.
      heavy = await loadHeavy();
      city = await heavy.openCity(ctx, { strict: true });
    } catch (e) {
      await early?.abandon();
      throw e;
    }
    const { reportSummary, runController, runPassHere, watchControllerPass } = heavy;
    try {
      if (values["dry-run"]) return await runPassHere(ctx, city, { dryRun: true });
      // A `gc stop` invoked after this command wins; an older one is superseded by this start.
      const origin = startOriginMs(ctx.env);
      clearStopIntent(city.stateDir, origin);
      if (stopWins(city.stateDir, origin)) throw new StopWonError();
      const info = early ? undefined : await findController(city.stateDir);
      if (values.foreground) {
        if (info?.running) throw new Error(`a controller is already running for this city (pid ${info.pid})`);
        // A background controller holds none of its spawner's descriptors (nor hands them on).
        if (ctx.env.GC_CONTROLLER_CHILD === "1") closeInheritedFds(ctx.env);
        await runController(city, {
          signal: ctx.signal,
          log: (l) => ctx.out(`${new Date().toISOString()} ${l}`),
          debug:
            ctx.env.GC_LOG === "debug" ? (l) => ctx.out(`${new Date().toISOString()} debug ${l}`) : undefined,
        });
        return EXIT.ok;
      }
      if (info?.running) {
        if (!ctx.json) {
          ctx.out(`controller already running (pid ${info.pid}); reconciling now`);
          // It keeps running its own code: after an upgrade, that is not this gc's.
          const mismatch = info.status && buildMismatchText(info.status.build, gcBuildId(), info.pid);
          if (mismatch) ctx.out(mismatch);
        }
        return reportSummary(ctx, await watchControllerPass(ctx, city, true), {
          controller: { pid: info.pid },
        });
      }
      if (values.once) return await runPassHere(ctx, city, { dryRun: false });
      const launched =
        early ?? (await launchController({ cityDir: city.cityDir, file: city.loaded.file }, GC_DIR));
      const pid = await launched.ready(ctx.signal);
      if (!ctx.json) ctx.out(`controller started (pid ${pid}); log: ${controllerPaths(city.stateDir).log}`);
      // Exit 1 when a session failed to start, although the controller keeps running and
      // retrying it: scripts must see that the city is not (yet) what the file declares.
      return reportSummary(ctx, await watchControllerPass(ctx, city, false), { controller: { pid } });
    } finally {
      await city.close();
    }
  },
});

/** The modules `gc start` loads after {@link launchEarly}. */
async function loadHeavy() {
  const [controller, pass, deps] = await Promise.all([
    import("../../../internal/controller/controller.js"),
    import("../../../internal/operate/pass.js"),
    import("../deps.js"),
  ]);
  return {
    runController: controller.runController,
    reportSummary: pass.reportSummary,
    runPassHere: pass.runPassHere,
    watchControllerPass: pass.watchControllerPass,
    openCity: deps.openCity,
  };
}

/**
 * The background controller of this invocation's city, launched before the file is read: by
 * gc's loader already (launch.ts), else now; `undefined` when the file is missing, a controller
 * already runs, or the launch failed (the usual path decides, after reading the file).
 */
async function launchFirst(ctx: CommandContext): Promise<LaunchedController | undefined> {
  const flags = { cwd: ctx.cwd, cityFlag: ctx.cityFlag, configFlag: ctx.configFlag };
  const early = await takeEarlyLaunch(flags);
  return early ? early.launched : launchEarly(flags, GC_DIR);
}
