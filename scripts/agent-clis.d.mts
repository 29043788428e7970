/** Types for agent-clis.mjs (pinned agent CLIs, their cache install, private HOMEs). */
export interface AgentCli {
  readonly pkg: string;
  readonly version: string;
  readonly bin: string;
  readonly postinstall: readonly string[] | undefined;
}
/** The pinned agent CLIs. */
export type AgentCliName =
  | "claude"
  | "codex"
  | "gemini"
  | "claude-code-acp"
  | "codex-acp"
  | "copilot"
  | "opencode";
export declare const AGENT_CLIS: Readonly<Record<AgentCliName, AgentCli>>;
export declare function agentCliCacheDir(): string;
export declare function installAgentCli(
  name: AgentCliName,
  cacheDir?: string,
): Promise<{ bin: string; dir: string; cached: boolean }>;
export declare function npmUnreachable(): Promise<string | undefined>;
export declare function seedAgentHome(home: string): void;
