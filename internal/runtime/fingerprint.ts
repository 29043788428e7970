/**
 * Config fingerprints: a versioned xxh64 hash over a canonical JSON document of the
 * *declared* start inputs. `core` changes mean restart; `live` changes mean `runLive`.
 * The per-field breakdown is the very input of the core hash, so `gc drift` can say which
 * field changed and from what to what. Pure (file contents are read by the caller).
 *
 * Hashing is synchronous and needs the xxhash-wasm instance ready (xxh.ts): {@link fingerprint}
 * throws if called before `xxhReady` resolved. Every production caller hashes the files first
 * with `readFingerprintFiles` (fingerprint-files.ts), which awaits that readiness, so it holds
 * by the time `fingerprint()` runs; any other caller must await `xxhReady` itself.
 */
import { createHmac } from "node:crypto";
import type { StartConfig } from "./provider.js";
import {
  isSecretKey as isSecretKeyUncached,
  REDACTED,
  redactAssignments,
  redactValues,
  SECRET_KEY_PATTERN,
  secretsLongestFirst,
  secretValuesIn,
} from "./secrets.js";
import { xxh } from "./xxh.js";

/** Scheme version prefixed to every fingerprint. Bump when the canonical document changes. */
export const FINGERPRINT_VERSION = "v1";

/**
 * `GC_*` env keys that are identity. Every other `GC_*` key is injected by gc and volatile
 * (session ids, ports, tokens, dirs). Keys without the `GC_` prefix are the user's and count.
 */
export const ENV_ALLOW_LIST: readonly string[] = [
  "GC_CITY",
  "GC_CITY_PATH",
  "GC_TEMPLATE",
  "GC_RIG",
  "GC_RIG_ROOT",
];

/** Content hashes of files named by the config, read by the caller (see fingerprint-files.ts). */
export interface FingerprintFiles {
  /** Hash of `sessionSetupScript`'s content; `undefined` = not set; `"missing"` = unreadable. */
  readonly sessionSetupScript?: string | undefined;
  /** Hash of the overlay directory's content. */
  readonly overlayDir?: string | undefined;
  /** Hash of each copy entry's source content, by `src`. */
  readonly copyFiles?: Readonly<Record<string, string>> | undefined;
}

/** One field of the core document: its hash and a human-readable (redacted) value. */
export interface FieldFingerprint {
  readonly hash: string;
  /** Display value: secret env values and every secret-derived substring are {@link REDACTED}. */
  readonly value: string;
  /** True when the field's input holds a secret (declared or interpolated): show only "changed". */
  readonly secret?: boolean;
}

/**
 * A city's fingerprint key (`.gc/fingerprint.key`, see controller/fingerprint-key.ts). With
 * it, a secret value enters hashed text only as its HMAC-SHA256 under the key, so no stored
 * or published hash (state.db, tmux/container metadata, pod annotations, `gc drift --json`)
 * is a check value for guessing a secret by someone who lacks the key file.
 */
export type FingerprintKey = Uint8Array;

/** The hashes a config had before its city had a key (secret values hashed raw). */
export interface LegacyFingerprints {
  readonly core: string;
  readonly live: string;
  /** Unkeyed hash of each breakdown field whose keyed hash differs (for drift's field list). */
  readonly fields?: Readonly<Record<string, string>>;
}

/** The result of {@link fingerprint}. */
export interface Fingerprints {
  /** `v1:<16 hex>` over every core field. */
  readonly core: string;
  /** `v1:<16 hex>` over `sessionLive`. */
  readonly live: string;
  /** Per-field hashes and display values; the core hash is computed from exactly these. */
  readonly breakdown: Readonly<Record<string, FieldFingerprint>>;
  /**
   * Present only when a key was given and the config holds a secret: the hashes an earlier
   * build (or this one without a key) recorded. A record holding them is in sync and is
   * re-recorded with the keyed ones (reconcile/plan.ts `recordedUnkeyed`, action `rekey`).
   * Never stored; served only over the controller's private socket (its status digest).
   */
  readonly legacy?: LegacyFingerprints;
}

/** The fields of the core document, in the order `gc drift` shows them. */
export const CORE_FIELDS = [
  "command",
  "env",
  "preStart",
  "sessionSetup",
  "sessionSetupScript",
  "overlayDir",
  "copyFiles",
  "fingerprintExtra",
  "backend",
  "providerSettings",
] as const;

/** Breakdown key of the live fingerprint (display only; not part of the core hash). */
export const LIVE_FIELD = "sessionLive";

/**
 * Fields a session takes only when it starts, never hashed (changing them restarts nothing,
 * as in the reference): the breakdown keeps them so drift can say a change is waiting for
 * the next start. A stored breakdown without them (an older build, an adopted session) is
 * unknown there, not drifted.
 */
export const NEXT_START_FIELDS = ["workDir", "prompt", "nudge"] as const;

/** What the program is first told, as declared (the prompt without its beacon). */
export interface StartText {
  readonly prompt?: string | undefined;
  readonly nudge?: string | undefined;
}

/**
 * Core fields that are maps. Besides the whole map (which the core hash uses), the breakdown
 * holds one `<field>.<key>` entry per key, so drift names the keys that changed
 * (`env.GREETING: hello → bonjour`) instead of printing the whole map twice.
 */
export const MAP_FIELDS: readonly string[] = ["env", "fingerprintExtra", "providerSettings"];

/**
 * Compares strings by their UTF-8 bytes (not UTF-16 code units; a lone surrogate counts as
 * U+FFFD, as the encoder writes it). Below U+D800 both orders agree, so the first differing
 * code unit decides without encoding; only a surrogate or U+E000..U+FFFF there is encoded.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  if (x < 0xd800 && y < 0xd800) return x - y;
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * Canonical JSON: object keys sorted by UTF-8 bytes, `undefined` members dropped, arrays in
 * order, no whitespace. Two values with the same meaning serialise identically. Pure.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (value === undefined) return "null";
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  // One string built in place: fingerprinting 200 sessions calls this thousands of times.
  const obj = value as Record<string, unknown>;
  let out = "{";
  for (const k of Object.keys(obj).sort(compareUtf8)) {
    const v = obj[k];
    if (v === undefined) continue;
    if (out.length > 1) out += ",";
    out += `${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** {@link CORE_FIELDS} in canonical JSON key order (the core document's order). */
const CORE_FIELDS_CANONICAL: readonly string[] = [...CORE_FIELDS].sort(compareUtf8);
/** Each of {@link CORE_FIELDS_CANONICAL} as it opens its member of the core document: `"name":`. */
const CORE_MEMBER_PREFIX: readonly string[] = CORE_FIELDS_CANONICAL.map((f) => `${JSON.stringify(f)}:`);

/**
 * Hashes of recently hashed short texts. Most fields of a city's sessions hash the same
 * text (`[]`, `""`, `null`, a shared command or work dir), so a city of many sessions hashes
 * each of those once. Bounded in entries and text length; a hash is a pure function of its
 * text, so a hit is always the hash.
 */
const hashMemo = new Map<string, string>();
const HASH_MEMO_ENTRIES = 1024;
const HASH_MEMO_TEXT = 256;

function hash(text: string): string {
  if (text.length > HASH_MEMO_TEXT) return `${FINGERPRINT_VERSION}:${xxh().h64ToString(text)}`;
  let h = hashMemo.get(text);
  if (h === undefined) {
    h = `${FINGERPRINT_VERSION}:${xxh().h64ToString(text)}`;
    if (hashMemo.size >= HASH_MEMO_ENTRIES) hashMemo.clear();
    hashMemo.set(text, h);
  }
  return h;
}

/**
 * Whether values of env key `key` are secret (secrets.ts `isSecretKey`), remembered: every
 * session of a city asks it of the same few names (`GC_CITY`, `GC_SESSION`…). Bounded.
 */
const secretKeyMemo = new Map<string, boolean>();

function isSecretKey(key: string): boolean {
  let secret = secretKeyMemo.get(key);
  if (secret === undefined) {
    secret = isSecretKeyUncached(key);
    if (secretKeyMemo.size >= HASH_MEMO_ENTRIES) secretKeyMemo.clear();
    secretKeyMemo.set(key, secret);
  }
  return secret;
}

/** The env keys that are identity: user keys, allow-listed GC_* keys, and `declared` keys. */
export function identityEnv(
  env: Readonly<Record<string, string>>,
  declared: readonly string[] = [],
): Record<string, string> {
  const out: Record<string, string> = {};
  const keys = Object.keys(env);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (!k.startsWith("GC_") || ENV_ALLOW_LIST.includes(k) || declared.includes(k)) out[k] = env[k]!;
  }
  return out;
}

function showEnv(env: Readonly<Record<string, string>>): string {
  return showEnvSorted(env, sortedKeys(Object.keys(env)));
}

/** `keys` sorted by {@link compareUtf8}: `keys` itself when already in that order, else a sorted copy. */
function sortedKeys(keys: readonly string[]): readonly string[] {
  for (let i = 1; i < keys.length; i++) {
    if (compareUtf8(keys[i - 1]!, keys[i]!) > 0) return keys.slice().sort(compareUtf8);
  }
  return keys;
}

/** Whether `text` contains any of `parts`. */
function includesAny(text: string, parts: readonly string[]): boolean {
  for (let i = 0; i < parts.length; i++) if (text.includes(parts[i]!)) return true;
  return false;
}

/** {@link showEnv} of `env` whose keys, sorted by {@link compareUtf8}, are `sorted`. */
function showEnvSorted(env: Readonly<Record<string, string>>, sorted: readonly string[]): string {
  return sorted.map((k) => `${k}=${isSecretKey(k) ? REDACTED : env[k]}`).join(" ");
}

/** {@link canonicalJson} of `obj` whose keys, sorted by {@link compareUtf8}, are `sorted`. */
function canonicalJsonSorted(obj: Readonly<Record<string, unknown>>, sorted: readonly string[]): string {
  let out = "{";
  for (let i = 0; i < sorted.length; i++) {
    const k = sorted[i]!;
    const v = obj[k];
    if (v === undefined) continue;
    if (out.length > 1) out += ",";
    out += `${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** Whether any key of `map` is secret-named. */
function hasSecretKey(map: Readonly<Record<string, unknown>>): boolean {
  const keys = Object.keys(map);
  for (let i = 0; i < keys.length; i++) if (isSecretKey(keys[i]!)) return true;
  return false;
}

/**
 * {@link redactAssignments} of `s`, skipping the scan when no key in `s` can be secret-named:
 * an assignment's key is a substring of `s` followed by `=`, so a secret-named key makes
 * {@link SECRET_KEY_PATTERN} match `s` itself (its lookaheads never read `=`).
 */
function redactShown(s: string): string {
  return s.includes("=") && SECRET_KEY_PATTERN.test(s) ? redactAssignments(s) : s;
}

/**
 * The secret values a start config carries: values of secret-named env keys, plus
 * `interpolated` (values substituted from secret-named variables anywhere in the file),
 * longest first. Pure.
 */
export function secretValuesOf(
  env: Readonly<Record<string, string>>,
  interpolated: readonly string[] = [],
): string[] {
  const values = [...interpolated];
  const keys = Object.keys(env);
  for (let i = 0; i < keys.length; i++) if (isSecretKey(keys[i]!)) values.push(env[keys[i]!]!);
  return values.length === 0 ? [] : secretsLongestFirst(values);
}

/**
 * Every secret value a start config carries, longest first: secret-named env values,
 * `interpolated` (values substituted from the environment anywhere in the file), and values
 * under secret-named keys inside provider settings (an MCP server's env) or extras. Pure.
 */
export function secretsOfConfig(cfg: StartConfig, interpolated: readonly string[] = []): string[] {
  const values = [...interpolated];
  if (cfg.providerSettings !== undefined) values.push(...secretValuesIn(cfg.providerSettings));
  if (cfg.fingerprintExtra !== undefined) values.push(...secretValuesIn(cfg.fingerprintExtra));
  return secretValuesOf(cfg.env, values);
}

/** What stands for secret value `v` in hashed text under `key`: a keyed digest, never `v`. */
function sealValue(key: FingerprintKey, v: string): string {
  return `gc-sealed:${createHmac("sha256", key).update(v, "utf8").digest("hex").slice(0, 32)}`;
}

/**
 * `text` (canonical JSON) with every secret of `secrets` (longest first, as JSON string
 * content) replaced by its sealed form. Shorter secrets than MIN_SECRET_LENGTH are not looked
 * for inside other text; secret-named env values are sealed whole before (any length).
 */
function sealText(key: FingerprintKey, secrets: readonly string[], text: string): string {
  let out = text;
  for (const v of secrets) {
    const inJson = JSON.stringify(v).slice(1, -1);
    if (out.includes(inJson)) out = out.replaceAll(inJson, sealValue(key, v));
  }
  return out;
}

/**
 * Core and live fingerprints of `cfg`. Map order is irrelevant, list order significant;
 * an absent map equals an empty one. Work dir, readiness, process names, nudge, prompt
 * (and its beacon) are excluded from both: they are volatile or do not change what runs.
 * Work dir, `startText`'s prompt and nudge are in the breakdown, display only
 * ({@link NEXT_START_FIELDS}). With `key`, secret values are hashed only sealed
 * ({@link FingerprintKey}); without, raw (the scheme of cities without a key). A config
 * without secrets hashes the same either way. Pure.
 */
export function fingerprint(
  cfg: StartConfig,
  files: FingerprintFiles = {},
  declaredEnvKeys: readonly string[] = [],
  interpolatedSecrets: readonly string[] = [],
  startText: StartText = {},
  key?: FingerprintKey,
): Fingerprints {
  const env = identityEnv(cfg.env, declaredEnvKeys);
  const extra = cfg.fingerprintExtra ?? {};
  // The breakdown is persisted (state.db) and printed (`gc drift`): no secret may survive in
  // a display value, and a field derived from one is flagged so drift shows only "changed".
  // Secrets: secret-named env values, values interpolated from secret-named variables, and
  // values under secret-named keys inside provider settings (an MCP server's env) or extras.
  const secrets = secretsOfConfig(cfg, interpolatedSecrets);
  /** Each secret as it appears inside JSON string content (what a field's text holds). */
  const secretsInJson = secrets.map((v) => JSON.stringify(v).slice(1, -1));
  const sealKey =
    key !== undefined && (secrets.length > 0 || hasSecretKey(env) || hasSecretKey(extra)) ? key : undefined;
  // Secret-named env and extra values are sealed whole (any length); other text has each
  // secret sealed where it occurs. Without sealing the hashed form is the input itself.
  const sealMap = (map: Readonly<Record<string, string>>): Readonly<Record<string, string>> =>
    sealKey
      ? Object.fromEntries(
          Object.entries(map).map(([k, v]) => [k, isSecretKey(k) ? sealValue(sealKey, v) : v]),
        )
      : map;
  const hashedEnv = sealMap(env);
  const hashedExtra = sealMap(extra);
  /** A display value with every secret (and `SECRET_KEY=value`) redacted. */
  const shown = (raw: string): string => redactShown(redactValues(raw, secrets));
  /** Unkeyed hashes of the fields whose keyed hash differs (the {@link Fingerprints.legacy} inputs). */
  const unkeyed: Record<string, string> = {};
  /**
   * Hash of `input` (canonical JSON `text`; as `hashed` when given: its sealed form); `raw`
   * redacted for display.
   */
  const field = (
    input: unknown,
    raw: string,
    hashed: unknown = input,
    name?: string,
    text: string = canonicalJson(input),
  ): FieldFingerprint => {
    // Redacted as the store redacts what it keeps (`SECRET_KEY=value` too), so a stored value
    // and a fresh one differ only where the config really changed.
    const value = shown(raw);
    const secret = includesAny(text, secretsInJson) || value.includes(REDACTED);
    let hashedText = text;
    if (sealKey) {
      hashedText = sealText(sealKey, secrets, hashed === input ? text : canonicalJson(hashed));
      if (name !== undefined && hashedText !== text) unkeyed[name] = hash(text);
    }
    return secret ? { hash: hash(hashedText), value, secret: true } : { hash: hash(hashedText), value };
  };
  const breakdown: Record<string, FieldFingerprint> = {};
  // The core fields, in CORE_FIELDS order.
  breakdown.command = field(cfg.command, cfg.command, cfg.command, "command");
  const envOrder = Object.keys(env);
  const envKeys = sortedKeys(envOrder);
  breakdown.env = field(
    env,
    showEnvSorted(env, envKeys),
    hashedEnv,
    "env",
    canonicalJsonSorted(env, envKeys),
  );
  const preStart = cfg.preStart ?? [];
  breakdown.preStart = field(preStart, preStart.join(" ; "), preStart, "preStart");
  const sessionSetup = cfg.sessionSetup ?? [];
  breakdown.sessionSetup = field(sessionSetup, sessionSetup.join(" ; "), sessionSetup, "sessionSetup");
  const setupScript = cfg.sessionSetupScript
    ? { path: cfg.sessionSetupScript, content: files.sessionSetupScript }
    : null;
  breakdown.sessionSetupScript = field(
    setupScript,
    cfg.sessionSetupScript ? `${cfg.sessionSetupScript} (content ${files.sessionSetupScript ?? "?"})` : "",
    setupScript,
    "sessionSetupScript",
  );
  const overlay = cfg.overlayDir ? { path: cfg.overlayDir, content: files.overlayDir } : null;
  breakdown.overlayDir = field(
    overlay,
    cfg.overlayDir ? `${cfg.overlayDir} (content ${files.overlayDir ?? "?"})` : "",
    overlay,
    "overlayDir",
  );
  const copy = (cfg.copyFiles ?? []).map((c) => ({
    src: c.src,
    relDst: c.relDst,
    content: files.copyFiles?.[c.src],
  }));
  breakdown.copyFiles = field(
    copy,
    copy.map((c) => `${c.src} → ${c.relDst || "."} (${c.content ?? "?"})`).join(", "),
    copy,
    "copyFiles",
  );
  breakdown.fingerprintExtra = field(extra, showEnv(extra), hashedExtra, "fingerprintExtra");
  // Only under a router (auto, hybrid); absent, it is left out of the hash, so the
  // fingerprints of every other session are what they always were.
  if (cfg.backend !== undefined) breakdown.backend = field(cfg.backend, cfg.backend, cfg.backend, "backend");
  // Only for providers with session-shaping settings (docker, k8s, acp); absent, it is left
  // out of the hash like `backend`.
  if (cfg.providerSettings !== undefined) {
    const ps = cfg.providerSettings;
    breakdown.providerSettings = field(ps, showSettings(ps), ps, "providerSettings");
  }
  // Per-key entries of the map fields: display only, not inputs of `core`.
  for (let i = 0; i < envOrder.length; i++) {
    const k = envOrder[i]!;
    const v = env[k]!;
    breakdown[`env.${k}`] = field(v, isSecretKey(k) ? REDACTED : v, hashedEnv[k], `env.${k}`);
  }
  for (const k of Object.keys(extra)) {
    const v = extra[k]!;
    breakdown[`fingerprintExtra.${k}`] = field(
      v,
      isSecretKey(k) ? REDACTED : v,
      hashedExtra[k],
      `fingerprintExtra.${k}`,
    );
  }
  for (const [k, v] of Object.entries(cfg.providerSettings ?? {}))
    breakdown[`providerSettings.${k}`] = field(v, settingText(v), v, `providerSettings.${k}`);
  /** Hash of the canonical document {field: hash} over CORE_FIELDS (absent fields left out). */
  const coreOf = (hashes: Readonly<Record<string, string | undefined>>) => {
    let doc = "{";
    for (let i = 0; i < CORE_FIELDS_CANONICAL.length; i++) {
      const f = CORE_FIELDS_CANONICAL[i]!;
      const h = hashes[f] ?? breakdown[f]?.hash;
      if (h === undefined) continue;
      if (doc.length > 1) doc += ",";
      doc += CORE_MEMBER_PREFIX[i]! + JSON.stringify(h);
    }
    return hash(`${doc}}`);
  };
  const core = coreOf({});
  const liveInput = cfg.sessionLive ?? [];
  // Shown by `gc drift` beside the core fields; not an input of `core`.
  breakdown[LIVE_FIELD] = field(liveInput, liveInput.join(" ; "), liveInput, LIVE_FIELD);
  const live = breakdown[LIVE_FIELD].hash;
  const next = { workDir: cfg.workDir, prompt: startText.prompt ?? "", nudge: startText.nudge ?? "" };
  // Hashed as redacted, like their preview: display-only fields must not store a check value
  // for a secret (a change of a secret alone in a prompt is therefore not reported).
  for (let i = 0; i < NEXT_START_FIELDS.length; i++) {
    const f = NEXT_START_FIELDS[i]!;
    const text = shown(next[f]);
    breakdown[f] = field(text, f === "workDir" ? text : preview(text));
  }
  if (Object.keys(unkeyed).length === 0) return { core, live, breakdown };
  return {
    core,
    live,
    breakdown,
    legacy: { core: coreOf(unkeyed), live: unkeyed[LIVE_FIELD] ?? live, fields: unkeyed },
  };
}

/** A long text for display: its first 48 characters on one line, its length and a short hash of it. */
function preview(text: string): string {
  if (text === "") return "";
  const line = text.replace(/\s+/g, " ").trim();
  const head = line.length > 48 ? `${line.slice(0, 48)}…` : line;
  return `${JSON.stringify(head)} (${text.length} chars, #${hash(text).slice(-6)})`;
}

/** A setting's display value: strings as they are, anything else as canonical JSON. */
function settingText(v: unknown): string {
  return typeof v === "string" ? v : canonicalJson(v);
}

/** `k=v, …` of a settings map in key order (display only). */
function showSettings(settings: Readonly<Record<string, unknown>>): string {
  return Object.keys(settings)
    .sort(compareUtf8)
    .map((k) => `${k}=${settingText(settings[k])}`)
    .join(", ");
}

/** One drifted field: name, old and new display values. */
export interface FieldDrift {
  readonly field: string;
  readonly from: string;
  readonly to: string;
  /** A secret-derived value changed: `from`/`to` are "changed", never values. */
  readonly masked?: boolean;
}

/** True for a {@link NEXT_START_FIELDS} key. Pure. */
export function isNextStartField(field: string): boolean {
  return (NEXT_START_FIELDS as readonly string[]).includes(field);
}

/**
 * The breakdown to record for a session that keeps running (re-applied session_live): the
 * current one, but with the start-only fields it really started with (absent: unknown). Pure.
 */
export function keepStartedFields(
  stored: Readonly<Record<string, FieldFingerprint>>,
  current: Readonly<Record<string, FieldFingerprint>>,
): Record<string, FieldFingerprint> {
  const out: Record<string, FieldFingerprint> = { ...current };
  for (const f of NEXT_START_FIELDS) {
    const was = stored[f];
    if (was === undefined) delete out[f];
    else out[f] = was;
  }
  return out;
}

/** The map field a `<field>.<key>` breakdown entry belongs to, if it is one. Pure. */
function mapFieldOf(key: string): string | undefined {
  return MAP_FIELDS.find((f) => key.startsWith(`${f}.`));
}

/** Whether `b` holds per-key entries for map field `f` (an empty map has none and needs none). */
function hasKeys(b: Readonly<Record<string, FieldFingerprint>>, f: string): boolean {
  return b[f]?.value === "" || Object.keys(b).some((k) => k.startsWith(`${f}.`));
}

/** One changed field (or map key), values masked when only a secret-derived part changed. */
function changeOf(
  field: string,
  a: FieldFingerprint | undefined,
  b: FieldFingerprint | undefined,
): FieldDrift {
  // Only a hidden (secret-derived) part changed: say so, never show values.
  if ((a?.secret || b?.secret) && a?.value === b?.value) {
    return { field, from: "(secret)", to: "changed", masked: true };
  }
  return { field, from: a?.value ?? "(absent)", to: b?.value ?? "(absent)" };
}

/**
 * Fields whose hash differs between a stored breakdown and the current one, in
 * {@link CORE_FIELDS} order. A field missing on one side counts as drifted. A changed map
 * field ({@link MAP_FIELDS}) is reported per changed key (`env.GREETING`) when both sides
 * have per-key entries (a record stored by an older build has none: the whole map). With
 * `only`, just those fields are compared, in that order (what the full comparison reports
 * of them). Pure.
 */
export function diffBreakdown(
  stored: Readonly<Record<string, FieldFingerprint>>,
  current: Readonly<Record<string, FieldFingerprint>>,
  only?: readonly string[],
): FieldDrift[] {
  const fields = only
    ? only.filter((f) => f in stored || f in current)
    : [...new Set([...CORE_FIELDS, LIVE_FIELD, ...Object.keys(stored), ...Object.keys(current)])].filter(
        (f) => mapFieldOf(f) === undefined,
      );
  const out: FieldDrift[] = [];
  for (const field of fields) {
    const a = stored[field];
    const b = current[field];
    if (a?.hash === b?.hash) continue;
    // Not recorded (an older build, an adopted session): unknown, not drifted.
    if (a === undefined && isNextStartField(field)) continue;
    if (MAP_FIELDS.includes(field) && hasKeys(stored, field) && hasKeys(current, field)) {
      const prefix = `${field}.`;
      const keys = [...new Set([...Object.keys(stored), ...Object.keys(current)])]
        .filter((k) => k.startsWith(prefix))
        .sort((x, y) => compareUtf8(x, y));
      const changed = keys
        .filter((k) => stored[k]?.hash !== current[k]?.hash)
        .map((k) => changeOf(k, stored[k], current[k]));
      if (changed.length > 0) {
        out.push(...changed);
        continue;
      }
    }
    out.push(changeOf(field, a, b));
  }
  return out;
}
