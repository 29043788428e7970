/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: city files use ${VAR} interpolation */
/**
 * `gc init` and `gc config validate|show|schema` through the built binary, against temp
 * dirs (removed after each test) and the broken-config corpus.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { parse as parseYaml } from "yaml";
import { type GcResult, runGc } from "../support/city.js";
import { expectedIssues, INVALID_CASES, INVALID_DIR } from "./corpus.js";
import { jsonSchemaErrors } from "./json-schema-check.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
/** An environment where the session provider is decided by PATH alone. */
const CLEAN_ENV = { GC_SESSION: undefined, GC_CITY: undefined };
/** A PATH with no tmux on it (an empty directory; node itself runs by absolute path). */
const NO_TMUX_PATH = realpathSync(mkdtempSync(join(tmpdir(), "gc-config-empty-path-")));
afterAll(() => rmSync(NO_TMUX_PATH, { recursive: true, force: true }));

function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-config-cli-")));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function gc(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<GcResult> {
  return runGc(args, { ...opts, env: { ...CLEAN_ENV, ...opts.env } });
}

describe("gc init", () => {
  it("init: writes a starter city that validates and resolves with no agent CLI", async () => {
    const dir = join(tempDir(), "my-city");
    const r = await gc(["init", dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`wrote ${dir}/city.yaml`);
    const text = readFileSync(join(dir, "city.yaml"), "utf8");
    expect(text.split("\n")[0]).toBe("# yaml-language-server: $schema=./city.schema.json");
    expect(text).toContain("name: my-city");
    expect(JSON.parse(readFileSync(join(dir, "city.schema.json"), "utf8"))).toEqual(
      JSON.parse(readFileSync(join(REPO, "city.schema.json"), "utf8")),
    );
    expect(
      jsonSchemaErrors(JSON.parse(readFileSync(join(REPO, "city.schema.json"), "utf8")), parseYaml(text)),
    ).toEqual([]);

    const v = await gc(["--city", dir, "config", "validate"]);
    expect(v).toMatchObject({ code: 0, stderr: "" });
    const show = await gc(["--city", dir, "--json", "config", "show"], { env: { PATH: NO_TMUX_PATH } });
    expect(show.code).toBe(0);
    const doc = JSON.parse(show.stdout) as {
      provider: { name: string };
      sessions: { name: string; config: { command: string } }[];
    };
    expect(doc.provider.name).toBe("subprocess");
    expect(doc.sessions.map((s) => [s.name, s.config.command])).toEqual([
      ["repl", "python3 -i -q"],
      ["worker-1", "sh -i"],
      ["worker-2", "sh -i"],
    ]);
  });

  it("init: refuses to overwrite an existing city.yaml and leaves it untouched", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "city.yaml"), "# mine\n");
    const r = await gc(["init"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${dir}/city.yaml already exists; not overwriting it`);
    expect(readFileSync(join(dir, "city.yaml"), "utf8")).toBe("# mine\n");
  });

  it("init: a directory name that is not a valid city name gets a cleaned one", async () => {
    const dir = join(tempDir(), "My City!");
    expect((await gc(["init", dir])).code).toBe(0);
    expect(readFileSync(join(dir, "city.yaml"), "utf8")).toContain("name: My-City-");
    expect((await gc(["--city", dir, "config", "validate"])).code).toBe(0);
  });

  it("init: more than one DIR is a usage error", async () => {
    expect((await gc(["init", "a", "b"])).code).toBe(2);
  });
});

describe("gc config", () => {
  it("config validate: config.example.yaml is valid (exit 0)", async () => {
    const r = await gc(["config", "validate", join(REPO, "config.example.yaml")]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toContain("config.example.yaml: ok (4 agents, 5 sessions)");
    const viaFlag = await gc(["--config", "config.example.yaml", "config", "validate"], { cwd: REPO });
    expect(viaFlag.code).toBe(0);
  });

  it("config schema: prints the committed JSON Schema, which accepts config.example.yaml", async () => {
    const r = await gc(["config", "schema"]);
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(schema).toEqual(JSON.parse(readFileSync(join(REPO, "city.schema.json"), "utf8")));
    const example = parseYaml(readFileSync(join(REPO, "config.example.yaml"), "utf8"));
    expect(jsonSchemaErrors(schema, example)).toEqual([]);
  });

  // One process per corpus file: give the harness room on a busy machine (not a speed claim).
  it("config validate: every corpus file exits 2 with its issues at file:line:col, touching nothing", {
    timeout: 300_000,
  }, async () => {
    const results = new Map<string, GcResult>();
    // Four at a time: a spawn each, on a small machine.
    for (let i = 0; i < INVALID_CASES.length; i += 4) {
      const batch = INVALID_CASES.slice(i, i + 4);
      const rs = await Promise.all(
        batch.map((name) => gc(["config", "validate", `${INVALID_DIR}/${name}.yaml`])),
      );
      batch.forEach((name, k) => {
        results.set(name, rs[k]!);
      });
    }
    for (const name of INVALID_CASES) {
      const r = results.get(name)!;
      expect(r.code, name).toBe(2);
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines.at(-1), name).toMatch(/problems?; nothing was changed$/);
      const got = lines.slice(0, -1).map((l) => l.replaceAll(`${INVALID_DIR}/`, ""));
      expect(got, name).toEqual(expectedIssues(name));
      for (const l of lines.slice(0, -1)) expect(l).toMatch(/^\/\S+:\d+:\d+: /);
    }
    expect(existsSync(join(INVALID_DIR, ".gc"))).toBe(false);
  });

  it("config validate --json: issues with file, line, col, path and message", async () => {
    const r = await gc(["--json", "config", "validate", `${INVALID_DIR}/many-problems-at-once.yaml`]);
    expect(r.code).toBe(2);
    const doc = JSON.parse(r.stdout) as {
      valid: boolean;
      issues: { line: number; col: number; path: string }[];
    };
    expect(doc.valid).toBe(false);
    expect(doc.issues[0]).toEqual({
      file: `${INVALID_DIR}/many-problems-at-once.yaml`,
      line: 2,
      col: 3,
      path: "workspace.nam",
      message: 'unknown key "nam" (did you mean "name"?)',
    });
    expect(doc.issues).toHaveLength(5);
  });

  it("config show: says which provider was chosen and why", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "city.yaml"),
      "workspace: { name: demo }\nagents:\n  - name: a\n    provider: sh\n",
    );
    const noTmux = await gc(["--city", dir, "config", "show"], { env: { PATH: NO_TMUX_PATH } });
    expect(noTmux.code).toBe(0);
    expect(noTmux.stdout).toContain("provider  subprocess (session.provider not set: tmux not on PATH)");
    const fake = await gc(["--city", dir, "config", "show"], { env: { GC_SESSION: "fake" } });
    expect(fake.stdout).toContain("provider  fake (GC_SESSION=fake in the environment)");
  });

  it("config show: secrets are redacted in text and JSON output", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "city.yaml"),
      [
        "agents:",
        "  - name: a",
        "    provider: claude",
        '    args: ["--key", "${MY_SECRET}"]',
        "    env:",
        "      API_TOKEN: literal-token-value",
        '      GH_PASSWORD: "${MY_SECRET}"',
        "      LOG_LEVEL: debug",
        "",
      ].join("\n"),
    );
    const env = { MY_SECRET: "hunter2-hunter2" };
    for (const args of [
      ["config", "show"],
      ["--json", "config", "show"],
    ]) {
      const r = await gc(["--city", dir, ...args], { env });
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain("hunter2-hunter2");
      expect(r.stdout).not.toContain("literal-token-value");
      expect(r.stdout).toContain("[redacted]");
      expect(r.stdout).toContain("debug");
    }
  });

  it("config: a missing city is a config error (exit 2)", async () => {
    const r = await gc(["--city", tempDir(), "config", "show"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("city.yaml:1:1: city file does not exist (run `gc init`)");
  });

  it("config: unknown or missing subcommands are usage errors (exit 2)", async () => {
    expect((await gc(["config", "frobnicate"])).code).toBe(2);
    expect((await gc(["config"])).code).toBe(2);
    expect((await gc(["config", "schema", "extra"])).code).toBe(2);
  });
});
