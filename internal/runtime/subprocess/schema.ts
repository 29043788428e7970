/**
 * The `session.subprocess` section of the city file, declared by the subprocess provider
 * itself and placed in the city schema by the provider registry (registry.ts); index.ts
 * `createProvider` reads it. Pure.
 */
import { s } from "../../base/schema-builder.js";

/** `session.subprocess`. */
export const SUBPROCESS_SETTINGS_SCHEMA = s.object({
  cols: s.int({ min: 1 }).optional().describe("Columns of a new session's pty (default 160)."),
  rows: s.int({ min: 1 }).optional().describe("Rows of a new session's pty (default 50)."),
  scrollback: s.int({ min: 1 }).optional().describe("Lines the screen model keeps (`peek 0`; default 5000)."),
  log_max_bytes: s
    .int({ min: 1 })
    .optional()
    .describe("Raw log rotation size in bytes (one old generation kept; default 8 MiB)."),
  ring_bytes: s.int({ min: 1 }).optional().describe("Output kept in memory for `output` (default 1 MiB)."),
  ready_timeout_ms: s
    .int({ min: 1 })
    .optional()
    .describe("Longest wait for ready_prompt_prefix, ms (default 60000)."),
  dialog_timeout_ms: s
    .int({ min: 1 })
    .optional()
    .describe("How long start answers startup dialogs after readiness, ms (default 10000)."),
  detach_keys: s
    .enum(["both", "C-\\", "C-b d"])
    .optional()
    .describe("Keys that detach `gc attach`: both (default), C-\\ or C-b d."),
});
