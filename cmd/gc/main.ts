#!/usr/bin/env node
/**
 * The `gc` CLI entry point: parses global flags, creates the one root AbortSignal, loads
 * the named subcommand lazily and maps errors to the exit codes of the CLI contract.
 */
import { ConfigError, describeError, isGcError } from "../../internal/runtime/errors.js";
import { type Command, type CommandContext, EXIT } from "./context.js";

/** Subcommands, loaded lazily so `gc peek` never loads what `gc start` needs. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  init: { summary: "write a starter city.yaml", load: () => load("init") },
  start: { summary: "reconcile the city and run the controller", load: () => load("start") },
  stop: { summary: "stop the controller and sessions", load: () => load("stop") },
  status: { summary: "one row per session", load: () => load("status") },
  reconcile: { summary: "one reconcile pass now", load: () => load("reconcile") },
  drift: { summary: "which fields drifted, old → new", load: () => load("drift") },
  scale: { summary: "set how many instances a pool runs", load: () => load("scale") },
  peek: { summary: "recent screen text of a session", load: () => load("peek") },
  nudge: { summary: "deliver text to a session", load: () => load("nudge") },
  attach: { summary: "attach your terminal to a session", load: () => load("attach") },
  wait: { summary: "block until a session condition holds", load: () => load("wait") },
  run: { summary: "one turn: nudge, wait for idle, report", load: () => load("run") },
  exec: { summary: "run a command in a session's environment", load: () => load("exec") },
  session: { summary: "session bookkeeping: list, kill, restart, reset, logs", load: () => load("session") },
  config: { summary: "validate, show or print the schema of the city file", load: () => load("config") },
  conformance: { summary: "run the provider conformance suite", load: () => load("conformance") },
};

async function load(file: string): Promise<Command> {
  const mod = (await import(`./commands/${file}.js`)) as { command?: Command };
  if (!mod.command) throw new Error(`internal: commands/${file}.js exports no command`);
  return mod.command;
}

const HELP = `gc — run a city of long-lived agent sessions

Usage: gc [--city DIR] [--config FILE] [--json] <command> [args]

Commands:
${Object.entries(COMMANDS)
  .map(([n, c]) => `  ${n.padEnd(12)} ${c.summary}`)
  .join("\n")}

Global flags:
  --city DIR      city directory (default: nearest dir upward holding city.yaml; env GC_CITY)
  --config FILE   city file (default: <city>/city.yaml)
  --json          machine-readable output
  -h, --help      help for gc or a command

Exit codes: 0 ok · 1 operation failed · 2 usage or config error · 3 session not found`;

interface Globals {
  city: string | undefined;
  config: string | undefined;
  json: boolean;
  help: boolean;
  rest: string[];
}

/** Splits global flags (anywhere before `--`) from the command and its arguments. Pure. */
export function parseGlobals(argv: readonly string[]): Globals {
  const g: Globals = { city: undefined, config: undefined, json: false, help: false, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      g.rest.push(...argv.slice(i));
      break;
    }
    const eq = a.indexOf("=");
    const flag = eq > 0 && a.startsWith("--") ? a.slice(0, eq) : a;
    const inline = eq > 0 && a.startsWith("--") ? a.slice(eq + 1) : undefined;
    if (flag === "--city" || flag === "--config") {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new UsageFlagError(`${flag} needs a value`);
      if (flag === "--city") g.city = v;
      else g.config = v;
    } else if (a === "--json") g.json = true;
    else if ((a === "-h" || a === "--help") && g.rest.length === 0) g.help = true;
    else g.rest.push(a);
  }
  return g;
}

class UsageFlagError extends Error {}

async function main(): Promise<number> {
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => controller.abort(new Error(`interrupted by ${sig}`));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let g: Globals;
  try {
    g = parseGlobals(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`gc: ${describeError(e)}\n`);
    return EXIT.usage;
  }
  const [name, ...args] = g.rest;
  if (!name || (g.help && !name)) {
    (name || g.help ? process.stdout : process.stderr).write(`${HELP}\n`);
    return name || g.help ? EXIT.ok : EXIT.usage;
  }
  if (name === "--version" || name === "version") {
    process.stdout.write("gc 0.1.0\n");
    return EXIT.ok;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    process.stderr.write(`gc: unknown command ${JSON.stringify(name)}\n\n${HELP}\n`);
    return EXIT.usage;
  }
  const command = await entry.load();
  // `--help` after `--` belongs to the command being run (`gc exec S -- grep --help`).
  const dashDash = args.indexOf("--");
  const own = dashDash < 0 ? args : args.slice(0, dashDash);
  if (g.help || own.includes("--help") || own.includes("-h")) {
    process.stdout.write(`${command.usage}\n`);
    return EXIT.ok;
  }
  const ctx: CommandContext = {
    cwd: process.cwd(),
    env: process.env,
    cityFlag: g.city ?? (process.env.GC_CITY || undefined),
    configFlag: g.config,
    json: g.json,
    color: !process.env.NO_COLOR && process.stdout.isTTY === true,
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: controller.signal,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  };
  return command.run(ctx, args);
}

/** Maps a thrown error to its exit code and prints it. */
function fail(e: unknown): number {
  if (e instanceof ConfigError) {
    process.stderr.write(`${e.message}\n`);
    return EXIT.usage;
  }
  process.stderr.write(`gc: ${describeError(e)}\n`);
  const nodeCode = (e as { code?: unknown } | null)?.code;
  if (isGcError(e, "GC_USAGE") || isGcError(e, "GC_INVALID_NAME")) return EXIT.usage;
  if (typeof nodeCode === "string" && nodeCode.startsWith("ERR_PARSE_ARGS_")) return EXIT.usage;
  if (isGcError(e, "GC_SESSION_NOT_FOUND")) return EXIT.notFound;
  return EXIT.failed;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.exitCode = fail(e);
  },
);
