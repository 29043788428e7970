/**
 * City file text → typed {@link CityConfig}: YAML parsing with positions, schema decoding,
 * semantic validation and the defaults that depend on where the city lives. Pure: the
 * caller (load.ts) reads the file and detects the default session provider.
 */
import { basename, isAbsolute, resolve } from "node:path";
import { isMap, LineCounter, parseDocument } from "yaml";
import { ConfigError, type ConfigIssue } from "../base/errors.js";
import type { UsedVariable } from "../base/interpolate.js";
import { nameProblem } from "../base/names.js";
import { type DecodeContext, INVALID, type Position, positionOf } from "../base/schema-core.js";
import { defaultSocketName } from "../runtime/identity.js";
import { sessionProviderProblem } from "../runtime/registry/index.js";
import { CITY_SCHEMA, type CityFile, type SessionSection } from "./schema.js";
import { IssueReporter, validateCity } from "./validate.js";

/** The `session:` section with every default decided (durations in milliseconds). */
export type SessionConfig = Omit<SessionSection, "provider" | "tmux" | "auto"> & {
  /** `tmux`, `subprocess`, `exec:/abs/script`, `k8s`, `docker`, `auto`, `hybrid` or `fake`. */
  readonly provider: string;
  readonly tmux: { readonly socket: string };
  readonly auto: { readonly default: string };
};

/**
 * The validated city: every default applied, relative provider paths made absolute.
 * Durations are milliseconds. Agent paths stay as written (resolution anchors them).
 */
export type CityConfig = Omit<CityFile, "workspace" | "session"> & {
  readonly workspace: CityFile["workspace"] & { readonly name: string };
  readonly session: SessionConfig;
};

/** Input of {@link parseCity}. */
export interface ParseCityInput {
  /** The file's text. */
  readonly text: string;
  /** Path shown in messages (the file's absolute path). */
  readonly file: string;
  /** Directory relative paths resolve against. */
  readonly cityDir: string;
  /** The city's stable id (runtime/identity.ts), part of the default tmux socket. */
  readonly cityId?: string | undefined;
  /** The name stored with the id (runtime/identity.ts): the default socket's name part. */
  readonly identityName?: string | undefined;
  /** Variables for `${VAR}` interpolation. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Session provider when the file sets none (`tmux` or `subprocess`, from PATH detection). */
  readonly defaultProvider: string;
  /** Replaces `session.provider` (the `GC_SESSION` override); `undefined` = none. */
  readonly providerOverride?: string | undefined;
}

/** Output of {@link parseCity}. */
export interface ParsedCity {
  readonly config: CityConfig;
  /** Position of every value in the file, by key path (`agents[0].name`). */
  readonly positions: ReadonlyMap<string, Position>;
  /** Variables interpolated into the config (their values may be secrets). */
  readonly used: readonly UsedVariable[];
}

function firstLine(message: string): string {
  return (message.split("\n")[0] ?? message).replace(/ at line \d+, column \d+:?$/, "");
}

/** Anchors an `exec:` script path at the city directory. */
function absoluteProvider(provider: string, cityDir: string): string {
  if (!provider.startsWith("exec:")) return provider;
  const script = provider.slice("exec:".length);
  return `exec:${isAbsolute(script) ? script : resolve(cityDir, script)}`;
}

function finalize(file: CityFile, input: ParseCityInput, r: IssueReporter): CityConfig {
  let name = file.workspace.name;
  if (name === undefined) {
    const dirName = basename(input.cityDir);
    const why = nameProblem(dirName);
    if (why !== undefined && !r.tainted("workspace.name")) {
      r.add(
        "workspace",
        `workspace.name is not set and the directory name ${JSON.stringify(dirName)} is not a valid city name (${why}); set workspace.name`,
      );
    }
    name = dirName;
  }
  const s = file.session;
  const provider = absoluteProvider(s.provider ?? input.defaultProvider, input.cityDir);
  const kubeconfig = s.k8s.kubeconfig === undefined ? undefined : resolve(input.cityDir, s.k8s.kubeconfig);
  const session: SessionConfig = {
    ...s,
    provider,
    tmux: { socket: s.tmux.socket ?? defaultSocketName(input.identityName ?? name, input.cityId) },
    auto: { default: absoluteProvider(s.auto.default ?? input.defaultProvider, input.cityDir) },
    hybrid: {
      ...s.hybrid,
      local: absoluteProvider(s.hybrid.local, input.cityDir),
      remote: absoluteProvider(s.hybrid.remote, input.cityDir),
    },
    k8s: kubeconfig === undefined ? s.k8s : { ...s.k8s, kubeconfig },
  };
  const agents = file.agents.map((a) =>
    a.session === undefined ? a : { ...a, session: absoluteProvider(a.session, input.cityDir) },
  );
  return { ...file, workspace: { ...file.workspace, name }, session, agents };
}

/**
 * Parses, validates and completes a city file.
 * @throws ConfigError listing every problem (syntax, schema, semantics), each with
 * `file:line:col` and key path, in file order.
 */
export function parseCity(input: ParseCityInput): ParsedCity {
  const lineCounter = new LineCounter();
  const doc = parseDocument(input.text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const issues: ConfigIssue[] = [];
  for (const e of [...doc.errors, ...doc.warnings]) {
    const pos = e.linePos?.[0] ?? lineCounter.linePos(e.pos[0]);
    issues.push({ file: input.file, line: pos.line, col: pos.col, path: "", message: firstLine(e.message) });
  }
  if (issues.length > 0) throw new ConfigError(issues);

  const ctx: DecodeContext = {
    file: input.file,
    doc,
    lineCounter,
    env: input.env,
    issues,
    positions: new Map(),
    used: [],
  };
  const root = doc.contents;
  let file: CityFile;
  if (root === null || (!isMap(root) && (root as { value?: unknown }).value === null)) {
    // An editor that truncates before writing, a half-written file or a bad checkout must
    // never read as "a city with no agents" (which would stop every session).
    const message =
      "the city file is empty (no sections); a city needs at least `workspace:` (sessions keep their last good config)";
    throw new ConfigError([{ file: input.file, line: 1, col: 1, path: "", message }]);
  } else if (!isMap(root)) {
    const { line, col } = positionOf(root, ctx);
    const message = "the city file must be a map of sections (workspace, session, providers, agents, daemon)";
    throw new ConfigError([{ file: input.file, line, col, path: "", message }]);
  } else {
    const decoded = CITY_SCHEMA.decode(root, "", ctx);
    if (decoded === INVALID) throw new ConfigError(issues);
    file = decoded;
  }
  const reporter = new IssueReporter(input.file, ctx.positions, issues);
  if (input.providerOverride !== undefined) {
    // GC_SESSION is checked like session.provider and then replaces it.
    const why = sessionProviderProblem(input.providerOverride);
    if (why !== undefined) reporter.add("session.provider", `GC_SESSION: ${why}`);
    else file = { ...file, session: { ...file.session, provider: input.providerOverride } };
  }
  validateCity(file, reporter);
  const config = finalize(file, input, reporter);
  if (issues.length > 0) {
    throw new ConfigError([...issues].sort((a, b) => a.line - b.line || a.col - b.col));
  }
  return { config, positions: ctx.positions, used: ctx.used };
}
