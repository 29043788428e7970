/**
 * The config layer's I/O edge: finds and reads the city file, detects the default session
 * provider (tmux when it is on PATH, else subprocess), reads prompt templates and checks
 * that files the config names exist. Everything else is delegated to the pure parseCity.
 */

import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { access, readFile, stat } from "node:fs/promises";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { ConfigError, type ConfigIssue, describeError } from "../base/errors.js";
import type { Position } from "../base/schema-core.js";
import { type CityIdentity, cityIdentity, storedIdentity } from "../runtime/identity.js";
import { PROVIDERS } from "../runtime/registry/index.js";
import { locateCity } from "./locate.js";
import type { CityConfig } from "./parse.js";
import { cachedParse } from "./parse-cache.js";
import { PROMPT_PLACEHOLDERS, placeholderProblems } from "./placeholders.js";
import { secretValues } from "./redact.js";
import type { AgentConfig } from "./schema.js";
import { IssueReporter } from "./validate.js";

export { CITY_FILE_NAME, findCityDir, locateCity } from "./locate.js";

/** Finds an executable on PATH: its absolute path, or `undefined`. */
export type ExecutableLookup = (name: string, env: NodeJS.ProcessEnv) => Promise<string | undefined>;

/** Options of {@link loadCity}. */
export interface LoadCityOptions {
  /** City directory; default: the config file's directory, else the nearest one upward from `cwd` holding city.yaml. */
  readonly cityDir?: string | undefined;
  /** City file; default `<cityDir>/city.yaml`. */
  readonly configFile?: string | undefined;
  /** Environment for `${VAR}` interpolation, `GC_SESSION` and the PATH lookup. */
  readonly env: NodeJS.ProcessEnv;
  /** Where relative `cityDir`/`configFile` and the upward search start; default `process.cwd()`. */
  readonly cwd?: string | undefined;
  /** PATH lookup (injectable for tests); default {@link findExecutable}. */
  readonly lookup?: ExecutableLookup | undefined;
  /**
   * The running gc's build id: the parse is then cached under `<cityDir>/.gc` for it
   * (parse-cache.ts), written only with `writeParseCache` (commands that apply the file).
   */
  readonly parseCacheBuild?: string | undefined;
  readonly writeParseCache?: boolean | undefined;
}

/** A loaded, validated city. */
export interface LoadedCity {
  /** Absolute path of the city file. */
  readonly file: string;
  /** Absolute city directory (relative paths in the file resolve against it). */
  readonly cityDir: string;
  /**
   * The city's stable id, stored with the city (runtime/identity.ts): two cities of the
   * same name in two directories have two ids and never touch each other; a rename or a move
   * keeps it.
   */
  readonly cityId: string;
  /** The stored identity (id, name at creation, providers used). */
  readonly identity: CityIdentity;
  /** The typed config, defaults applied. */
  readonly config: CityConfig;
  /** Why `config.session.provider` (and `session.auto.default`) is what it is. */
  readonly defaultProviderReason: string;
  /** Contents of each agent's `prompt_template`, by agent name. */
  readonly promptTemplates: Readonly<Record<string, string>>;
  /** Position of every value in the file, by key path. */
  readonly positions: ReadonlyMap<string, Position>;
  /** Values interpolated from secret-looking variables: redact them from anything printed. */
  readonly secrets: readonly string[];
  /** `sha256:<hex>` of the file and prompt templates: equal revisions mean nothing changed. */
  readonly revision: string;
}

/** Default {@link ExecutableLookup}: the first executable `name` in `env.PATH`. */
export async function findExecutable(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

/** The session provider used when the file sets none, and why. */
export async function detectDefaultProvider(
  env: NodeJS.ProcessEnv,
  lookup: ExecutableLookup = findExecutable,
): Promise<{ readonly provider: "tmux" | "subprocess"; readonly reason: string }> {
  const tmux = await lookup("tmux", env);
  return tmux === undefined
    ? { provider: "subprocess", reason: "tmux not on PATH" }
    : { provider: "tmux", reason: `tmux found at ${tmux}` };
}

type Kind = "file" | "directory" | "any" | "executable";

/**
 * The directory that must already exist for a work dir to be created without surprise: the
 * parent of `template` (or the part before its first `{{placeholder}}` segment), when the
 * work dir lies outside the city directory. Inside the city directory gc creates it with
 * its parents (`workers/{{session}}`); `undefined` then. Pure.
 */
function workDirBase(cityDir: string, template: string): string | undefined {
  const full = resolve(cityDir, template);
  if (full === cityDir || full.startsWith(`${cityDir}/`)) return undefined;
  const segments = full.split("/");
  const dynamic = segments.findIndex((seg) => seg.includes("{{"));
  return dynamic < 0 ? dirname(full) : segments.slice(0, dynamic).join("/") || "/";
}

async function pathProblem(p: string, kind: Kind): Promise<string | undefined> {
  try {
    const st = await stat(p);
    if (kind === "directory" && !st.isDirectory()) return `${p} is not a directory`;
    if ((kind === "file" || kind === "executable") && !st.isFile()) return `${p} is not a file`;
    if (kind === "executable")
      await access(p, constants.X_OK).catch(() => Promise.reject(new Error("not executable")));
    return undefined;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return `${p} does not exist`;
    return `${p}: ${describeError(e)}`;
  }
}

/** Checks every file the config names, reads prompt templates; adds issues to `r`. */
async function checkFiles(
  config: CityConfig,
  cityDir: string,
  r: IssueReporter,
): Promise<Record<string, string>> {
  const checks: { path: string; target: string; kind: Kind; hint?: string }[] = [];
  const execOf = (p: string, where: string) => {
    if (p.startsWith("exec:"))
      checks.push({ path: where, target: p.slice("exec:".length), kind: "executable" });
  };
  const s = config.session;
  if (s.provider === "auto") execOf(s.auto.default, "session.auto.default");
  else if (s.provider === "hybrid") {
    execOf(s.hybrid.local, "session.hybrid.local");
    execOf(s.hybrid.remote, "session.hybrid.remote");
  } else execOf(s.provider, "session.provider");
  // Files a provider's section names (session.k8s.kubeconfig, …), as the registry declares.
  const sections = s as unknown as Readonly<Record<string, Readonly<Record<string, unknown>> | undefined>>;
  for (const e of PROVIDERS) {
    for (const key of e.fileSettings ?? []) {
      const v = sections[e.name]?.[key];
      if (typeof v === "string") {
        checks.push({ path: `session.${e.name}.${key}`, target: resolve(cityDir, v), kind: "file" });
      }
    }
  }
  config.agents.forEach((a, i) => {
    const at = `agents[${i}]`;
    if (a.session !== undefined) execOf(a.session, `${at}.session`);
    if (a.session_setup_script !== undefined) {
      checks.push({
        path: `${at}.session_setup_script`,
        target: resolve(cityDir, a.session_setup_script),
        kind: "file",
      });
    }
    if (a.overlay_dir !== undefined) {
      checks.push({ path: `${at}.overlay_dir`, target: resolve(cityDir, a.overlay_dir), kind: "directory" });
    }
    a.copy_files.forEach((c, k) => {
      const src = typeof c === "string" ? c : c.src;
      const p = typeof c === "string" ? `${at}.copy_files[${k}]` : `${at}.copy_files[${k}].src`;
      checks.push({ path: p, target: resolve(cityDir, src), kind: "any" });
    });
  });
  config.agents.forEach((a, i) => {
    const template = a.work_dir ?? a.dir;
    if (template === undefined || a.create_work_dir) return;
    const base = workDirBase(cityDir, template);
    if (base !== undefined) {
      checks.push({
        path: `agents[${i}].${a.work_dir !== undefined ? "work_dir" : "dir"}`,
        target: base,
        kind: "directory",
        hint: "the work dir's parent must exist (or set create_work_dir: true)",
      });
    }
  });
  const problems = await Promise.all(checks.map((c) => pathProblem(c.target, c.kind)));
  problems.forEach((why, k) => {
    const hint = checks[k]!.hint;
    if (why !== undefined) r.add(checks[k]!.path, hint ? `${why}: ${hint}` : why);
  });

  const templates: Record<string, string> = {};
  const withTemplate: { readonly a: AgentConfig; readonly i: number; readonly file: string }[] = [];
  config.agents.forEach((a, i) => {
    if (a.prompt_template !== undefined) withTemplate.push({ a, i, file: a.prompt_template });
  });
  await Promise.all(
    withTemplate.map(async ({ a, i, file }) => {
      const path = `agents[${i}].prompt_template`;
      const target = resolve(cityDir, file);
      let text: string;
      try {
        text = await readFile(target, "utf8");
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        r.add(
          path,
          code === "ENOENT" ? `${target} does not exist` : `cannot read ${target}: ${describeError(e)}`,
        );
        return;
      }
      for (const p of placeholderProblems(text, PROMPT_PLACEHOLDERS)) {
        const before = text.slice(0, p.offset).split("\n");
        r.issues.push({
          file: target,
          line: before.length,
          col: before[before.length - 1]!.length + 1,
          path,
          message: p.message,
        });
      }
      templates[a.name] = text;
    }),
  );
  return templates;
}

function providerReason(
  positions: ReadonlyMap<string, Position>,
  config: CityConfig,
  file: string,
  override: string | undefined,
  detected: string,
): string {
  if (override !== undefined) return `GC_SESSION=${override} in the environment`;
  if (config.session.provider === "auto") {
    return positions.has("session.auto.default")
      ? `session.provider auto with session.auto.default in ${file}`
      : `session.provider auto; session.auto.default not set: ${detected}`;
  }
  if (positions.has("session.provider")) return `session.provider in ${file}`;
  return `session.provider not set: ${detected}`;
}

/** The city's stored identity; a malformed file is a config error (what runs carries it). */
function identityOrThrow(cityDir: string, file: string): CityIdentity | undefined {
  try {
    return storedIdentity(cityDir);
  } catch (e) {
    throw new ConfigError(
      [
        {
          file,
          line: 1,
          col: 1,
          path: "",
          message: `the city's identity is unreadable: ${describeError(e)}`,
        },
      ],
      { cause: e },
    );
  }
}

/**
 * Finds, reads, validates and completes the city file; reads prompt templates and checks
 * the files it names. The session provider is, in order: `GC_SESSION` from `env`,
 * `session.provider` from the file, else tmux when on PATH, else subprocess.
 * @throws ConfigError listing every problem, each with `file:line:col` and key path.
 */
export async function loadCity(opts: LoadCityOptions): Promise<LoadedCity> {
  const { file, cityDir } = await locateCity(opts);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message =
      code === "ENOENT" ? "city file does not exist (run `gc init`)" : `cannot read: ${describeError(e)}`;
    throw new ConfigError([{ file, line: 1, col: 1, path: "", message }], { cause: e });
  }
  const detected = await detectDefaultProvider(opts.env, opts.lookup);
  const override = opts.env.GC_SESSION || undefined;
  const parse = (id: CityIdentity | undefined) =>
    cachedParse(
      {
        text,
        file,
        cityDir,
        cityId: id?.id,
        identityName: id?.name,
        env: opts.env,
        defaultProvider: detected.provider,
        providerOverride: override,
      },
      opts.parseCacheBuild === undefined
        ? undefined
        : { dir: join(cityDir, ".gc"), build: opts.parseCacheBuild, write: opts.writeParseCache === true },
    );
  let identity = identityOrThrow(cityDir, file);
  let parsed = parse(identity);
  const issues: ConfigIssue[] = [];
  const reporter = new IssueReporter(file, parsed.positions, issues);
  const promptTemplates = await checkFiles(parsed.config, cityDir, reporter);
  if (issues.length > 0) {
    const order = (i: ConfigIssue) => (i.file === file ? 0 : 1);
    throw new ConfigError(
      [...issues].sort((a, b) => order(a) - order(b) || a.line - b.line || a.col - b.col),
    );
  }
  if (!identity) {
    // The first load of a new, valid city: its identity is created with the name it has now
    // (an invalid file creates nothing).
    identity = cityIdentity(cityDir, parsed.config.workspace.name);
    parsed = parse(identity);
  }
  const cityId = identity.id;

  const defaultProviderReason = providerReason(
    parsed.positions,
    parsed.config,
    file,
    override,
    detected.reason,
  );

  const h = createHash("sha256").update(text);
  for (const name of Object.keys(promptTemplates).sort()) h.update(`\0${name}\0${promptTemplates[name]}`);
  return {
    file,
    cityDir,
    cityId,
    identity,
    config: parsed.config,
    defaultProviderReason,
    promptTemplates,
    positions: parsed.positions,
    secrets: secretValues(parsed.used),
    revision: `sha256:${h.digest("hex")}`,
  };
}
