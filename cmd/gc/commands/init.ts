/**
 * `gc init [DIR]`: writes a starter city.yaml (and city.schema.json for editors) that runs
 * on the embedded default with no agent CLI installed: a Python REPL and a pool of shell
 * workers. Refuses to overwrite an existing city.yaml.
 */
import { constants } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { describeError, UsageError } from "../../../internal/base/errors.js";
import { nameProblem } from "../../../internal/base/names.js";
import { CITY_FILE_NAME } from "../../../internal/config/load.js";
import { citySchemaJson } from "../../../internal/config/schema.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";

const USAGE = `Usage: gc init [DIR]

Writes a starter ${CITY_FILE_NAME} into DIR (default: --city, else the current directory),
creating DIR if needed, plus city.schema.json for editor completion. The starter city
needs no agent CLI: a Python REPL (python3) and a pool of two sh workers. Refuses to
overwrite an existing ${CITY_FILE_NAME}.`;

/** A valid city name derived from a directory name. */
export function cityNameFor(dir: string): string {
  const base = basename(resolve(dir));
  if (nameProblem(base) === undefined) return base;
  const cleaned = base
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 63);
  return cleaned === "" || nameProblem(cleaned) !== undefined ? "city" : cleaned;
}

/** The starter city file for a city called `name`. */
export function starterCity(name: string): string {
  return `# yaml-language-server: $schema=./city.schema.json
# A starter city. It needs no agent CLI: a Python REPL and a pool of shell workers.
#   gc config validate    check this file (every problem, with file:line:col)
#   gc config show        what it resolves to, and which session provider is used
#   gc start              bring the city up;  gc status, gc peek, gc attach, gc stop
workspace:
  name: ${name}

# session:
#   provider: tmux        # default: tmux when it is on PATH, else subprocess

agents:
  # A Python REPL (builtin preset "python": python3 -i -q, ready at ">>> ").
  - name: repl
    provider: python
    nudge: "print('hello from the repl')"

  # A pool of shell workers: worker-1 and worker-2 run, up to 4. Each gets its own dir.
  - name: worker
    provider: sh
    work_dir: workers/{{session}}
    env:
      GREETING: hello
    min_active_sessions: 2
    max_active_sessions: 4
    depends_on: [repl]
`;
}

/** Runs `gc init`; resolves to the exit code. */
export async function runInit(
  ctx: CommandContext,
  { positionals }: { positionals: string[] },
): Promise<number> {
  if (positionals.length > 1) throw new UsageError(`expected at most one DIR\n\n${USAGE}`);
  const dir = resolve(ctx.cwd, positionals[0] ?? ctx.cityFlag ?? ".");
  const file = join(dir, CITY_FILE_NAME);
  try {
    await mkdir(dir, { recursive: true });
    // "wx": fail rather than overwrite, with no check-then-write race.
    await writeFile(file, starterCity(cityNameFor(dir)), { flag: "wx", mode: 0o644 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") {
      ctx.err(`gc init: ${file} already exists; not overwriting it`);
    } else ctx.err(`gc init: cannot write ${file}: ${describeError(e)}`);
    return EXIT.failed;
  }
  const schema = join(dir, "city.schema.json");
  let wroteSchema = true;
  try {
    await writeFile(schema, `${JSON.stringify(citySchemaJson(), null, 2)}\n`, {
      flag: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
    });
  } catch {
    wroteSchema = false; // an existing schema file is left alone
  }
  if (ctx.json) ctx.out(JSON.stringify({ file, schema: wroteSchema ? schema : null }));
  else {
    ctx.out(`wrote ${file}${wroteSchema ? ` and ${schema}` : ""}`);
    ctx.out(`next: gc --city ${dir} config show   (then: gc --city ${dir} start)`);
  }
  return EXIT.ok;
}

export const command = defineCommand({ usage: USAGE, options: {}, run: runInit });
