/**
 * The `session.acp` section of the city file, declared by the ACP provider and placed in the
 * city schema by the provider registry (registry.ts). Pure and light.
 */
import { s } from "../../base/schema-builder.js";

/** `session.acp`. */
export const ACP_SETTINGS_SCHEMA = s.object({
  mcp_servers: s
    .array(
      s.object({
        name: s.string({ nonEmpty: true }),
        command: s.string({ nonEmpty: true }).describe("Absolute path of the MCP server program."),
        args: s.array(s.string()).default([]),
        env: s.record(s.string()).default({}),
      }),
    )
    .default([])
    .describe("MCP servers (stdio) handed to every ACP session's session/new."),
});
