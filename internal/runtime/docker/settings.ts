/**
 * The docker provider's settings: the city file's `session.docker` section (already
 * validated by the config schema) turned into typed values with defaults. Pure; used by
 * the provider's factory and its tests.
 */
import { ProviderError } from "../../base/errors.js";

/** An extra bind mount into every session container. */
export interface DockerMount {
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
}

/** How the session's work dir reaches the container. */
export type WorkDirMode = "mount" | "copy";

/** Resolved `session.docker` settings. */
export interface DockerSettings {
  /** Unix socket of the engine. */
  readonly socketPath: string;
  /** Image every session container runs; required to start sessions. */
  readonly image: string | undefined;
  /** Container network mode (`none` by default: no network at all). */
  readonly network: string;
  /** Memory limit in bytes (`HostConfig.Memory`), or unlimited. */
  readonly memoryBytes: number | undefined;
  /** CPU limit in CPUs (`HostConfig.NanoCpus` = cpus × 1e9), or unlimited. */
  readonly cpus: number | undefined;
  /** Process limit (`HostConfig.PidsLimit`), or unlimited. */
  readonly pidsLimit: number | undefined;
  /** `user[:group]` the session's program and every exec run as; default: the image's. */
  readonly user: string | undefined;
  /** Extra bind mounts (sources absolute). */
  readonly mounts: readonly DockerMount[];
  /** `mount` (bind the host work dir at the same path) or `copy` (upload it at start). */
  readonly workDir: WorkDirMode;
  /** Readiness deadline when a ready prompt is declared. */
  readonly readyTimeoutMs: number;
  /** Deadline for each hook and each Docker exec gc makes. */
  readonly hookTimeoutMs: number;
  /** Terminal size of the session's tmux window. */
  readonly cols: number;
  readonly rows: number;
}

/** Default engine socket when neither `session.docker.host` nor `DOCKER_HOST` is set. */
export const DEFAULT_SOCKET = "/var/run/docker.sock";
export const READY_TIMEOUT_MS = 60_000;
export const HOOK_TIMEOUT_MS = 30_000;
export const DEFAULT_COLS = 200;
export const DEFAULT_ROWS = 50;

const SIZE_RE = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i;
const SIZE_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
};

/** Bytes in `512m`, `1g`, `1.5GiB`, `1048576`; `undefined` when malformed. Pure. */
export function parseSize(v: string): number | undefined {
  const m = SIZE_RE.exec(v.trim());
  if (!m) return undefined;
  const n = Math.round(Number(m[1]) * SIZE_UNITS[(m[2] ?? "").toLowerCase()]!);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/** Why `v` is not a usable `memory` value, or `undefined`. Pure (used by the config schema). */
export function memoryProblem(v: string): string | undefined {
  const n = parseSize(v);
  if (n === undefined) return "must be a size such as 512m or 2g";
  if (n < 6 * 1024 * 1024) return "must be at least 6m (Docker's minimum)";
  return undefined;
}

/** The socket path in `unix:///path` or `/path`; `undefined` for other schemes. Pure. */
export function socketFromHost(host: string): string | undefined {
  if (host.startsWith("unix://")) return host.slice("unix://".length) || undefined;
  if (host.startsWith("/")) return host;
  return undefined;
}

/**
 * Resolves `session.docker` (snake_case keys as in the city file, durations in ms) over
 * defaults; `env` supplies `DOCKER_HOST` when `host` is unset.
 * @throws ProviderError for a host that is not a unix socket or a malformed value.
 */
export function resolveSettings(
  raw: Readonly<Record<string, unknown>> | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cityDir = "/",
): DockerSettings {
  const s = raw ?? {};
  const str = (k: string) => (typeof s[k] === "string" && s[k] !== "" ? (s[k] as string) : undefined);
  const num = (k: string) =>
    typeof s[k] === "number" && Number.isFinite(s[k]) ? (s[k] as number) : undefined;
  const host = str("host") ?? env.DOCKER_HOST ?? DEFAULT_SOCKET;
  const socketPath = socketFromHost(host);
  if (!socketPath) {
    throw new ProviderError(
      "docker",
      `host ${JSON.stringify(host)}: only unix sockets (unix:///path or /path) are supported`,
    );
  }
  const memory = str("memory");
  let memoryBytes: number | undefined;
  if (memory !== undefined) {
    const why = memoryProblem(memory);
    if (why) throw new ProviderError("docker", `memory ${JSON.stringify(memory)}: ${why}`);
    memoryBytes = parseSize(memory);
  }
  const mounts: DockerMount[] = [];
  for (const m of Array.isArray(s.mounts) ? (s.mounts as unknown[]) : []) {
    if (!m || typeof m !== "object") continue;
    const r = m as Record<string, unknown>;
    if (typeof r.source !== "string" || typeof r.target !== "string") continue;
    const source = r.source.startsWith("/") ? r.source : `${cityDir.replace(/\/$/, "")}/${r.source}`;
    mounts.push({ source, target: r.target, readOnly: r.read_only === true });
  }
  const mode = str("work_dir");
  return {
    socketPath,
    image: str("image"),
    network: str("network") ?? "none",
    memoryBytes,
    cpus: num("cpus"),
    pidsLimit: num("pids_limit"),
    user: str("user"),
    mounts,
    workDir: mode === "copy" ? "copy" : "mount",
    readyTimeoutMs: READY_TIMEOUT_MS,
    hookTimeoutMs: HOOK_TIMEOUT_MS,
    cols: DEFAULT_COLS,
    rows: DEFAULT_ROWS,
  };
}
