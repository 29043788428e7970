/**
 * Public surface of the config layer: load and validate the city file, resolve it into
 * desired sessions, print its JSON Schema, redact secrets. The reconciler and the CLI
 * import from here.
 */

export { formatDuration, parseDuration } from "../base/duration.js";
export { shellQuote } from "../base/shell-quote.js";
export { BUILTIN_PRESET_NAMES, BUILTIN_PRESETS, type EffectivePreset } from "./builtins.js";
export {
  CITY_FILE_NAME,
  detectDefaultProvider,
  type ExecutableLookup,
  findCityDir,
  findExecutable,
  type LoadCityOptions,
  type LoadedCity,
  loadCity,
} from "./load.js";
export {
  type CityConfig,
  type ParseCityInput,
  type ParsedCity,
  parseCity,
  type SessionConfig,
} from "./parse.js";
export { isSecretKey, REDACTED, redactDeep, redactEnv, redactText, secretValues } from "./redact.js";
export {
  type CityModel,
  type DaemonSettings,
  type DesiredSession,
  daemonSettings,
  declaredBackends,
  effectivePreset,
  formatBeacon,
  poolBounds,
  poolInstanceName,
  type ResolveOptions,
  resolveCity,
  resolvePoolInstance,
  type SessionPlacement,
  sessionPlacement,
} from "./resolve.js";
export {
  type AgentConfig,
  CITY_SCHEMA,
  type CityFile,
  citySchemaJson,
  type DaemonSection,
  type PromptMode,
  type ProviderPreset,
  SESSION_PROVIDER_KINDS,
} from "./schema.js";
