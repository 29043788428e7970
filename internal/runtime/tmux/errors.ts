/**
 * The errors of a tmux control connection: a command tmux refused ({@link TmuxCommandError}),
 * and a connection that could not be made or was lost ({@link TmuxConnectionError}, with its
 * no-server and stale-generation cases). Thrown by the control client (control-client.ts);
 * classified by sessions.ts and pane.ts.
 */
import { ProviderError } from "../../base/errors.js";

/** tmux answered a command with `%error`. `output` holds tmux's message lines. */
export class TmuxCommandError extends ProviderError {
  readonly output: readonly string[];
  readonly command: string;
  constructor(command: string, output: readonly string[]) {
    super("tmux", `${command}: ${output.join(" ").trim() || "failed"}`);
    this.command = command;
    this.output = output;
  }
}

/** The control connection could not be made, or was lost before the reply arrived. */
export class TmuxConnectionError extends ProviderError {
  constructor(message: string, options?: ErrorOptions) {
    super("tmux", message, options);
  }
}

/** No tmux server is running on the socket (and the caller asked not to start one). */
export class TmuxNoServerError extends TmuxConnectionError {
  constructor(path: string) {
    super(`no tmux server running on ${path}`);
  }
}

/** The command was meant for an earlier connection (the server may have been replaced). */
export class TmuxGenerationError extends TmuxConnectionError {
  constructor(expected: number, actual: number) {
    super(`connection generation ${actual} is not ${expected}; the server may have been replaced`);
  }
}
