/**
 * The tmux provider's public surface: {@link createProvider} for the composition root and
 * `gc conformance`, the provider class, its settings, and the control-mode client.
 */
import type { ProviderFactoryOptions } from "../factory.js";
import { TmuxProvider } from "./provider.js";

export {
  COMMAND_TIMEOUT_MS,
  ControlClient,
  type ControlClientOptions,
  KEEPER_SESSION,
} from "./control-client.js";
export {
  TmuxCommandError,
  TmuxConnectionError,
  TmuxGenerationError,
  TmuxNoServerError,
} from "./errors.js";
export { TmuxProvider, type TmuxProviderOptions } from "./provider.js";
export { commandLine, gcSessionName, quoteArg, tmuxSessionName } from "./quote.js";
export type { TmuxSocket } from "./server.js";
export { defaultSocketName, type TmuxSettings } from "./settings.js";

/**
 * Builds the tmux provider for a city: socket `gc-<city>` (or `settings.socket`), never the
 * user's default server. Connects lazily on the first operation.
 * @throws ProviderError for invalid settings.
 */
export function createProvider(opts: ProviderFactoryOptions): TmuxProvider {
  return new TmuxProvider(opts);
}
