/**
 * What every `gc` subcommand receives, and the contract each command module follows:
 * a module `cmd/gc/commands/<name>.ts` exports `command: Command`. Commands write through
 * `ctx.out`/`ctx.err`, honour `ctx.json`, and return the process exit code
 * (0 ok · 1 operation failed · 2 usage or config error · 3 session not found).
 */
import type { Readable, Writable } from "node:stream";

/** Exit codes of the CLI contract (architecture §7). */
export const EXIT = { ok: 0, failed: 1, usage: 2, notFound: 3 } as const;

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

/** One subcommand. */
export interface Command {
  readonly name: string;
  /** One line for `gc --help`. */
  readonly summary: string;
  /** Full usage text for `gc <name> --help`. */
  readonly usage: string;
  /** Runs the command with the arguments after its name; resolves to the exit code. */
  run(ctx: CommandContext, args: string[]): Promise<number>;
}
