/**
 * How each agent CLI is pointed at the double and started with no first-run dialog: what its
 * private HOME holds, which environment it gets, and its city-file entries (observed with
 * the pinned versions; see docs/agents.md). Used by the live test and bench/turns.mjs.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The CLIs run through real turns. */
export const TURN_CLIS = ["claude", "codex", "gemini", "opencode"] as const;
export type TurnCli = (typeof TURN_CLIS)[number];

/** One agent of a city: its CLI, where the CLI is installed, its HOME and work dir, the double's URL. */
export interface CliAgent {
  readonly name: string;
  readonly cli: TurnCli;
  readonly bin: string;
  readonly home: string;
  readonly work: string;
  readonly url: string;
}

/** The model name the double is asked for (an unknown name: Codex then offers its plain shell tool). */
const MODEL = "test-model";

const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

function write(path: string, text: string): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}

/**
 * Seeds `a.home` so the CLI starts at its input prompt, with its permission prompts on, talking
 * to `a.url`; returns the environment it needs. Secrets: dummy keys only.
 */
export function seedCli(a: CliAgent): Record<string, string> {
  mkdirSync(a.work, { recursive: true });
  mkdirSync(a.home, { recursive: true });
  switch (a.cli) {
    case "claude":
      write(
        join(a.home, ".claude.json"),
        json({
          hasCompletedOnboarding: true,
          theme: "dark",
          hasSeenAutoDefaultNotice: true,
          hasSeenAutoDefaultNudge: true,
          projects: { [a.work]: { hasTrustDialogAccepted: true } },
        }),
      );
      // Claude Code starts in auto mode (no permission prompts) unless told otherwise.
      write(join(a.home, ".claude", "settings.json"), json({ permissions: { defaultMode: "default" } }));
      return {
        ANTHROPIC_BASE_URL: a.url,
        // A token, not ANTHROPIC_API_KEY: no "use this API key?" dialog.
        ANTHROPIC_AUTH_TOKEN: "dummy-token",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      };
    case "codex":
      write(
        join(a.home, ".codex", "config.toml"),
        [
          `model_provider = "double"`,
          `model = "${MODEL}"`,
          `[model_providers.double]`,
          `name = "double"`,
          `base_url = ${JSON.stringify(`${a.url}/v1`)}`,
          `env_key = "OPENAI_API_KEY"`,
          `wire_api = "responses"`,
          `[projects.${JSON.stringify(a.work)}]`,
          `trust_level = "trusted"`,
          "",
        ].join("\n"),
      );
      return { OPENAI_API_KEY: "sk-dummy-key" };
    case "gemini":
      write(
        join(a.home, ".gemini", "settings.json"),
        json({ security: { auth: { selectedType: "gemini-api-key" } } }),
      );
      write(join(a.home, ".gemini", "trustedFolders.json"), json({ [a.work]: "TRUST_FOLDER" }));
      return { GEMINI_API_KEY: "dummy-gemini-key", GOOGLE_GEMINI_BASE_URL: a.url };
    case "opencode":
      write(
        join(a.home, ".config", "opencode", "opencode.json"),
        json({
          model: `double/${MODEL}`,
          small_model: `double/${MODEL}`,
          autoupdate: false,
          share: "disabled",
          permission: { bash: "ask" },
          provider: {
            double: {
              npm: "@ai-sdk/openai-compatible",
              name: "Double",
              options: { baseURL: `${a.url}/v1`, apiKey: "dummy-key" },
              models: { [MODEL]: { name: "Test model" } },
            },
          },
        }),
      );
      return {
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_AUTOUPDATE: "1",
        OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
        OPENCODE_DISABLE_SHARE: "1",
      };
  }
}

/** Extra arguments of each CLI (Codex: no app-server daemon outliving the TUI). */
const ARGS: Readonly<Record<TurnCli, readonly string[]>> = {
  claude: [],
  codex: ["--no-daemon"],
  gemini: [],
  opencode: [],
};

/**
 * A city file running `agents` (each seeded with {@link seedCli}) on `provider`, with
 * `approval` as its session.approval (YAML flow text). `@NAME@` stays for makeCity.
 */
export function turnCityYaml(provider: string, agents: readonly CliAgent[], approval = "ask"): string {
  const q = JSON.stringify;
  const lines = [
    "workspace: { name: '@NAME@' }",
    `session: { provider: ${provider}, startup_timeout: 240s, approval: ${approval} }`,
    "providers:",
  ];
  for (const a of agents) lines.push(`  ${a.name}: { command: ${q(a.bin)}, args: ${q(ARGS[a.cli])} }`);
  lines.push("agents:");
  for (const a of agents) {
    const env = { HOME: a.home, ...seedCli(a) };
    lines.push(
      `  - name: ${a.name}`,
      `    provider: ${a.name}`,
      `    work_dir: ${q(a.work)}`,
      `    env: ${q(env)}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
