/**
 * The routers' sections of the city file, `session.auto` and `session.hybrid`, declared here
 * and placed in the city schema by the provider registry (registry.ts), like every provider's
 * own section. Their values name concrete providers, a list only the registry knows, so the
 * registry hands in the field that accepts one (`concreteProvider`): this module never
 * imports the registry. Pure and light.
 */
import { s } from "../../base/schema-builder.js";
import type { StringSchema } from "../../base/schema-scalars.js";

/** Builds a field accepting one concrete session provider (`tmux`, `exec:./x.sh`, …). */
export type ConcreteProviderField = () => StringSchema;

/** `session.auto`. */
export function autoSettingsSchema(concreteProvider: ConcreteProviderField) {
  return s.object({
    default: concreteProvider()
      .optional()
      .describe("Backend for agents without a session override; default: tmux if on PATH, else subprocess."),
  });
}

/** `session.hybrid`. */
export function hybridSettingsSchema(concreteProvider: ConcreteProviderField) {
  return s.object({
    local: concreteProvider().default("tmux"),
    remote: concreteProvider().default("subprocess"),
    remote_match: s
      .string({ nonEmpty: true })
      .optional()
      .describe("Regular expression; sessions whose name matches run on the remote backend."),
  });
}
