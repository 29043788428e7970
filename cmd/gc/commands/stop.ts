/**
 * `gc stop [SESSION...]`: without names, stops the controller and every session of the city,
 * shuts down the city's backend (e.g. its tmux server) and verifies by census that nothing of
 * the city is left. With names, stops those sessions and holds them down until
 * `gc session reset|restart NAME`.
 */

import { describeError, PartialObservationError } from "../../../internal/base/errors.js";
import { findController, stopController } from "../../../internal/controller/controller.js";
import { type ResolvedSession, resolveSession } from "../../../internal/controller/sessions.js";
import { writeStopIntent } from "../../../internal/controller/stop-intent.js";
import { holdDown } from "../../../internal/operate/actions.js";
import { awaitEmptyCensus } from "../../../internal/proc/census.js";
import { walkTo } from "../../../internal/reconcile/walk.js";
import { isRouter, supportsCensus, supportsShutdown } from "../../../internal/runtime/provider.js";
import type { SessionStore } from "../../../internal/session/store.js";
import { defineCommand, EXIT } from "../context.js";
import { type City, openCity } from "../deps.js";

const USAGE = `Usage: gc stop [SESSION...]

Without names: stops the controller and every session of the city, then checks that nothing
of the city is left running. With names: stops those sessions and keeps them down (the
controller leaves them alone) until \`gc session reset NAME\` or \`gc session restart NAME\`.`;

async function providersInUse(city: City, store: SessionStore | undefined): Promise<string[]> {
  let desired: string[] = [];
  try {
    desired = (await city.loadDesired()).map((d) => d.provider);
  } catch {
    // an invalid file must not keep `gc stop` from stopping what runs
  }
  const records = store ? (await store.list()).map((r) => r.provider) : [];
  // Every provider the city has used, also one it no longer declares (a switch from tmux to
  // subprocess leaves the tmux server to stop).
  let used: readonly string[] = [];
  try {
    used = city.usedProviders();
  } catch {
    // an unreadable identity: what the file and the store name is still stopped
  }
  return [...new Set([city.defaultProvider, ...desired, ...records, ...used])];
}

export const command = defineCommand({
  usage: USAGE,
  options: {},
  async run(ctx, { positionals }) {
    const json = ctx.json;
    const city = await openCity(ctx);
    try {
      // The store is bookkeeping: when it cannot be opened, the city is still stopped from
      // the runtime's own ownership tags (named sessions are stopped, but cannot be held).
      let storeProblem: string | undefined;
      const store = await city.store().catch((e: unknown) => {
        storeProblem = describeError(e);
        ctx.err(`gc: the session store is unusable, stopping from runtime tags only: ${storeProblem}`);
        return undefined;
      });
      if (positionals.length > 0) {
        if (!store) {
          for (const name of positionals) {
            const s = await resolveSession(city, name, ctx.signal);
            await (await city.providerFor(s.provider)).stop(s.name, { signal: ctx.signal });
            ctx.out(`stopped ${s.name} (not held: the store is unusable)`);
          }
          return EXIT.ok;
        }
        const held: SessionStore = store;
        const resolved: ResolvedSession[] = [];
        for (const name of positionals) resolved.push(await resolveSession(city, name, ctx.signal));
        for (const s of resolved) {
          await holdDown(city, held, s, ctx.signal);
          if (!json)
            ctx.out(
              `stopped ${s.name} (held down; \`gc session reset ${s.name}\` lets the controller start it again)`,
            );
        }
        if (json) ctx.out(JSON.stringify({ stopped: resolved.map((s) => s.name) }));
        return EXIT.ok;
      }
      // Recorded before looking for the controller: one that is still coming up finds it.
      writeStopIntent(city.stateDir);
      const ctl = await findController(city.stateDir);
      if (ctl.running && ctl.pid !== undefined) {
        await stopController(city.stateDir, ctl.pid);
        if (!json) ctx.out(`controller ${ctl.pid} stopped`);
      }
      const stopped: string[] = [];
      const failures: string[] = [];
      const killedOrphans: string[] = [];
      for (const pName of await providersInUse(city, store)) {
        const provider = await city.providerFor(pName);
        // Every process of the backend before the stop, tagged or not: followed to the end.
        const before = supportsCensus(provider) ? await provider.census() : [];
        let names: string[];
        let partial = false;
        try {
          names = await provider.listRunning("", { signal: ctx.signal });
        } catch (e) {
          failures.push(`cannot list ${pName}: ${describeError(e)}`);
          // A router with a backend down still stops what its healthy backends run.
          if (!(e instanceof PartialObservationError)) continue;
          names = [...e.running];
          partial = true;
        }
        await Promise.all(
          names.map(async (name) => {
            try {
              await provider.stop(name, { signal: ctx.signal });
              stopped.push(name);
              if (store && (await store.get(name)))
                await walkTo(store, name, "stopped", "city stopped (gc stop)", { pending: null });
            } catch (e) {
              failures.push(`${name}: ${describeError(e)}`);
            }
          }),
        );
        // Records of sessions the listing did not show are stopped too, unless part of the
        // listing failed: such a session may still run on the backend that was not seen.
        const unseen = (store ? await store.list() : []).filter(
          (rec) => rec.provider === pName && rec.state !== "stopped" && !names.includes(rec.name),
        );
        if (partial && unseen.length > 0) {
          failures.push(
            `not recorded stopped (a backend of ${pName} could not be listed; they may still run): ${unseen
              .map((r) => r.name)
              .sort()
              .join(", ")}`,
          );
        } else if (store) {
          for (const rec of unseen) {
            await walkTo(store, rec.name, "stopped", "city stopped (gc stop)", { pending: null }).catch(
              () => undefined,
            );
          }
        }
        if (supportsShutdown(provider)) {
          await provider
            .shutdown({ signal: ctx.signal })
            .catch((e: unknown) => failures.push(`${pName} shutdown: ${describeError(e)}`));
        }
        if (supportsCensus(provider)) {
          // The census reads the process table, so a backend that is still exiting is waited
          // for (and killed if it lingers), never mistaken for a failure or for "clean".
          // Orphans (processes that outlived their backend, found by the city's tag too) are
          // killed and said so; the census is "nothing left" only once they are gone.
          const left = await awaitEmptyCensus(() => provider.census(), {
            before,
            signal: ctx.signal,
            onKill: (k) => {
              const procs = k.map((e) => `pid ${e.pid} (${e.comm})`);
              killedOrphans.push(...procs);
              if (!json)
                ctx.out(
                  `census: killing ${k.length} leftover process${k.length === 1 ? "" : "es"} of ${pName}: ${procs.join(", ")}`,
                );
            },
          });
          if (left.length > 0)
            failures.push(`${pName} still runs: ${left.map((e) => `pid ${e.pid} (${e.comm})`).join(", ")}`);
        }
        // A router's census covers its local backends only: what the others run is listed.
        if (!supportsCensus(provider) || isRouter(provider)) {
          const left = await provider
            .listRunning("", { signal: ctx.signal })
            .catch((e: unknown) => [`(unobservable: ${describeError(e)})`]);
          if (left.length > 0) failures.push(`${pName} still runs: ${left.join(", ")}`);
        }
      }
      if (json) {
        ctx.out(
          JSON.stringify(
            {
              city: city.name,
              controllerStopped: ctl.running,
              stopped: stopped.sort(),
              killedLeftovers: killedOrphans,
              problems: failures,
            },
            null,
            2,
          ),
        );
      } else {
        ctx.out(
          `stopped ${stopped.length} session${stopped.length === 1 ? "" : "s"}${stopped.length ? `: ${stopped.sort().join(", ")}` : ""}`,
        );
        for (const f of failures) ctx.err(f);
        if (failures.length === 0) ctx.out(`census: nothing of city ${city.name} is left running`);
      }
      return failures.length > 0 ? EXIT.failed : EXIT.ok;
    } finally {
      await city.close();
    }
  },
});
