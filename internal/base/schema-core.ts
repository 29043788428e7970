/**
 * The core of the in-house schema builder (schema-builder.ts): the {@link Schema} node every
 * kind extends, object {@link Field}s, the state of one decode run, and the position and
 * issue helpers every decoder reports through (issues get `file:line:col` and a key path).
 * The node kinds live in schema-scalars.ts and schema-containers.ts. Pure.
 */
import { type Document, isAlias, isMap, isScalar, isSeq, type LineCounter } from "yaml";
import type { ConfigIssue } from "./errors.js";
import type { UsedVariable } from "./interpolate.js";

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
/** A decoded value, or {@link INVALID}. */
export type Decoded<T> = T | typeof INVALID;

/** Deepest nesting (and alias chain) a decode follows. */
export const MAX_DEPTH = 64;

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

/** `node` with YAML aliases followed (at most {@link MAX_DEPTH} deep). */
export function deref(node: unknown, ctx: DecodeContext): unknown {
  let n = node;
  for (let i = 0; i < MAX_DEPTH && isAlias(n); i++) n = n.resolve(ctx.doc);
  return n;
}

/** Human description of what a YAML node holds, for "expected X, got Y" messages. */
export function describeNode(node: unknown): string {
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

/** The typed value a schema decodes to. */
// biome-ignore lint/suspicious/noExplicitAny: inference helper
export type Infer<S extends Schema<any, any>> = S["_type"];
/** The file (input) shape a schema accepts. */
// biome-ignore lint/suspicious/noExplicitAny: inference helper
export type InferInput<S extends Schema<any, any>> = S["_input"];
