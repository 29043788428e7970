/**
 * The one list of `gc` subcommands and their one-line summaries. Modules load lazily, so
 * `gc peek` never loads what `gc start` needs.
 */
import type { Command } from "./context.js";

/** Subcommand name → summary shown by `gc --help`, `gc help` and shell completion. */
export const COMMANDS = {
  init: "write a starter city.yaml",
  start: "reconcile the city and run the controller",
  stop: "stop the controller and sessions",
  status: "one row per session",
  reconcile: "one reconcile pass now",
  drift: "which fields drifted, old → new",
  scale: "set how many instances a pool runs",
  peek: "recent screen text of a session",
  nudge: "deliver text to a session",
  attach: "attach your terminal to a session",
  wait: "block until a session condition holds",
  run: "one turn: nudge, wait for idle, report",
  exec: "run a command in a session's environment",
  session: "session bookkeeping: list, kill, restart, reset, logs, respond",
  dashboard: "serve a live web view of the city",
  config: "validate, show or print the schema of the city file",
  conformance: "run the provider conformance suite",
  completion: "print a shell completion script (bash, zsh or fish)",
} as const satisfies Record<string, string>;

/** A subcommand name. */
export type CommandName = keyof typeof COMMANDS;

/** True when `name` is a subcommand. Pure. */
export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/** Loads the module of subcommand `name` (from the closed list above, never a user path). */
export async function loadCommand(name: CommandName): Promise<Command> {
  const mod = (await import(`./commands/${name}.js`)) as { command?: Command };
  if (!mod.command) throw new Error(`internal: commands/${name}.js exports no command`);
  return mod.command;
}
