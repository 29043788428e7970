#!/usr/bin/env node
/**
 * The `gc` CLI entry point. commander parses the global flags and the invoked subcommand's
 * options (with "did you mean" for commands and flags), `help [CMD]`, `-h/--help` and
 * `-v/--version`; this file creates the one root AbortSignal, keeps closed pipes quiet and
 * maps errors to the exit codes of {@link EXIT} — as JSON (`{error:{code,message}}` on
 * stderr) in `--json` mode.
 */
import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command as Cli, CommanderError, Option } from "commander";
import { ConfigError, describeError, isGcError } from "../../internal/base/errors.js";
import { closest } from "../../internal/base/suggest.js";
import { type Command, type CommandContext, EXIT } from "./context.js";
import { COMMANDS, type CommandName, isCommandName, loadCommand } from "./registry.js";

const GLOBAL_FLAGS = `Global flags (before or after the command):
  --city DIR      city directory (default: nearest dir upward holding city.yaml; env GC_CITY)
  --config FILE   city file (default: <city>/city.yaml)
  --json          machine-readable output; errors as {"error":{"code","message"}} on stderr
  -h, --help      help for gc or a command
  -v, --version   print gc's version and build (the content hash of the built program)`;

/** The top-level help text. Pure. */
function programHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length)) + 2;
  return `gc — run a city of long-lived agent sessions

Usage: gc [global flags] <command> [args]
       gc help <command>

Commands:
${Object.entries(COMMANDS)
  .map(([n, s]) => `  ${n.padEnd(width)} ${s}`)
  .join("\n")}

${GLOBAL_FLAGS}

Exit codes: 0 ok · 1 operation failed · 2 usage or config error · 3 session not found ·
4 still working at timeout · 5 session ended · 125 gc exec itself failed · 130 interrupted
(gc exec otherwise exits with the command's own code)`;
}

/** gc's version, from the package.json next to the build (never hard-coded). */
function gcVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "gc" && pkg.version) return pkg.version;
    } catch {
      // not here: look one level up
    }
    dir = dirname(dir);
  }
  return "unknown";
}

/**
 * What `gc --version` prints: `0.1.0 (build 3f2a9c41d0be)`, or with `--json`
 * `{"version":"0.1.0","build":"3f2a9c41d0be"}` (build `unknown`/null without dist/build-id).
 * Read only when asked for (see {@link asksVersion}): every other command starts without it.
 */
async function versionText(json: boolean): Promise<string> {
  const { gcBuildId } = await import("../../internal/build/build-id.js");
  const build = gcBuildId();
  return json
    ? JSON.stringify({ version: gcVersion(), build: build ?? null })
    : `${gcVersion()} (build ${build ?? "unknown"})`;
}

/** True when `-v`/`--version` appears among gc's own arguments (before any `--`). Pure. */
function asksVersion(argv: readonly string[]): boolean {
  const dash = argv.indexOf("--");
  return (dash < 0 ? argv : argv.slice(0, dash)).some((a) => a === "-v" || a === "--version");
}

/** Options with a value among the global flags (their value is never the command name). */
const GLOBAL_VALUE_FLAGS = new Set(["--city", "--config"]);

/**
 * The subcommand an argv names (for `help X`, X), so only its module is loaded and
 * commander knows its options. Pure.
 */
function invokedCommand(argv: readonly string[]): CommandName | undefined {
  const operands = leadingOperands(argv);
  const name = operands[0] === "help" ? operands[1] : operands[0];
  return name !== undefined && isCommandName(name) ? name : undefined;
}

/** The first two non-option arguments (the command, and for `help X` its X). Pure. */
function leadingOperands(argv: readonly string[]): string[] {
  const operands: string[] = [];
  for (let i = 0; i < argv.length && operands.length < 2; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (GLOBAL_VALUE_FLAGS.has(a)) i++;
    else if (!a.startsWith("-") || a === "-") operands.push(a);
  }
  return operands;
}

/** True when `--json` appears among gc's own arguments (before any `--`). Pure. */
function wantsJson(argv: readonly string[]): boolean {
  const dash = argv.indexOf("--");
  return (dash < 0 ? argv : argv.slice(0, dash)).includes("--json");
}

interface GlobalValues {
  city?: string | undefined;
  config?: string | undefined;
  json?: boolean | undefined;
}

function addGlobalOptions(cli: Cli): Cli {
  return cli
    .addOption(new Option("--city <dir>"))
    .addOption(new Option("--config <file>"))
    .addOption(new Option("--json"));
}

/** What a parsed command line asks for. */
interface Invocation {
  readonly name: CommandName;
  readonly command: Command;
  readonly globals: GlobalValues;
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: string[];
}

/**
 * Builds the commander program. `loaded` holds the modules of commands whose options must
 * be known (the invoked one; all of them for completion); others are listed for help and
 * suggestions only.
 */
function buildProgram(
  loaded: Partial<Record<CommandName, Command>>,
  onInvoke: (inv: Invocation) => void,
  write: { out: (s: string) => void; err: (s: string) => void },
  version: string,
): Cli {
  const program = addGlobalOptions(new Cli("gc"))
    .enablePositionalOptions()
    .exitOverride()
    .showSuggestionAfterError(true)
    .version(version, "-v, --version")
    .helpOption("-h, --help")
    .helpCommand("help [command]")
    .configureOutput({ writeOut: write.out, writeErr: write.err, outputError: () => undefined })
    .configureHelp({ formatHelp: () => `${programHelp()}\n` });
  for (const [name, summary] of Object.entries(COMMANDS) as [CommandName, string][]) {
    const sub = program.command(name).summary(summary).description(summary).exitOverride();
    const command = loaded[name];
    if (!command) {
      sub.allowUnknownOption().allowExcessArguments();
      continue;
    }
    addGlobalOptions(sub).argument("[args...]");
    for (const [key, spec] of Object.entries(command.options)) {
      const flags = `${spec.short ? `-${spec.short}, ` : ""}--${key}${spec.type === "string" ? " <value>" : ""}`;
      sub.addOption(new Option(flags));
    }
    if (command.passThrough) sub.passThroughOptions();
    sub.configureHelp({ formatHelp: () => `${command.usage}\n\n${GLOBAL_FLAGS}\n` });
    sub.action((args: string[], opts: Record<string, unknown>) => {
      const values: Record<string, string | boolean | undefined> = {};
      for (const key of Object.keys(command.options)) {
        const v = opts[camel(key)];
        if (typeof v === "string" || typeof v === "boolean") values[key] = v;
      }
      const top = program.opts<GlobalValues>();
      const own = opts as GlobalValues;
      onInvoke({
        name,
        command,
        globals: { city: own.city ?? top.city, config: own.config ?? top.config, json: own.json || top.json },
        values,
        positionals: args,
      });
    });
  }
  return program;
}

/** commander's attribute name for `--dry-run`: `dryRun`. Pure. */
function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Makes writes to a closed pipe (`gc status | head -1`) quiet: further output is dropped and
 * the command still finishes its work and exits with its own code — a `gc stop | head`
 * stops everything.
 */
function quietClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE" || e.code === "ERR_STREAM_DESTROYED") return;
      process.exitCode = EXIT.failed;
    });
  }
}

/** True once stdout/stderr hit a closed pipe: writing more is pointless. */
function closed(stream: NodeJS.WriteStream): boolean {
  return stream.destroyed || stream.writableEnded;
}

/** The one root signal: aborted by SIGINT/SIGTERM. */
const controller = new AbortController();

async function main(argv: readonly string[]): Promise<number> {
  // Commands fan out over every session with this one signal (a listener per operation in
  // flight, each removed when it settles): many at once is by design, not a leak.
  setMaxListeners(0, controller.signal);
  const onSignal = (sig: NodeJS.Signals) => controller.abort(new Error(`interrupted by ${sig}`));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const target = invokedCommand(argv);
  const [first, second] = leadingOperands(argv);
  if (first === "help" && second !== undefined && !target) {
    const near = closest(second, Object.keys(COMMANDS));
    throw new CliUsageError(`unknown command '${second}'${near ? ` (did you mean ${near}?)` : ""}`);
  }
  const loaded: Partial<Record<CommandName, Command>> = {};
  if (target) loaded[target] = await loadCommand(target);
  if (target && first === target) {
    failureExit = loaded[target]?.failureExit;
    exitWhenDone = loaded[target]?.exitWhenDone === true;
  }
  let invocation: Invocation | undefined;
  const program = buildProgram(
    loaded,
    (inv) => {
      invocation = inv;
    },
    { out: (s) => write(process.stdout, s), err: (s) => write(process.stderr, s) },
    asksVersion(argv) ? await versionText(wantsJson(argv)) : "",
  );
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return EXIT.ok; // help or version was printed
      if (e.code === "commander.help" || e.code === "commander.helpDisplayed") return EXIT.usage;
      throw new CliUsageError(e.message);
    }
    throw e;
  }
  if (!invocation) return EXIT.ok;
  const { command, globals, values, positionals } = invocation;
  const ctx: CommandContext = {
    cwd: process.cwd(),
    env: process.env,
    cityFlag: globals.city ?? (process.env.GC_CITY || undefined),
    configFlag: globals.config,
    json: globals.json === true,
    color: !process.env.NO_COLOR && process.stdout.isTTY === true,
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: controller.signal,
    out: (line) => write(process.stdout, `${line}\n`),
    err: (line) => write(process.stderr, `${line}\n`),
  };
  return command.run(ctx, { values, positionals });
}

/** Resolves once everything written to `stream` so far has been handed to the OS (or it closed). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (closed(stream)) resolve();
    else stream.write("", () => resolve());
  });
}

function write(stream: NodeJS.WriteStream, s: string): void {
  if (!closed(stream)) stream.write(s);
}

/** A command-line error found by commander, reworded as one line. */
class CliUsageError extends Error {
  constructor(commanderMessage: string) {
    super(
      commanderMessage
        .replace(/^error: /, "")
        .replace(/\n\(Did you mean (.*)\?\)/, " (did you mean $1?)")
        .replace(/\n+/g, " ")
        .trim(),
    );
  }
}

/** The stable code and exit code of a thrown error. Pure. */
function classify(e: unknown): { code: string; exit: number } {
  if (e instanceof CliUsageError) return { code: "GC_USAGE", exit: EXIT.usage };
  if (e instanceof ConfigError) return { code: "GC_CONFIG", exit: EXIT.usage };
  if (isGcError(e, "GC_USAGE") || isGcError(e, "GC_INVALID_NAME")) return { code: e.code, exit: EXIT.usage };
  if (isGcError(e, "GC_SESSION_NOT_FOUND")) return { code: e.code, exit: EXIT.notFound };
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.startsWith("GC_")) return { code, exit: EXIT.failed };
  return { code: "GC_FAILED", exit: EXIT.failed };
}

/** The invoked command's exit code for its own failures, when it is not the usual one. */
let failureExit: number | undefined;
/** The invoked command's {@link Command.exitWhenDone}. */
let exitWhenDone = false;

/** Prints a thrown error (plain, or JSON in `--json` mode) and returns its exit code. */
function fail(e: unknown, json: boolean): number {
  // Cut short by Ctrl-C / SIGTERM: say that, whatever an aborted step threw on its way out
  // (Node's own "The operation was aborted" names neither the cause nor the command).
  if (controller.signal.aborted) {
    const message = describeError(controller.signal.reason);
    if (json) write(process.stderr, `${JSON.stringify({ error: { code: "GC_INTERRUPTED", message } })}\n`);
    else write(process.stderr, `gc: ${message}\n`);
    return EXIT.cancelled;
  }
  const { code, exit } = classify(e);
  const message = e instanceof ConfigError || e instanceof CliUsageError ? e.message : describeError(e);
  if (json) write(process.stderr, `${JSON.stringify({ error: { code, message } })}\n`);
  else if (e instanceof ConfigError) write(process.stderr, `${message}\n`);
  else write(process.stderr, `gc: ${message}${e instanceof CliUsageError ? "\n(see gc --help)" : ""}\n`);
  return failureExit ?? exit;
}

quietClosedPipes();
const argv = process.argv.slice(2);
void main(argv)
  .then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.exitCode = fail(e, wantsJson(argv));
    },
  )
  .then(async () => {
    if (!exitWhenDone) return;
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    process.exit();
  });
