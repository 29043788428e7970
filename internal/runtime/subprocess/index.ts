/**
 * The subprocess provider's public surface: {@link SubprocessProvider} and the uniform
 * factory the composition root (cmd/gc) and `gc conformance` call by name.
 */
import type { ProviderFactoryOptions } from "../factory.js";
import type { DetachKeys } from "./keys.js";
import type { SubprocessProviderOptions } from "./options.js";
import { SubprocessProvider } from "./provider.js";

/** The provider, its options and defaults. */
export { defaultHolderPath } from "./holder-control.js";
/** Detach-key choices for `attach` and their description. */
export { type DetachKeys, describeDetachKeys } from "./keys.js";
export {
  DEFAULT_COLS,
  DEFAULT_LOG_MAX_BYTES,
  DEFAULT_RING_BYTES,
  DEFAULT_ROWS,
  DEFAULT_SCROLLBACK,
  DIALOG_TIMEOUT_MS,
  READY_TIMEOUT_MS,
  type SubprocessProviderOptions,
} from "./options.js";
export { SubprocessProvider } from "./provider.js";

const DETACH_KEYS: readonly DetachKeys[] = ["both", "C-\\", "C-b d"];

function positiveInt(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined;
}

/**
 * Builds the subprocess provider for a city. Sessions live under `<stateDir>/subprocess/`.
 * Recognised `settings` (city file `session.subprocess`, declared and validated by
 * schema.ts): `cols`, `rows`, `scrollback`, `log_max_bytes`, `ring_bytes`,
 * `ready_timeout_ms`, `dialog_timeout_ms` (positive integers) and `detach_keys`
 * (`both` | `C-\` | `C-b d`).
 */
export function createProvider(opts: ProviderFactoryOptions): SubprocessProvider {
  const s = opts.settings ?? {};
  const detach = DETACH_KEYS.find((k) => k === s.detach_keys);
  const options: SubprocessProviderOptions = {
    city: opts.city,
    cityId: opts.cityId,
    stateDir: opts.stateDir,
    cols: positiveInt(s.cols),
    rows: positiveInt(s.rows),
    scrollback: positiveInt(s.scrollback),
    logMaxBytes: positiveInt(s.log_max_bytes),
    ringBytes: positiveInt(s.ring_bytes),
    readyTimeoutMs: positiveInt(s.ready_timeout_ms),
    dialogTimeoutMs: positiveInt(s.dialog_timeout_ms),
    detachKeys: detach,
  };
  return new SubprocessProvider(options);
}
