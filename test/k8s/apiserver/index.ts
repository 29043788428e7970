/**
 * Loopback Kubernetes API server for tests and local runs (a dev tool; never imported by the
 * shipped provider). See test/k8s/README.md.
 */
export { type FailOptions, Faults, type RequestMatch } from "./faults.js";
export { CONTAINER_MARKER, POD_MARKER, podHostFiles, SERVER_MARKER, TMUX_SOCKET_ENV } from "./kubelet.js";
export {
  type ApiServer,
  type ApiServerOptions,
  RequestLog,
  type RequestRecord,
  type RestartOptions,
  startApiServer,
} from "./server.js";
