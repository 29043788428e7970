/**
 * The one start lifecycle (see start.ts) and the backend interface providers implement
 * (backend.ts). tmux, subprocess and exec start sessions through it; new providers (k8s,
 * docker) implement {@link StartBackend} and call {@link runStart}; every provider's `start` goes
 * through {@link StartsInProgress} (one start per name at a time).
 */
export type {
  CommandOptions,
  DelegatedStep,
  StartBackend,
  StartLimits,
  StartPlan,
} from "./backend.js";
export { StartsInProgress } from "./guard.js";
export { execKillable, type KillableOptions } from "./kill-on-cut.js";
export { checkStageSources, copyInto, destinationIn, stageLocal } from "./stage.js";
export {
  DEFAULT_DIALOG_TIMEOUT_MS,
  DEFAULT_READY_TIMEOUT_MS,
  DEFAULT_SETUP_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  limitsFor,
  planStart,
  runHookCommands,
  runLocalCommand,
  runStart,
} from "./start.js";
