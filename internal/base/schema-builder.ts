/**
 * A small in-house schema builder. The city file's shape is declared once (schema.ts) and
 * everything else is derived from that declaration: the TypeScript types (`Infer`), the
 * decoder that validates a positioned YAML tree (every issue gets `file:line:col` and a key
 * path), and the JSON Schema shipped as `city.schema.json`. Pure.
 */
import { type Document, isAlias, isMap, isScalar, isSeq, type LineCounter, type YAMLMap } from "yaml";
import { parseDuration } from "./duration.js";
import type { ConfigIssue } from "./errors.js";
import { interpolate, type UsedVariable } from "./interpolate.js";
import { didYouMean } from "./suggest.js";

/** Any JSON value. */
export type Json = null | boolean | number | string | readonly Json[] | { readonly [k: string]: Json };
/** A JSON Schema document (draft-07 keywords). */
export type JsonSchema = { [k: string]: Json };

/** A 1-based line and column. */
export interface Position {
  readonly line: number;
  readonly col: number;
}

/** Mutable state shared by one decode run. */
export interface DecodeContext {
  readonly file: string;
  readonly doc: Document;
  readonly lineCounter: LineCounter;
  /** Variables for `${VAR}` interpolation. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Every problem found; decoding never stops at the first. */
  readonly issues: ConfigIssue[];
  /** Position of every decoded value, by key path (`agents[0].name`). */
  readonly positions: Map<string, Position>;
  /** Variables substituted by interpolation (so secret values can be redacted later). */
  readonly used: UsedVariable[];
}

/**
 * Returned by a decoder for a value that produced an issue. Containers drop such values
 * (objects fall back to the field's default) and carry on, so one run reports everything.
 */
export const INVALID: unique symbol = Symbol("invalid");
type Decoded<T> = T | typeof INVALID;

const MAX_DEPTH = 64;

/** `parent.key`, or `parent["odd key"]` for keys that are not plain identifiers. */
export function joinPath(parent: string, key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent ? `${parent}.${key}` : key;
}

/** Position of a YAML node (1:1 when it has no range). */
export function positionOf(node: unknown, ctx: Pick<DecodeContext, "lineCounter">): Position {
  const range = (node as { range?: readonly number[] | null } | null)?.range;
  if (!range || range[0] === undefined) return { line: 1, col: 1 };
  return ctx.lineCounter.linePos(range[0]);
}

/** Records an issue at `node`'s position. */
export function report(ctx: DecodeContext, node: unknown, path: string, message: string): void {
  const { line, col } = positionOf(node, ctx);
  ctx.issues.push({ file: ctx.file, line, col, path, message });
}

function deref(node: unknown, ctx: DecodeContext): unknown {
  let n = node;
  for (let i = 0; i < MAX_DEPTH && isAlias(n); i++) n = n.resolve(ctx.doc);
  return n;
}

/** Human description of what a YAML node holds, for "expected X, got Y" messages. */
function describeNode(node: unknown): string {
  if (node === null || node === undefined) return "nothing";
  if (isMap(node)) return "a map";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) {
    const v = node.value;
    if (v === null) return "nothing";
    if (typeof v === "string") return `a string ${JSON.stringify(v)}`;
    if (typeof v === "boolean") return `a boolean (${v})`;
    if (typeof v === "number") return `a number (${node.source ?? v})`;
    return `a ${typeof v}`;
  }
  return "an unsupported value";
}

/** How a field behaves when its key is absent. */
export type FieldMode = "required" | "optional" | "default";

/** A schema placed in an object with a presence rule. Built by {@link Schema.optional} / {@link Schema.default}. */
export class Field<T, I, M extends FieldMode> {
  declare readonly _mode: M;
  readonly schema: Schema<T, I>;
  readonly mode: M;
  readonly defaultInput: I | undefined;
  description: string | undefined;
  constructor(schema: Schema<T, I>, mode: M, defaultInput?: I) {
    this.schema = schema;
    this.mode = mode;
    this.defaultInput = defaultInput;
  }
  /** Sets the description shown by editors for this field. */
  describe(text: string): this {
    this.description = text;
    return this;
  }
}

/**
 * A schema node: decodes a YAML node into `T` (the typed, defaults-applied value) from
 * input written as `I` (the JSON shape of the file), and describes itself as JSON Schema.
 */
export abstract class Schema<T, I = T> {
  declare readonly _type: T;
  declare readonly _input: I;
  private desc: string | undefined;

  /** Sets the description shown by editors (JSON Schema `description`). */
  describe(text: string): this {
    this.desc = text;
    return this;
  }

  /** This schema as an object field that may be absent (`undefined` in the typed value). */
  optional(): Field<T, I, "optional"> {
    return new Field(this, "optional");
  }

  /** This schema as an object field that takes `value` (decoded like file input) when absent. */
  default(value: I): Field<T, I, "default"> {
    return new Field(this, "default", value);
  }

  /** Decodes `node` (aliases followed) at `path`, recording its position. */
  decode(node: unknown, path: string, ctx: DecodeContext, depth = 0): Decoded<T> {
    const n = deref(node, ctx);
    if (depth > MAX_DEPTH) {
      report(ctx, n, path, "nested too deeply");
      return INVALID;
    }
    ctx.positions.set(path, positionOf(n, ctx));
    return this.decodeNode(n, path, ctx, depth);
  }

  /** The JSON Schema of this node, with its description. */
  jsonSchema(): JsonSchema {
    const j = this.toJson();
    return this.desc === undefined ? j : { description: this.desc, ...j };
  }

  /** True when this schema would try to decode `node` (used to pick a union member). */
  abstract accepts(node: unknown): boolean;
  /** What the schema wants, for messages: "a string", "a map"… */
  abstract expected(): string;
  /** Turns an input value (a default written in schema.ts) into the typed value. */
  abstract fromInput(input: I): T;
  protected abstract decodeNode(node: unknown, path: string, ctx: DecodeContext, depth: number): Decoded<T>;
  protected abstract toJson(): JsonSchema;
}

/** Options of {@link StringSchema}. */
export interface StringOptions {
  /** Extra check after interpolation; returns the problem or `undefined`. */
  readonly check?: ((value: string) => string | undefined) | undefined;
  /**
   * JSON Schema keywords describing the check for editors (e.g. `pattern`); a function is
   * called when the JSON Schema is built (for lists not known when the schema is declared).
   */
  readonly json?: JsonSchema | (() => JsonSchema) | undefined;
  /** Expand `${VAR}` (default true). */
  readonly interpolate?: boolean | undefined;
  /** Reject the empty string (default false). */
  readonly nonEmpty?: boolean | undefined;
}

function isStringScalar(node: unknown): boolean {
  return isScalar(node) && typeof node.value === "string";
}

function decodeString(node: unknown, path: string, ctx: DecodeContext, interp: boolean): Decoded<string> {
  if (!isStringScalar(node)) {
    const plainNonString = isScalar(node) && node.value !== null && node.type === "PLAIN";
    const hint = plainNonString ? ` (quote it: "${node.source ?? String(node.value)}")` : "";
    report(ctx, node, path, `expected a string, got ${describeNode(node)}${hint}`);
    return INVALID;
  }
  const raw = (node as { value: string }).value;
  if (!interp) return raw;
  const r = interpolate(raw, ctx.env);
  if (!r.ok) {
    report(ctx, node, path, r.error);
    return INVALID;
  }
  ctx.used.push(...r.used);
  return r.value;
}

/** A string, with optional interpolation, checks and literal choices. */
export class StringSchema<T extends string = string> extends Schema<T, T> {
  readonly options: StringOptions;
  readonly choices: readonly T[] | undefined;
  constructor(options: StringOptions = {}, choices?: readonly T[]) {
    super();
    this.options = options;
    this.choices = choices;
  }
  accepts(node: unknown): boolean {
    return isStringScalar(node);
  }
  expected(): string {
    return "a string";
  }
  fromInput(input: T): T {
    return input;
  }
  protected decodeNode(node: unknown, path: string, ctx: DecodeContext): Decoded<T> {
    const v = decodeString(node, path, ctx, this.options.interpolate ?? true);
    if (v === INVALID) return INVALID;
    if (this.options.nonEmpty && v === "") {
      report(ctx, node, path, "must not be empty");
      return INVALID;
    }
    if (this.choices && !(this.choices as readonly string[]).includes(v)) {
      const list = this.choices.map((c) => JSON.stringify(c)).join(", ");
      report(
        ctx,
        node,
        path,
        `must be one of ${list}, got ${JSON.stringify(v)}${didYouMean(v, this.choices)}`,
      );
      return INVALID;
    }
    const problem = this.options.check?.(v);
    if (problem !== undefined) {
      report(ctx, node, path, problem);
      return INVALID;
    }
    return v as T;
  }
  protected toJson(): JsonSchema {
    const j: JsonSchema = { type: "string" };
    if (this.options.nonEmpty) j.minLength = 1;
    if (this.choices) j.enum = [...this.choices];
    const extra = this.options.json;
    return { ...j, ...(typeof extra === "function" ? extra() : extra) };
  }
}

/** Options of {@link IntSchema}. */
export interface IntOptions {
  readonly min?: number | undefined;
  readonly max?: number | undefined;
  /** Accept any finite number, not only integers (`s.number()`). */
  readonly fraction?: boolean | undefined;
}

/** An integer within optional bounds. */
export class IntSchema extends Schema<number> {
  readonly options: IntOptions;
  constructor(options: IntOptions = {}) {
    super();
    this.options = options;
  }
  accepts(node: unknown): boolean {
    return isScalar(node) && typeof node.value === "number";
  }
  expected(): string {
    return this.options.fraction ? "a number" : "an integer";
  }
  fromInput(input: number): number {
    return input;
  }
  protected decodeNode(node: unknown, path: string, ctx: DecodeContext): Decoded<number> {
    if (
      !isScalar(node) ||
      typeof node.value !== "number" ||
      !(this.options.fraction ? Number.isFinite(node.value) : Number.isInteger(node.value))
    ) {
      report(ctx, node, path, `expected ${this.expected()}, got ${describeNode(node)}`);
      return INVALID;
    }
    const v = node.value;
    const { min, max } = this.options;
    if (min !== undefined && v < min) {
      report(ctx, node, path, `must be at least ${min}, got ${v}`);
      return INVALID;
    }
    if (max !== undefined && v > max) {
      report(ctx, node, path, `must be at most ${max}, got ${v}`);
      return INVALID;
    }
    return v;
  }
  protected toJson(): JsonSchema {
    const j: JsonSchema = { type: this.options.fraction ? "number" : "integer" };
    if (this.options.min !== undefined) j.minimum = this.options.min;
    if (this.options.max !== undefined) j.maximum = this.options.max;
    return j;
  }
}

/** `true` or `false` (YAML 1.2: `yes`/`on` are strings and rejected). */
export class BoolSchema extends Schema<boolean> {
  accepts(node: unknown): boolean {
    return isScalar(node) && typeof node.value === "boolean";
  }
  expected(): string {
    return "true or false";
  }
  fromInput(input: boolean): boolean {
    return input;
  }
  protected decodeNode(node: unknown, path: string, ctx: DecodeContext): Decoded<boolean> {
    if (!isScalar(node) || typeof node.value !== "boolean") {
      report(ctx, node, path, `expected true or false, got ${describeNode(node)}`);
      return INVALID;
    }
    return node.value;
  }
  protected toJson(): JsonSchema {
    return { type: "boolean" };
  }
}

/** Options of {@link DurationSchema}; bounds are duration strings. */
export interface DurationOptions {
  readonly min?: string | undefined;
  readonly max?: string | undefined;
}

/** A duration string (`30s`, `5m`, `1500ms`) decoded to milliseconds. */
export class DurationSchema extends Schema<number, string> {
  readonly options: DurationOptions;
  constructor(options: DurationOptions = {}) {
    super();
    this.options = options;
  }
  accepts(node: unknown): boolean {
    return isStringScalar(node);
  }
  expected(): string {
    return "a duration";
  }
  fromInput(input: string): number {
    const ms = parseDuration(input);
    if (ms === undefined) throw new Error(`schema bug: bad duration default ${JSON.stringify(input)}`);
    return ms;
  }
  protected decodeNode(node: unknown, path: string, ctx: DecodeContext): Decoded<number> {
    const zero = isScalar(node) && node.value === 0;
    if (isScalar(node) && typeof node.value === "number" && !zero) {
      report(
        ctx,
        node,
        path,
        `a duration needs a unit, e.g. "${node.source ?? node.value}s" (units: ms, s, m, h)`,
      );
      return INVALID;
    }
    const text = zero ? "0" : decodeString(node, path, ctx, true);
    if (text === INVALID) return INVALID;
    const ms = parseDuration(text);
    if (ms === undefined) {
      report(
        ctx,
        node,
        path,
        `invalid duration ${JSON.stringify(text)}: use numbers with units ms, s, m, h (e.g. "30s", "1m30s", "1500ms")`,
      );
      return INVALID;
    }
    const { min, max } = this.options;
    if (min !== undefined && ms < this.fromInput(min)) {
      report(ctx, node, path, `must be at least ${min}, got ${JSON.stringify(text)}`);
      return INVALID;
    }
    if (max !== undefined && ms > this.fromInput(max)) {
      report(ctx, node, path, `must be at most ${max}, got ${JSON.stringify(text)}`);
      return INVALID;
    }
    return ms;
  }
  protected toJson(): JsonSchema {
    return { type: "string", pattern: "^(0|([0-9]+(\\.[0-9]+)?(ms|s|m|h))+)$" };
  }
}

/**
 * A scalar environment value: strings (interpolated), numbers and booleans, all decoded
 * to their string form (`1.50` stays `"1.50"`).
 */
export class EnvValueSchema extends Schema<string> {
  accepts(node: unknown): boolean {
    return isScalar(node) && ["string", "number", "boolean"].includes(typeof node.value);
  }
  expected(): string {
    return "a string, number or boolean";
  }
  fromInput(input: string): string {
    return input;
  }
  protected decodeNode(node: unknown, path: string, ctx: DecodeContext): Decoded<string> {
    if (isScalar(node) && (typeof node.value === "number" || typeof node.value === "boolean")) {
      return node.source ?? String(node.value);
    }
    if (!isStringScalar(node)) {
      report(ctx, node, path, `expected a string, number or boolean, got ${describeNode(node)}`);
      return INVALID;
    }
    return decodeString(node, path, ctx, true);
  }
  protected toJson(): JsonSchema {
    return { type: ["string", "number", "boolean"] };
  }
}

/** Options of {@link ArraySchema}. */
export interface ArrayOptions {
  /** Reject repeated items (compared by decoded JSON). */
  readonly unique?: boolean | undefined;
}

/** A YAML list. */
export class ArraySchema<T, I> extends Schema<readonly T[], readonly I[]> {
  readonly items: Schema<T, I>;
  readonly options: ArrayOptions;
  constructor(items: Schema<T, I>, options: ArrayOptions = {}) {
    super();
    this.items = items;
    this.options = options;
  }
  accepts(node: unknown): boolean {
    return isSeq(node);
  }
  expected(): string {
    return "a list";
  }
  fromInput(input: readonly I[]): readonly T[] {
    return input.map((i) => this.items.fromInput(i));
  }
  protected decodeNode(
    node: unknown,
    path: string,
    ctx: DecodeContext,
    depth: number,
  ): Decoded<readonly T[]> {
    if (!isSeq(node)) {
      report(ctx, node, path, `expected a list, got ${describeNode(node)}`);
      return INVALID;
    }
    // Bad items are reported and left out, so later checks still see the good ones.
    const out: T[] = [];
    const seen = new Map<string, number>();
    node.items.forEach((item, i) => {
      const p = `${path}[${i}]`;
      const v = this.items.decode(item, p, ctx, depth + 1);
      if (v === INVALID) return;
      if (this.options.unique) {
        const k = JSON.stringify(v);
        const first = seen.get(k);
        if (first !== undefined) {
          report(ctx, deref(item, ctx), p, `duplicate entry ${k} (also at ${path}[${first}])`);
          return;
        }
        seen.set(k, i);
      }
      out.push(v);
    });
    return out;
  }
  protected toJson(): JsonSchema {
    const j: JsonSchema = { type: "array", items: this.items.jsonSchema() };
    if (this.options.unique) j.uniqueItems = true;
    return j;
  }
}

interface Entry {
  readonly key: string;
  readonly keyNode: unknown;
  readonly value: unknown;
}

/**
 * The string-keyed entries of a YAML map, with `<<` merge keys expanded (explicit keys
 * win over merged ones; earlier merge sources win over later ones).
 */
function mapEntries(map: YAMLMap, path: string, ctx: DecodeContext, depth: number): Entry[] | typeof INVALID {
  const explicit: Entry[] = [];
  const merged: Entry[] = [];
  let bad = false;
  for (const pair of map.items) {
    const keyNode = pair.key;
    if (!isScalar(keyNode) || typeof keyNode.value !== "string") {
      report(ctx, keyNode, path, `keys must be strings, got ${describeNode(keyNode)}`);
      bad = true;
      continue;
    }
    if (keyNode.value === "<<" && keyNode.type === "PLAIN") {
      const target = deref(pair.value, ctx);
      const sources = isSeq(target) ? target.items.map((s) => deref(s, ctx)) : [target];
      for (const src of sources) {
        if (!isMap(src) || depth > MAX_DEPTH) {
          report(ctx, src, path, `a "<<" merge key needs a map or a list of maps, got ${describeNode(src)}`);
          bad = true;
          continue;
        }
        const inner = mapEntries(src, path, ctx, depth + 1);
        if (inner === INVALID) bad = true;
        else merged.push(...inner);
      }
      continue;
    }
    explicit.push({ key: keyNode.value, keyNode, value: pair.value });
  }
  if (bad) return INVALID;
  const seen = new Set(explicit.map((e) => e.key));
  const out = [...explicit];
  for (const e of merged) {
    if (seen.has(e.key)) continue;
    seen.add(e.key);
    out.push(e);
  }
  return out;
}

/** Options of {@link RecordSchema}. */
export interface RecordOptions {
  /** Check applied to every key; returns the problem or `undefined`. */
  readonly keyCheck?: ((key: string) => string | undefined) | undefined;
  /** JSON Schema for keys (`propertyNames`). */
  readonly keyJson?: JsonSchema | undefined;
}

/** A map from user-chosen keys to values of one schema. */
export class RecordSchema<T, I> extends Schema<Readonly<Record<string, T>>, Readonly<Record<string, I>>> {
  readonly values: Schema<T, I>;
  readonly options: RecordOptions;
  constructor(values: Schema<T, I>, options: RecordOptions = {}) {
    super();
    this.values = values;
    this.options = options;
  }
  accepts(node: unknown): boolean {
    return isMap(node);
  }
  expected(): string {
    return "a map";
  }
  fromInput(input: Readonly<Record<string, I>>): Readonly<Record<string, T>> {
    const out: Record<string, T> = {};
    for (const [k, v] of Object.entries(input)) out[k] = this.values.fromInput(v);
    return out;
  }
  protected decodeNode(
    node: unknown,
    path: string,
    ctx: DecodeContext,
    depth: number,
  ): Decoded<Readonly<Record<string, T>>> {
    if (!isMap(node)) {
      report(ctx, node, path, `expected a map, got ${describeNode(node)}`);
      return INVALID;
    }
    const entries = mapEntries(node, path, ctx, depth);
    if (entries === INVALID) return INVALID;
    const out: Record<string, T> = {};
    for (const e of entries) {
      const p = joinPath(path, e.key);
      const problem = this.options.keyCheck?.(e.key);
      if (problem !== undefined) {
        report(ctx, e.keyNode, p, problem);
        continue;
      }
      const v = this.values.decode(e.value, p, ctx, depth + 1);
      if (v !== INVALID) out[e.key] = v;
    }
    return out;
  }
  protected toJson(): JsonSchema {
    const j: JsonSchema = { type: "object", additionalProperties: this.values.jsonSchema() };
    if (this.options.keyJson) j.propertyNames = this.options.keyJson;
    return j;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: variance-free bound for heterogeneous field maps
type AnySchema = Schema<any, any>;
// biome-ignore lint/suspicious/noExplicitAny: variance-free bound for heterogeneous field maps
type AnyField = AnySchema | Field<any, any, FieldMode>;
/** The field declarations of an {@link ObjectSchema}. */
export type Fields = Readonly<Record<string, AnyField>>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
// biome-ignore lint/suspicious/noExplicitAny: inference helpers
type ValueOf<F> = F extends Field<infer T, any, FieldMode> ? T : F extends Schema<infer T, any> ? T : never;
// biome-ignore lint/suspicious/noExplicitAny: inference helpers
type InputOf<F> = F extends Field<any, infer I, FieldMode> ? I : F extends Schema<any, infer I> ? I : never;
// biome-ignore lint/suspicious/noExplicitAny: inference helpers
type IsOptional<F> = F extends Field<any, any, "optional"> ? true : false;
// biome-ignore lint/suspicious/noExplicitAny: inference helpers
type IsRequiredInput<F> = F extends Field<any, any, "optional" | "default"> ? false : true;

/** The typed value of an object with fields `F`: absent optional fields are `undefined`. */
export type ObjectValue<F extends Fields> = Simplify<
  { readonly [K in keyof F as IsOptional<F[K]> extends true ? never : K]: ValueOf<F[K]> } & {
    readonly [K in keyof F as IsOptional<F[K]> extends true ? K : never]?: ValueOf<F[K]> | undefined;
  }
>;

/** The input (file) shape of an object with fields `F`. */
export type ObjectInput<F extends Fields> = Simplify<
  { readonly [K in keyof F as IsRequiredInput<F[K]> extends true ? K : never]: InputOf<F[K]> } & {
    readonly [K in keyof F as IsRequiredInput<F[K]> extends true ? never : K]?: InputOf<F[K]>;
  }
>;

function asField(f: AnyField): Field<unknown, unknown, FieldMode> {
  return f instanceof Field ? f : new Field(f as Schema<unknown, unknown>, "required");
}

/** Keys starting with this are ignored where {@link ObjectOptions.extensions} is on (YAML anchor holders). */
export const EXTENSION_PREFIX = "x-";

/** Options of {@link ObjectSchema}. */
export interface ObjectOptions {
  /** Ignore keys starting with {@link EXTENSION_PREFIX} (like docker-compose's `x-` keys). */
  readonly extensions?: boolean | undefined;
}

/** A map with a fixed set of keys; unknown keys are errors with a did-you-mean. */
export class ObjectSchema<F extends Fields> extends Schema<ObjectValue<F>, ObjectInput<F>> {
  readonly fields: F;
  readonly options: ObjectOptions;
  constructor(fields: F, options: ObjectOptions = {}) {
    super();
    this.fields = fields;
    this.options = options;
  }
  accepts(node: unknown): boolean {
    return isMap(node);
  }
  expected(): string {
    return "a map";
  }
  fromInput(input: ObjectInput<F>): ObjectValue<F> {
    const out: Record<string, unknown> = {};
    const given = input as Record<string, unknown>;
    for (const [k, f] of Object.entries(this.fields)) {
      const field = asField(f);
      if (given[k] !== undefined) out[k] = field.schema.fromInput(given[k]);
      else if (field.mode === "default") out[k] = field.schema.fromInput(field.defaultInput);
      else if (field.mode === "required") throw new Error(`schema bug: default lacks required key ${k}`);
    }
    return out as ObjectValue<F>;
  }
  protected decodeNode(
    node: unknown,
    path: string,
    ctx: DecodeContext,
    depth: number,
  ): Decoded<ObjectValue<F>> {
    if (!isMap(node)) {
      report(ctx, node, path, `expected a map, got ${describeNode(node)}`);
      return INVALID;
    }
    const entries = mapEntries(node, path, ctx, depth);
    if (entries === INVALID) return INVALID;
    // A bad value is reported and replaced by its default (or left out), so the object stays
    // usable for the semantic checks that run next; only a required key can end up missing.
    const known = Object.keys(this.fields);
    const out: Record<string, unknown> = {};
    const present = new Set<string>();
    for (const e of entries) {
      const p = joinPath(path, e.key);
      const f = this.fields[e.key];
      if (f === undefined && this.options.extensions && e.key.startsWith(EXTENSION_PREFIX)) continue;
      if (f === undefined) {
        const hint = didYouMean(e.key, known) || `; known keys: ${known.join(", ")}`;
        report(ctx, e.keyNode, p, `unknown key ${JSON.stringify(e.key)}${hint}`);
        continue;
      }
      present.add(e.key);
      const v = asField(f).schema.decode(e.value, p, ctx, depth + 1);
      if (v !== INVALID) out[e.key] = v;
    }
    for (const [k, f] of Object.entries(this.fields)) {
      if (out[k] !== undefined) continue;
      const field = asField(f);
      if (field.mode === "required" && !present.has(k)) {
        report(ctx, node, path, `missing required key ${JSON.stringify(k)}`);
      } else if (field.mode === "default") {
        out[k] = field.schema.fromInput(field.defaultInput);
      }
    }
    return out as ObjectValue<F>;
  }
  protected toJson(): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const [k, f] of Object.entries(this.fields)) {
      const field = asField(f);
      let j = field.schema.jsonSchema();
      if (field.description !== undefined) {
        const { description: _, ...rest } = j;
        j = { description: field.description, ...rest };
      }
      properties[k] = field.mode === "default" ? { ...j, default: field.defaultInput as Json } : j;
      if (field.mode === "required") required.push(k);
    }
    const j: JsonSchema = { type: "object", properties, additionalProperties: false };
    if (this.options.extensions) j.patternProperties = { [`^${EXTENSION_PREFIX}`]: {} };
    if (required.length > 0) j.required = required;
    return j;
  }
}

/** One of several schemas, chosen by the YAML node's kind (a string, a map…). */
export class UnionSchema<T, I> extends Schema<T, I> {
  readonly members: readonly Schema<T, I>[];
  constructor(members: readonly Schema<T, I>[]) {
    super();
    this.members = members;
  }
  accepts(node: unknown): boolean {
    return this.members.some((m) => m.accepts(node));
  }
  expected(): string {
    return this.members.map((m) => m.expected()).join(" or ");
  }
  fromInput(input: I): T {
    // Defaults of a union are written in the first member's input shape.
    return this.members[0]!.fromInput(input);
  }
  protected decodeNode(node: unknown, path: string, ctx: DecodeContext, depth: number): Decoded<T> {
    const m = this.members.find((s) => s.accepts(node));
    if (m === undefined) {
      report(ctx, node, path, `expected ${this.expected()}, got ${describeNode(node)}`);
      return INVALID;
    }
    return m.decode(node, path, ctx, depth + 1);
  }
  protected toJson(): JsonSchema {
    return { anyOf: this.members.map((m) => m.jsonSchema()) };
  }
}

/** The typed value a schema decodes to. */
// biome-ignore lint/suspicious/noExplicitAny: inference helper
export type Infer<S extends Schema<any, any>> = S["_type"];
/** The file (input) shape a schema accepts. */
// biome-ignore lint/suspicious/noExplicitAny: inference helper
export type InferInput<S extends Schema<any, any>> = S["_input"];

/** Builder functions; `s.object({...})` etc. */
export const s = {
  string: (options?: StringOptions) => new StringSchema<string>(options),
  enum: <const V extends readonly string[]>(values: V, options?: StringOptions) =>
    new StringSchema<V[number]>(options, values),
  int: (options?: IntOptions) => new IntSchema(options),
  /** A finite number (fractions allowed) within optional bounds. */
  number: (options?: Omit<IntOptions, "fraction">) => new IntSchema({ ...options, fraction: true }),
  bool: () => new BoolSchema(),
  duration: (options?: DurationOptions) => new DurationSchema(options),
  envValue: () => new EnvValueSchema(),
  array: <T, I>(items: Schema<T, I>, options?: ArrayOptions) => new ArraySchema(items, options),
  record: <T, I>(values: Schema<T, I>, options?: RecordOptions) => new RecordSchema(values, options),
  object: <F extends Fields>(fields: F, options?: ObjectOptions) => new ObjectSchema(fields, options),
  union: <A, AI, B, BI>(a: Schema<A, AI>, b: Schema<B, BI>) =>
    new UnionSchema<A | B, AI | BI>([
      a as unknown as Schema<A | B, AI | BI>,
      b as unknown as Schema<A | B, AI | BI>,
    ]),
};
