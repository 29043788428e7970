/**
 * The ACP provider's public surface: {@link AcpProvider} (which implements the structured-turn
 * capability, `TurnProvider` in ../provider.ts) and the uniform factory the composition root
 * and `gc conformance` call by name.
 */
import type { ProviderFactoryOptions } from "../factory.js";
import { AcpProvider } from "./provider.js";

export { AcpProvider, type AcpProviderOptions } from "./provider.js";
export type { AcpStatus, AcpTurn } from "./wire.js";

/** An MCP server of `session.acp.mcp_servers`, in ACP's stdio shape. */
function mcpServer(v: unknown): unknown {
  const o = (v ?? {}) as { name?: unknown; command?: unknown; args?: unknown; env?: unknown };
  const env = o.env && typeof o.env === "object" ? (o.env as Record<string, unknown>) : {};
  return {
    name: String(o.name ?? ""),
    command: String(o.command ?? ""),
    args: Array.isArray(o.args) ? o.args.map(String) : [],
    env: Object.entries(env).map(([name, value]) => ({ name, value: String(value) })),
  };
}

/**
 * Builds the ACP provider for a city. Sessions live under `<stateDir>/acp/`. Recognised
 * `settings` (city file `session.acp`): `mcp_servers` (`[{name, command, args, env}]`).
 */
export function createProvider(opts: ProviderFactoryOptions): AcpProvider {
  const s = opts.settings ?? {};
  return new AcpProvider({
    city: opts.city,
    cityId: opts.cityId,
    stateDir: opts.stateDir,
    mcpServers: Array.isArray(s.mcp_servers) ? s.mcp_servers.map(mcpServer) : [],
  });
}
