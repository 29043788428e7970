/**
 * The one start lifecycle (see start.ts) and the backend interface providers implement
 * (backend.ts). tmux, subprocess and exec start sessions through it; new providers (k8s,
 * docker) implement {@link StartBackend} and call {@link runStart}.
 */
export type {
  CommandOptions,
  DelegatedStep,
  StartBackend,
  StartLimits,
  StartPlan,
} from "./backend.js";
export { stageLocal } from "./stage.js";
export {
  DEFAULT_DIALOG_TIMEOUT_MS,
  DEFAULT_READY_TIMEOUT_MS,
  DEFAULT_SETUP_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
} from "./start.js";
