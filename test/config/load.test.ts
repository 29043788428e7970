/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: city files use ${VAR} interpolation */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, formatConfigIssue } from "../../internal/base/errors.js";
import {
  detectDefaultProvider,
  findCityDir,
  findExecutable,
  type LoadCityOptions,
  loadCity,
} from "../../internal/config/load.js";
import { redactDeep } from "../../internal/config/redact.js";
import { resolveCity } from "../../internal/config/resolve.js";
import { NOW } from "./helpers.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const withTmux = async () => "/usr/bin/tmux";
const withoutTmux = async () => undefined;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "gc-config-load-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(rel: string, text: string): Promise<string> {
  const p = join(dir, rel);
  await mkdir(join(p, ".."), { recursive: true });
  await writeFile(p, text);
  return p;
}

async function loadIssues(opts: LoadCityOptions): Promise<string[]> {
  try {
    await loadCity(opts);
  } catch (e) {
    if (e instanceof ConfigError) return e.issues.map((i) => formatConfigIssue(i).replaceAll(`${dir}/`, ""));
    throw e;
  }
  return [];
}

describe("findCityDir", () => {
  it("findCityDir: returns the nearest directory upward holding city.yaml", async () => {
    await write("city.yaml", "{}\n");
    await mkdir(join(dir, "a/b/c"), { recursive: true });
    expect(await findCityDir(join(dir, "a/b/c"))).toBe(dir);
    await write("a/city.yaml", "{}\n");
    expect(await findCityDir(join(dir, "a/b/c"))).toBe(join(dir, "a"));
  });

  it("findCityDir: ignores a directory named city.yaml", async () => {
    await mkdir(join(dir, "x/city.yaml"), { recursive: true });
    const found = await findCityDir(join(dir, "x"));
    expect(found === undefined || !found.startsWith(dir)).toBe(true);
  });
});

describe("default session provider", () => {
  it("detectDefaultProvider: tmux when on PATH, with where", async () => {
    expect(await detectDefaultProvider({}, withTmux)).toEqual({
      provider: "tmux",
      reason: "tmux found at /usr/bin/tmux",
    });
  });

  it("detectDefaultProvider: subprocess when tmux is not on PATH", async () => {
    expect(await detectDefaultProvider({}, withoutTmux)).toEqual({
      provider: "subprocess",
      reason: "tmux not on PATH",
    });
  });

  it("findExecutable: finds executables on PATH only", async () => {
    await write("bin1/tmux", "plain file\n");
    const exe = await write("bin2/tmux", "#!/bin/sh\n");
    await chmod(exe, 0o755);
    const env = { PATH: [join(dir, "bin1"), "relative/dir", join(dir, "bin2")].join(":") };
    expect(await findExecutable("tmux", env)).toBe(exe);
    expect(await findExecutable("tmux", { PATH: join(dir, "bin1") })).toBeUndefined();
    expect(await findExecutable("tmux", {})).toBeUndefined();
  });

  it.each([
    ["agents: []\n", withTmux, {}, "tmux", "session.provider not set: tmux found at /usr/bin/tmux"],
    ["agents: []\n", withoutTmux, {}, "subprocess", "session.provider not set: tmux not on PATH"],
    ["session: { provider: subprocess }\n", withTmux, {}, "subprocess", "session.provider in <file>"],
    [
      "session: { provider: tmux }\n",
      withoutTmux,
      { GC_SESSION: "fake" },
      "fake",
      "GC_SESSION=fake in the environment",
    ],
    [
      "session: { provider: auto }\n",
      withoutTmux,
      {},
      "auto",
      "session.provider auto; session.auto.default not set: tmux not on PATH",
    ],
  ])("loadCity: %j with %o → %s", async (yaml, lookup, env, provider, reason) => {
    const file = await write("city.yaml", yaml);
    const city = await loadCity({ cityDir: dir, env, lookup });
    expect(city.config.session.provider).toBe(provider);
    expect(city.defaultProviderReason).toBe(reason.replace("<file>", file));
  });

  it("loadCity: auto's default backend is the detected one", async () => {
    await write("city.yaml", "session: { provider: auto }\n");
    const city = await loadCity({ cityDir: dir, env: {}, lookup: withTmux });
    expect(city.config.session.auto.default).toBe("tmux");
  });

  it("loadCity: a bad GC_SESSION is a config error", async () => {
    await write("city.yaml", "{}\n");
    expect(await loadIssues({ cityDir: dir, env: { GC_SESSION: "tmuxx" }, lookup: withTmux })).toEqual([
      'city.yaml:1:1: session.provider: GC_SESSION: unknown session provider "tmuxx" (did you mean "tmux"?); this build has tmux, subprocess, exec:<script>, k8s, docker, acp, auto, hybrid',
    ]);
  });
});

describe("loadCity", () => {
  it("loadCity: finds city.yaml upward from cwd and fills defaults", async () => {
    await write("city.yaml", "agents:\n  - name: a\n    provider: sh\n");
    await mkdir(join(dir, "sub/deeper"), { recursive: true });
    const city = await loadCity({ env: {}, cwd: join(dir, "sub/deeper"), lookup: withTmux });
    expect(city.cityDir).toBe(dir);
    expect(city.file).toBe(join(dir, "city.yaml"));
    expect(city.config.workspace.name).toBe(dir.split("/").pop());
    // The default socket carries the city's identity: its name plus the id of its directory.
    expect(city.cityId).toMatch(/^[0-9a-f]{10}$/);
    expect(city.config.session.tmux.socket).toBe(`gc-${city.config.workspace.name}-${city.cityId}`);
    expect(city.revision).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("loadCity: --config anchors the city at the file's directory", async () => {
    await write("conf/other.yaml", "workspace: { name: other }\n");
    const city = await loadCity({ configFile: "conf/other.yaml", cwd: dir, env: {}, lookup: withTmux });
    expect(city.cityDir).toBe(join(dir, "conf"));
    expect(city.config.workspace.name).toBe("other");
  });

  it("loadCity: a missing file is a ConfigError naming it", async () => {
    expect(await loadIssues({ cityDir: dir, env: {}, lookup: withTmux })).toEqual([
      "city.yaml:1:1: city file does not exist (run `gc init`)",
    ]);
  });

  it("loadCity: no city anywhere upward is a ConfigError", async () => {
    const issues = await loadIssues({ env: {}, cwd: dir, lookup: withTmux });
    // The temp dir's ancestors hold no city.yaml on a sane machine.
    expect(issues[0]).toContain("no city.yaml here or in any parent directory");
  });

  it("loadCity: an invalid directory name without workspace.name is an error", async () => {
    const bad = join(dir, "my city");
    await mkdir(bad);
    await writeFile(join(bad, "city.yaml"), "agents: []\n");
    const issues = await loadIssues({ cityDir: bad, env: {}, lookup: withTmux });
    expect(issues).toEqual([
      'my city/city.yaml:1:1: workspace: workspace.name is not set and the directory name "my city" is not a valid city name (must match [A-Za-z0-9][A-Za-z0-9._-]*); set workspace.name',
    ]);
  });

  it("loadCity: reads prompt templates; the revision follows their content", async () => {
    await write(
      "city.yaml",
      "agents:\n  - name: a\n    provider: claude\n    prompt_template: prompts/a.md\n",
    );
    await write("prompts/a.md", "first {{agent}}\n");
    const one = await loadCity({ cityDir: dir, env: {}, lookup: withTmux });
    expect(one.promptTemplates).toEqual({ a: "first {{agent}}\n" });
    expect((await loadCity({ cityDir: dir, env: {}, lookup: withTmux })).revision).toBe(one.revision);
    await write("prompts/a.md", "second\n");
    const two = await loadCity({ cityDir: dir, env: {}, lookup: withTmux });
    expect(two.revision).not.toBe(one.revision);
    expect(resolveCity(two, { now: NOW })[0]!.config.prompt).toMatch(/\n\nsecond\n$/);
  });

  it("loadCity: checks that named files exist, with their kind", async () => {
    await write(
      "city.yaml",
      [
        'session: { provider: "exec:./provider.sh" }',
        "agents:",
        "  - name: a",
        "    provider: sh",
        "    overlay_dir: overlay.txt",
        "    session_setup_script: scripts",
        "    copy_files: [present.md, { src: absent.md }]",
        "",
      ].join("\n"),
    );
    await write("provider.sh", "#!/bin/sh\n"); // not executable
    await write("overlay.txt", "a file, not a dir\n");
    await mkdir(join(dir, "scripts"));
    await write("present.md", "x\n");
    expect(await loadIssues({ cityDir: dir, env: {}, lookup: withTmux })).toEqual([
      "city.yaml:1:22: session.provider: provider.sh: not executable",
      "city.yaml:5:18: agents[0].overlay_dir: overlay.txt is not a directory",
      "city.yaml:6:27: agents[0].session_setup_script: scripts is not a file",
      "city.yaml:7:37: agents[0].copy_files[1].src: absent.md does not exist",
    ]);
  });

  it("loadCity: a provider section's file keys (session.k8s.kubeconfig, from the registry) resolve against the city directory", async () => {
    const yaml = (kc: string) =>
      ["session:", "  provider: k8s", "  k8s:", "    image: agent:1", `    kubeconfig: ${kc}`, ""].join("\n");
    await write("city.yaml", yaml("./kube/config"));
    await write("kube/config", "apiVersion: v1\n");
    // The process's cwd is not the city directory: the relative path is still found.
    expect(process.cwd()).not.toBe(dir);
    expect(await loadIssues({ cityDir: dir, env: {}, lookup: withTmux })).toEqual([]);
    await write("city.yaml", yaml("./kube/absent"));
    expect(await loadIssues({ cityDir: dir, env: {}, lookup: withTmux })).toEqual([
      "city.yaml:5:17: session.k8s.kubeconfig: kube/absent does not exist",
    ]);
  });

  it("loadCity: a work_dir outside the city whose parent is missing is an error unless create_work_dir", async () => {
    const outside = join(dir, "..", `gc-nowhere-${process.pid}`, "deep");
    await write(
      "city.yaml",
      [
        "agents:",
        "  - name: a",
        "    provider: sh",
        `    work_dir: ${outside}/dir`,
        "  - name: b",
        "    provider: sh",
        `    work_dir: ${outside}/{{session}}`,
        "  - name: inside",
        "    provider: sh",
        "    work_dir: not/yet/{{session}}",
        "",
      ].join("\n"),
    );
    const issues = await loadIssues({ cityDir: dir, env: {}, lookup: withTmux });
    expect(issues).toHaveLength(2);
    expect(issues[0]).toMatch(
      /agents\[0\]\.work_dir: .*deep does not exist: the work dir's parent must exist \(or set create_work_dir: true\)$/,
    );
    expect(issues[1]).toMatch(/agents\[1\]\.work_dir: .*deep does not exist/);
    const optedIn = (await readFile(join(dir, "city.yaml"), "utf8")).replaceAll(
      "    provider: sh\n    work_dir: /",
      "    provider: sh\n    create_work_dir: true\n    work_dir: /",
    );
    await write("city.yaml", optedIn);
    expect(await loadIssues({ cityDir: dir, env: {}, lookup: withTmux })).toEqual([]);
  });

  it("loadCity: every interpolated value is listed for redaction, whatever its variable's name", async () => {
    await write(
      "city.yaml",
      'agents:\n  - name: a\n    start_command: "cli --key ${API_TOKEN} --user ${USER_NAME}"\n',
    );
    const city = await loadCity({
      cityDir: dir,
      env: { API_TOKEN: "tok-123456", USER_NAME: "alice" },
      lookup: withTmux,
    });
    expect(city.secrets).toEqual(["tok-123456", "alice"]);
    const [d] = redactDeep(resolveCity(city, { now: NOW }), city.secrets);
    expect(d!.config.command).toBe("cli --key [redacted] --user [redacted]");
  });

  it("loadCity: config.example.yaml loads with an empty environment", async () => {
    const city = await loadCity({
      configFile: join(REPO, "config.example.yaml"),
      env: {},
      lookup: withoutTmux,
    });
    expect(city.config.workspace.name).toBe("demo");
    expect(city.config.session.provider).toBe("subprocess");
    const names = resolveCity(city, { now: NOW }).map((d) => d.name);
    expect(names).toEqual(["mayor", "worker-1", "worker-2", "shell", "reviewer"]);
  });
});
