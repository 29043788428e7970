/**
 * The `session.tmux` section of the city file, declared by the tmux provider itself and
 * placed in the city schema by the provider registry (registry.ts). Pure.
 */
import { nameField } from "../../base/fields.js";
import { s } from "../../base/schema-builder.js";

/** `session.tmux`. */
export const TMUX_SETTINGS_SCHEMA = s.object({
  socket: nameField()
    .optional()
    .describe("tmux socket name (-L); default gc-<city>-<id of the city directory>."),
});
