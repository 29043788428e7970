/**
 * The `session.exec` section of the city file, declared by the exec provider itself and
 * placed in the city schema by the provider registry (registry.ts). Pure.
 */
import { s } from "../../base/schema-builder.js";

/** `session.exec`. */
export const EXEC_SETTINGS_SCHEMA = s.object({
  timeout: s.duration({ min: "100ms" }).default("30s").describe("Deadline for each script call."),
  start_timeout: s.duration({ min: "1s" }).default("120s").describe("Deadline for the script's start call."),
});
