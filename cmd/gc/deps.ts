/**
 * The composition root: the only place that picks implementations. It opens the city with
 * the SQLite store and the providers of this build's registry (internal/runtime/registry/index.ts,
 * built lazily, so `gc peek` on tmux never loads another backend); everything else lives in
 * internal/controller.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { gcBuildId } from "../../internal/build/build-id.js";
import { type City, openCity as openCityWith } from "../../internal/controller/city.js";
import { findController, pokeController } from "../../internal/controller/controller.js";
import { createProviderFromSpec } from "../../internal/runtime/registry/index.js";
import { describeRecovery } from "../../internal/session/recovery.js";
import { openSqliteStore, STATE_DB_FILE } from "../../internal/session/sqlite-store.js";
import type { CommandContext } from "./context.js";
import { announceRecovery } from "./recovery-note.js";

export type { City } from "../../internal/controller/city.js";

/**
 * Finds and loads the city for this invocation (`--city`, `--config`, `GC_CITY`, or the
 * nearest directory upward holding city.yaml). While the file is invalid, or unresolvable
 * in this shell (a `${VAR}` it lacks), observing, operating and stopping keep working on
 * the last good config and say so in one line on stderr; `strict` commands (those that
 * apply the file: start, reconcile, scale) refuse instead. `readOnly` commands (status) only
 * read the city: their providers leave writers' housekeeping alone (runtime/factory.ts).
 * @throws ConfigError when the file is missing or invalid (and strict, or no last good copy).
 */
export async function openCity(
  ctx: CommandContext,
  opts: { strict?: boolean; readOnly?: boolean } = {},
): Promise<City> {
  const city = await openCityWith(
    {
      cwd: ctx.cwd,
      env: ctx.env,
      cityDir: ctx.cityFlag ? resolve(ctx.cwd, ctx.cityFlag) : undefined,
      configFile: ctx.configFlag ? resolve(ctx.cwd, ctx.configFlag) : undefined,
      allowInvalid: opts.strict !== true,
      // Only commands that apply the file (and so the controller) keep its last good copy and
      // create the fingerprint key.
      applies: opts.strict === true,
      // A command that only reads (status) builds its providers read-only (runtime/factory.ts).
      readOnly: opts.readOnly === true,
      build: gcBuildId(),
    },
    {
      createProvider: createProviderFromSpec,
      openStore: async (cityDir) => {
        const strict = opts.strict === true;
        // A missing database beside a running controller is the controller's to write back
        // from its open copy: asked to now (a pass), not replaced by an empty file here that
        // the write-back would then move aside with this command's writes.
        let create = true;
        if (!strict && !existsSync(join(cityDir, ".gc", STATE_DB_FILE))) {
          const stateDir = join(cityDir, ".gc");
          create = !(await findController(stateDir)).running;
          if (!create) await pokeController(stateDir);
        }
        // Only the commands that apply the file (the controller among them) move a damaged
        // database aside and start a new one; any other command refuses to use it (a write
        // into a fresh database would be acknowledged and then lost to the recovery).
        const store = openSqliteStore({ cityDir, singleTenant: true, recover: strict, create });
        if (store.recovery) ctx.err(`gc: WARNING: ${describeRecovery(store.recovery)}`);
        return store;
      },
    },
  );
  if (city.configError !== undefined && !ctx.json) {
    const first = city.configError.split("\n").find((l) => l.trim() !== "") ?? city.configError;
    ctx.err(
      `gc: using the last good config: ${first.trim()}${city.configError.includes("\n") ? " (and more: gc config validate)" : ""}`,
    );
  }
  // Every command says it until the operator has reviewed (`gc session reset --all`).
  announceRecovery(ctx, city.stateDir);
  return city;
}
