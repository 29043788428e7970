/**
 * Field builders shared by the city file's schema (schema.ts) and the providers' own
 * `session.<provider>` sections (`internal/runtime/<name>/schema.ts`), so a name or a path
 * is checked the same way wherever it appears. Pure.
 */
import { MAX_NAME_LENGTH, nameProblem } from "./names.js";
import { s } from "./schema-builder.js";
import type { JsonSchema } from "./schema-core.js";

/** The JSON Schema of a gc name (agent, session, socket, namespace). */
export const NAME_JSON: JsonSchema = { pattern: "^[A-Za-z0-9][A-Za-z0-9._-]*$", maxLength: MAX_NAME_LENGTH };

/** A gc name: letters, digits, `.`, `_`, `-`, starting with a letter or digit. */
export const nameField = () => s.string({ check: (v) => nameProblem(v), json: NAME_JSON });

/** A non-empty path (relative ones are resolved against the city directory by their reader). */
export const pathField = () => s.string({ nonEmpty: true });
