/** Types for agent-clis.mjs (pinned agent CLIs, their cache install, private HOMEs). */
export interface AgentCli {
  readonly pkg: string;
  readonly version: string;
  readonly bin: string;
  readonly postinstall: readonly string[] | undefined;
}
export declare const AGENT_CLIS: Readonly<Record<"claude" | "codex" | "gemini", AgentCli>>;
export declare function agentCliCacheDir(): string;
export declare function installAgentCli(
  name: "claude" | "codex" | "gemini",
  cacheDir?: string,
): Promise<{ bin: string; dir: string; cached: boolean }>;
export declare function npmUnreachable(): Promise<string | undefined>;
export declare function seedAgentHome(home: string): void;
