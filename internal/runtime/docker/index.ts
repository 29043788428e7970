/**
 * The docker provider's public surface: {@link createProvider} for the composition root
 * and `gc conformance`, the provider class, its settings and the pure helpers tests use.
 * dockerode itself is imported only when the first engine call is made.
 */
import type { ProviderFactoryOptions } from "../factory.js";
import { DockerProvider } from "./provider.js";

export {
  containerName,
  LABEL_CITY,
  LABEL_PREFIX,
  LABEL_SESSION,
  LABEL_WORKDIR,
} from "./containers.js";
export { Engine, type ExecResult, statusOf } from "./engine.js";
export { DockerProvider, type DockerProviderOptions } from "./provider.js";
export { envFile, META_DIR, RUN_DIR, shQuote } from "./scripts.js";
export {
  type DockerSettings,
  memoryProblem,
  parseSize,
  resolveSettings,
  socketFromHost,
} from "./settings.js";

/**
 * Builds the docker provider for a city from `session.docker` (`host`, `image`, `network`,
 * `memory`, `cpus`, `pids_limit`, `user`, `mounts`, `work_dir`). Connects lazily.
 * @throws ProviderError for settings that cannot work (e.g. a non-unix host).
 */
export function createProvider(opts: ProviderFactoryOptions): DockerProvider {
  return new DockerProvider(opts);
}
