/**
 * What every `gc` subcommand receives, and the contract each command module follows:
 * a module `cmd/gc/commands/<name>.ts` exports `command: Command` (built with
 * {@link defineCommand}); its one-line summary lives in cmd/gc/registry.ts. Commands write
 * through `ctx.out`/`ctx.err`, honour `ctx.json`, and return an exit code from `EXIT` (internal/operate/exit.ts, re-exported
 * here for the commands).
 */
import type { Readable, Writable } from "node:stream";

export { EXIT } from "../../internal/operate/exit.js";

/** Per-invocation context shared by every command. */
export interface CommandContext {
  /** Working directory the command was started in. */
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** `--city DIR` (or `GC_CITY`), if given. */
  readonly cityFlag: string | undefined;
  /** `--config FILE`, if given. */
  readonly configFlag: string | undefined;
  /** `--json`: print machine-readable output only. */
  readonly json: boolean;
  /** False when `NO_COLOR` is set or stdout is not a TTY. */
  readonly color: boolean;
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly stderr: Writable;
  /** Aborted on SIGINT/SIGTERM: the one root signal (style.md §3.4). */
  readonly signal: AbortSignal;
  /** Writes a line to stdout. */
  out(line: string): void;
  /** Writes a line to stderr. */
  err(line: string): void;
}

/** One option of a command (`--name`, or `-s` when `short` is given). */
export interface OptionSpec {
  readonly type: "boolean" | "string";
  /** One-letter alias. */
  readonly short?: string;
}

/** The parsed values of a command's options, keyed as declared (`"dry-run"`, not `dryRun`). */
export type OptionValues<O extends Readonly<Record<string, OptionSpec>>> = {
  readonly [K in keyof O]?: O[K]["type"] extends "string"
    ? string
    : O[K]["type"] extends "boolean"
      ? boolean
      : string | boolean;
};

/** What a command's `run` receives: its options and the remaining arguments. */
export interface ParsedArgs<O extends Readonly<Record<string, OptionSpec>>> {
  readonly values: OptionValues<O>;
  readonly positionals: string[];
}

/** One subcommand. The CLI (commander) parses its options; unknown ones never reach `run`. */
export interface Command<
  O extends Readonly<Record<string, OptionSpec>> = Readonly<Record<string, OptionSpec>>,
> {
  /** Full usage text for `gc <name> --help` and `gc help <name>`. */
  readonly usage: string;
  /** Options besides the global `--json`, `--city`, `--config`. */
  readonly options: O;
  /**
   * Everything after the first argument is an argument, dashes included (`gc exec S ls -la`):
   * options must come before it.
   */
  readonly passThrough?: boolean;
  /**
   * The process exits as soon as `run` settles and its output is written, not once the event
   * loop drains (which at a thousand sessions means tens of ms of heap collection and
   * teardown after the last line). Only for commands that await every effect of their own
   * in `run` and leave nothing in the background (read-only ones: status).
   */
  readonly exitWhenDone?: boolean;
  /** Exit code of every failure of gc itself, when the command's own codes are passed through. */
  readonly failureExit?: number;
  /** Runs the command; resolves to the exit code. */
  run(ctx: CommandContext, args: ParsedArgs<O>): Promise<number>;
}

/** Declares a command with its options typed for `run`. Identity at runtime. */
export function defineCommand<const O extends Readonly<Record<string, OptionSpec>>>(c: Command<O>): Command {
  return c as unknown as Command;
}
