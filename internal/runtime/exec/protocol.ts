/**
 * The exec session protocol as data: the operation table (names, argv, stdin, stdout, what
 * exit 2 means), the exit codes, the start/run-live JSON document and the strict parsers for
 * script output. Wire-compatible with Gas City's exec protocol (v1) plus documented v2
 * extensions. Used by the exec provider, its probe, and docs/exec-protocol.md (which a test
 * checks against {@link renderOperationTable}). Pure.
 */
import { ProviderError } from "../../base/errors.js";
import type { StartConfig } from "../provider.js";

/** The protocol version gc speaks; given to scripts as `GC_EXEC_PROTOCOL`. */
export const EXEC_PROTOCOL_VERSION = 2;

/** Exit codes of a script call. 3–7 are v2 and only honoured from scripts that declare protocol ≥ 2. */
export const EXIT = {
  /** Success. */
  OK: 0,
  /** Failure; stderr is the message. */
  FAILED: 1,
  /** Unknown operation (forward compatibility): a no-op for commands, "unsupported" for queries. */
  UNKNOWN_OP: 2,
  /** v2: the session does not exist (or is not owned by this city). */
  NOT_FOUND: 3,
  /** v2, start: a live session already has that name. */
  EXISTS: 4,
  /** v2, start: the program exited before startup completed; nothing is left behind. */
  DIED: 5,
  /** v2, start/run-live: a hook failed; stderr starts with the hook name (`pre_start: …`). */
  HOOK_FAILED: 6,
  /** v2, get-meta: the key is not set (an empty value is exit 0 with empty stdout). */
  UNSET: 7,
} as const;

/** Every operation name of the protocol. */
export type ExecOperationName =
  | "capabilities"
  | "start"
  | "stop"
  | "interrupt"
  | "is-running"
  | "attach"
  | "is-attached"
  | "process-alive"
  | "nudge"
  | "set-meta"
  | "get-meta"
  | "remove-meta"
  | "peek"
  | "list-running"
  | "get-last-activity"
  | "clear-scrollback"
  | "copy-to"
  | "send-keys"
  | "run-live"
  | "check-image"
  | "copy-from";

/** One row of the protocol. */
export interface ExecOperation {
  readonly op: ExecOperationName;
  /** Protocol version that introduced it (1 = the reference protocol). */
  readonly since: 1 | 2;
  /** argv after `<script> <op>`. */
  readonly argv: string;
  readonly stdin: string;
  readonly stdout: string;
  /** `command` ops change things; `query` ops only read. */
  readonly kind: "command" | "query";
  /** What gc does when the script exits 2 for this operation. */
  readonly onUnknown: string;
  /** A conformant script must implement it (exit 2 there is a conformance failure). */
  readonly required: boolean;
  /**
   * The probe may run it against a session name that cannot exist (read-only, no side
   * effects) to learn whether a script without `capabilities` implements it.
   */
  readonly probe: boolean;
}

/** The operation table: the single source of truth for the provider, the probe and the docs. */
export const EXEC_OPERATIONS: readonly ExecOperation[] = [
  {
    op: "capabilities",
    since: 2,
    argv: "(none)",
    stdin: "–",
    stdout: 'JSON `{"protocol":2,"operations":[…],"backend":{…}}`',
    kind: "query",
    onUnknown: "protocol v1: the probe infers support per operation",
    required: false,
    probe: false,
  },
  {
    op: "start",
    since: 1,
    argv: "`<name>`",
    stdin: "start JSON",
    stdout: "–",
    kind: "command",
    onUnknown: "UnsupportedError",
    required: true,
    probe: false,
  },
  {
    op: "stop",
    since: 1,
    argv: "`<name>`",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: true,
    probe: false,
  },
  {
    op: "interrupt",
    since: 1,
    argv: "`<name>`",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: true,
    probe: false,
  },
  {
    op: "is-running",
    since: 1,
    argv: "`<name>`",
    stdin: "–",
    stdout: "`true` or `false`",
    kind: "query",
    onUnknown: "UnsupportedError",
    required: true,
    probe: true,
  },
  {
    op: "attach",
    since: 1,
    argv: "`<name>`",
    stdin: "the caller's TTY (stdio inherited)",
    stdout: "the caller's TTY",
    kind: "command",
    onUnknown: "UnsupportedError",
    required: false,
    probe: false,
  },
  {
    op: "is-attached",
    since: 2,
    argv: "`<name>`",
    stdin: "–",
    stdout: "`true` or `false`",
    kind: "query",
    onUnknown: "false",
    required: false,
    probe: true,
  },
  {
    op: "process-alive",
    since: 1,
    argv: "`<name>`",
    stdin: "process names, one per line, no trailing newline",
    stdout: "`true` or `false`",
    kind: "query",
    onUnknown: "falls back to is-running",
    required: true,
    probe: true,
  },
  {
    op: "nudge",
    since: 1,
    argv: "`<name>`",
    stdin: "the text, no trailing newline",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: true,
    probe: false,
  },
  {
    op: "set-meta",
    since: 1,
    argv: "`<name> <key>`",
    stdin: "the value (exact bytes; v1: framed by gc, see below)",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: true,
    probe: false,
  },
  {
    op: "get-meta",
    since: 1,
    argv: "`<name> <key>`",
    stdin: "–",
    stdout: "the value (v2: exact bytes; v1: the stored bytes, trailing newlines trimmed, empty = unset)",
    kind: "query",
    onUnknown: "UnsupportedError",
    required: true,
    probe: true,
  },
  {
    op: "remove-meta",
    since: 1,
    argv: "`<name> <key>`",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: true,
    probe: false,
  },
  {
    op: "peek",
    since: 1,
    argv: "`<name> <lines>` (decimal; ≤ 0 = all)",
    stdin: "–",
    stdout: "screen text, newest line last",
    kind: "query",
    onUnknown: "UnsupportedError",
    required: true,
    probe: true,
  },
  {
    op: "list-running",
    since: 1,
    argv: "`<prefix>` (may be an empty argument)",
    stdin: "–",
    stdout: "one session name per line",
    kind: "query",
    onUnknown: "UnsupportedError",
    required: true,
    probe: true,
  },
  {
    op: "get-last-activity",
    since: 1,
    argv: "`<name>`",
    stdin: "–",
    stdout: "RFC 3339 time, or empty when unknown",
    kind: "query",
    onUnknown: "undefined",
    required: false,
    probe: true,
  },
  {
    op: "clear-scrollback",
    since: 1,
    argv: "`<name>`",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: false,
    probe: false,
  },
  {
    op: "copy-to",
    since: 1,
    argv: "`<name> <src> <rel_dst>` (validated paths)",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: false,
    probe: false,
  },
  {
    op: "send-keys",
    since: 1,
    argv: "`<name> <key>…` (validated key names)",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: true,
    probe: false,
  },
  {
    op: "run-live",
    since: 2,
    argv: "`<name>`",
    stdin: "start JSON (only `session_live`, `env`, `work_dir`, `hook_dir` matter)",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op",
    required: false,
    probe: false,
  },
  {
    op: "check-image",
    since: 1,
    argv: "`<image>` (validated image reference)",
    stdin: "–",
    stdout: "–",
    kind: "command",
    onUnknown: "no-op (not a container backend)",
    required: false,
    probe: false,
  },
  {
    op: "copy-from",
    since: 1,
    argv: "`<name> <path>` (validated relative path)",
    stdin: "–",
    stdout: "the file's contents",
    kind: "query",
    onUnknown: "UnsupportedError",
    required: false,
    probe: true,
  },
];

/** The table row of `op`. */
export function operation(op: ExecOperationName): ExecOperation {
  const row = EXEC_OPERATIONS.find((o) => o.op === op);
  if (!row) throw new Error(`exec protocol: no operation ${op}`);
  return row;
}

/** True when `s` is one of the protocol's operation names. */
export function isOperationName(s: string): s is ExecOperationName {
  return EXEC_OPERATIONS.some((o) => o.op === s);
}

/**
 * The operation table as Markdown, exactly as docs/exec-protocol.md must contain it
 * between its `<!-- exec-operations:begin -->` / `end` markers. Pure.
 */
export function renderOperationTable(): string {
  const rows = [
    "| operation | since | argv after `<script> <op>` | stdin | stdout | exit 2 (unknown op) means | required | probed |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const o of EXEC_OPERATIONS) {
    rows.push(
      `| \`${o.op}\` | v${o.since} | ${o.argv} | ${o.stdin} | ${o.stdout} | ${o.onUnknown} | ${o.required ? "yes" : "no"} | ${o.probe ? "yes" : "no"} |`,
    );
  }
  return rows.join("\n");
}

/** One entry of `copy_files` in the start JSON. */
export interface ExecCopyFile {
  readonly src: string;
  readonly rel_dst?: string;
}

/**
 * The JSON document `start` and `run-live` receive on stdin. Keys are omitted when empty.
 * The first block is the reference (v1) set; `prompt`, `prompt_flag` and `hook_dir` are v2
 * additions that older scripts ignore.
 */
export interface ExecStartPayload {
  work_dir?: string;
  command?: string;
  env?: Record<string, string>;
  process_names?: string[];
  nudge?: string;
  ready_prompt_prefix?: string;
  ready_delay_ms?: number;
  pre_start?: string[];
  session_setup?: string[];
  session_setup_script?: string;
  session_live?: string[];
  pack_overlay_dirs?: string[];
  overlay_dir?: string;
  copy_files?: ExecCopyFile[];
  /** v2: initial prompt, passed to the program as one argument after `command`. */
  prompt?: string;
  /** v2: flag placed before `prompt` (e.g. `--prompt`); absent = positional. */
  prompt_flag?: string;
  /** v2: directory hooks run in (default `work_dir`). */
  hook_dir?: string;
}

/**
 * Builds the start JSON for session `name` of `city`. The env carries the identity
 * variables every provider sets (`GC_SESSION`, `GC_CITY`, `GC_DIR`) over the declared env.
 * Pure.
 */
export function startPayload(name: string, cfg: StartConfig, city: string): ExecStartPayload {
  const p: ExecStartPayload = {};
  const nonEmpty = (xs: readonly string[] | undefined) => (xs && xs.length > 0 ? [...xs] : undefined);
  if (cfg.workDir) p.work_dir = cfg.workDir;
  if (cfg.command) p.command = cfg.command;
  p.env = { ...cfg.env, GC_SESSION: name, GC_CITY: city, ...(cfg.workDir ? { GC_DIR: cfg.workDir } : {}) };
  const processNames = nonEmpty(cfg.processNames);
  if (processNames) p.process_names = processNames;
  if (cfg.nudge) p.nudge = cfg.nudge;
  if (cfg.readyPromptPrefix) p.ready_prompt_prefix = cfg.readyPromptPrefix;
  if (cfg.readyDelayMs !== undefined && cfg.readyDelayMs > 0) p.ready_delay_ms = Math.round(cfg.readyDelayMs);
  const preStart = nonEmpty(cfg.preStart);
  if (preStart) p.pre_start = preStart;
  const setup = nonEmpty(cfg.sessionSetup);
  if (setup) p.session_setup = setup;
  if (cfg.sessionSetupScript) p.session_setup_script = cfg.sessionSetupScript;
  const live = nonEmpty(cfg.sessionLive);
  if (live) p.session_live = live;
  if (cfg.overlayDir) p.overlay_dir = cfg.overlayDir;
  if (cfg.copyFiles && cfg.copyFiles.length > 0) {
    p.copy_files = cfg.copyFiles.map((c) => (c.relDst ? { src: c.src, rel_dst: c.relDst } : { src: c.src }));
  }
  if (cfg.prompt) {
    p.prompt = cfg.prompt;
    if (cfg.promptFlag) p.prompt_flag = cfg.promptFlag;
  }
  if (cfg.hookDir) p.hook_dir = cfg.hookDir;
  return p;
}

/** What a script says about itself through the `capabilities` operation. */
export interface ExecCapabilitiesDoc {
  /** Protocol version the script speaks (≥ 2). */
  readonly protocol: number;
  /** Operations it implements (unknown names are kept out). */
  readonly operations: readonly ExecOperationName[];
  /** Free-form facts about the backend for tools (`type`, `local`, `socket`…). */
  readonly backend?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Parses the `capabilities` output. Strict: anything but a JSON object with an integer
 * `protocol` ≥ 2 and a string array `operations` is an error.
 * @throws ProviderError naming the script and what is wrong.
 */
export function parseCapabilities(script: string, stdout: string): ExecCapabilitiesDoc {
  const bad = (why: string) =>
    new ProviderError("exec", `${script} capabilities: ${why}: ${JSON.stringify(clip(stdout, 200))}`);
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    throw bad("output is not JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw bad("output is not a JSON object");
  const rec = doc as Record<string, unknown>;
  const protocol = rec.protocol;
  if (typeof protocol !== "number" || !Number.isInteger(protocol) || protocol < 2) {
    throw bad('"protocol" must be an integer ≥ 2');
  }
  const ops = rec.operations;
  if (!Array.isArray(ops) || !ops.every((o) => typeof o === "string")) {
    throw bad('"operations" must be an array of operation names');
  }
  const backend = rec.backend;
  if (backend !== undefined && (typeof backend !== "object" || backend === null || Array.isArray(backend))) {
    throw bad('"backend" must be an object');
  }
  return {
    protocol,
    operations: [...new Set(ops.filter(isOperationName))],
    backend: backend as Record<string, unknown> | undefined,
  };
}

/**
 * Parses a boolean answer (`true`/`false`, surrounding whitespace ignored).
 * @throws ProviderError for anything else — garbage is never guessed at.
 */
export function parseBool(what: string, stdout: string): boolean {
  const t = stdout.trim();
  if (t === "true") return true;
  if (t === "false") return false;
  throw new ProviderError(
    "exec",
    `${what}: expected "true" or "false" on stdout, got ${JSON.stringify(clip(t, 200))}`,
  );
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Parses `get-last-activity` output: empty → `undefined`, RFC 3339 → a Date.
 * @throws ProviderError for anything else.
 */
export function parseActivity(what: string, stdout: string): Date | undefined {
  const t = stdout.trim();
  if (t === "") return undefined;
  const d = new Date(t);
  if (!RFC3339.test(t) || Number.isNaN(d.getTime())) {
    throw new ProviderError(
      "exec",
      `${what}: expected an RFC 3339 time on stdout, got ${JSON.stringify(clip(t, 200))}`,
    );
  }
  return d;
}

/** Removes trailing newlines (and CRs) only, as the reference protocol does. */
export function trimTrailingNewlines(s: string): string {
  return s.replace(/[\r\n]+$/, "");
}

/** `s` cut to `max` characters with a marker. */
export function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…(${s.length} chars)` : s;
}

const KEY_RE = /^[A-Za-z0-9][A-Za-z0-9+_-]{0,31}$/;

/** True for a key name `send-keys` may put on argv (`Enter`, `C-c`, `M-x`, `F1`, `y`…). */
export function isKeyName(k: string): boolean {
  return KEY_RE.test(k);
}

const IMAGE_RE = /^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}$/;

/** True for a container image reference `check-image` may put on argv. */
export function isImageRef(s: string): boolean {
  return IMAGE_RE.test(s);
}
