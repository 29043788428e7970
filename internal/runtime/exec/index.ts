/**
 * The exec provider module: `exec:<script>` delegates every session operation to a user
 * script (docs/exec-protocol.md). `createProvider` is what the composition root and
 * `gc conformance` call; `probeExecScript` tells which protocol operations a script
 * implements without side effects.
 */
import { mkdir } from "node:fs/promises";
import { parseDuration } from "../../base/duration.js";
import { ProviderError } from "../../base/errors.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { probeScript } from "./probe.js";
import { ExecProvider } from "./provider.js";
import {
  EXEC_OP_TIMEOUT_MS,
  EXEC_START_TIMEOUT_MS,
  execStateDir,
  resolveScript,
  scriptEnv,
} from "./script.js";

export {
  type ExecOperationReport,
  type ExecProbeOptions,
  type ExecProbeResult,
  formatProbe,
  type OperationStatus,
  probeExecScript,
} from "./probe.js";
export {
  EXEC_OPERATIONS,
  EXEC_PROTOCOL_VERSION,
  EXIT,
  type ExecOperation,
  type ExecOperationName,
  type ExecStartPayload,
  renderOperationTable,
  startPayload,
} from "./protocol.js";
export { ExecProvider, type ExecProviderOptions } from "./provider.js";
export { EXEC_KILL_GRACE_MS, EXEC_OP_TIMEOUT_MS, EXEC_START_TIMEOUT_MS } from "./script.js";

/** Extra options beyond the uniform factory options (tests and tools). */
export interface ExecFactoryExtras {
  /** Extra environment for every script call (over `process.env`). */
  readonly env?: Readonly<Record<string, string>> | undefined;
}

/**
 * Builds the exec provider for `exec:<script>` (`opts.arg`): resolves the script (absolute,
 * relative to the city dir, or on PATH), creates `GC_EXEC_STATE_DIR` = `<stateDir>/exec`
 * (0700), reads `settings.timeout` / `settings.start_timeout` (milliseconds or duration
 * strings), and probes the script once (`capabilities`, else read-only probes) to fix its
 * protocol version and `capabilities()`.
 * @throws ProviderError when the script is missing, not executable, or its `capabilities`
 * answer is malformed.
 */
export async function createProvider(
  opts: ProviderFactoryOptions & ExecFactoryExtras,
): Promise<ExecProvider> {
  if (!opts.arg) throw new ProviderError("exec", 'no script given: use "exec:<script>"');
  const script = await resolveScript(opts.arg, opts.cityDir);
  const stateDir = execStateDir(opts.stateDir);
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const timeoutMs = durationSetting(opts.settings, "timeout") ?? EXEC_OP_TIMEOUT_MS;
  const startTimeoutMs = durationSetting(opts.settings, "start_timeout") ?? EXEC_START_TIMEOUT_MS;
  const context = { script, env: scriptEnv(process.env, opts.env, stateDir, opts.city), cwd: opts.cityDir };
  const probe = await probeScript(context, { timeoutMs, thorough: false });
  return new ExecProvider({ context, city: opts.city, probe, timeoutMs, startTimeoutMs });
}

function durationSetting(
  settings: Readonly<Record<string, unknown>> | undefined,
  key: string,
): number | undefined {
  const v = settings?.[key];
  if (v === undefined) return undefined;
  const ms = typeof v === "number" ? v : typeof v === "string" ? parseDuration(v) : undefined;
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0) {
    throw new ProviderError(
      "exec",
      `session.exec.${key}: expected a positive duration, got ${JSON.stringify(v)}`,
    );
  }
  return ms;
}
