/**
 * The container node kinds of the schema builder (schema-builder.ts): lists, records (maps
 * with user-chosen keys), objects (a fixed set of keys, unknown ones reported with a
 * did-you-mean) and unions (a member chosen by the YAML node's kind), plus the typed value
 * and file shape of an object's fields. Maps follow `<<` merge keys. A bad member is
 * reported and dropped (or defaulted) so one decode reports everything. Pure.
 */
import { isMap, isScalar, isSeq, type YAMLMap } from "yaml";
import {
  type DecodeContext,
  type Decoded,
  deref,
  describeNode,
  Field,
  type FieldMode,
  INVALID,
  type Json,
  type JsonSchema,
  joinPath,
  MAX_DEPTH,
  report,
  Schema,
} from "./schema-core.js";
import { didYouMean } from "./suggest.js";

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
    const seen = this.options.unique ? new Map<string, number>() : undefined;
    const items = node.items;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      const p = `${path}[${i}]`;
      const v = this.items.decode(item, p, ctx, depth + 1);
      if (v === INVALID) continue;
      if (seen) {
        const k = JSON.stringify(v);
        const first = seen.get(k);
        if (first !== undefined) {
          report(ctx, deref(item, ctx), p, `duplicate entry ${k} (also at ${path}[${first}])`);
          continue;
        }
        seen.set(k, i);
      }
      out.push(v);
    }
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
  const items = map.items;
  for (let i = 0; i < items.length; i++) {
    const pair = items[i]!;
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
  if (merged.length === 0) return explicit;
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
      // `__proto__` cannot be a key of a plain object: assigned, it would be dropped or replace
      // the map's prototype.
      const problem =
        e.key === "__proto__" ? 'the key "__proto__" is not allowed' : this.options.keyCheck?.(e.key);
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

/** A declared field of an {@link ObjectSchema}, by key. */
interface DeclaredField {
  readonly key: string;
  readonly field: Field<unknown, unknown, FieldMode>;
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
  /** `fields` as {@link Field}s, in declaration order (made once: every decode walks them). */
  #declared: readonly DeclaredField[] | undefined;
  constructor(fields: F, options: ObjectOptions = {}) {
    super();
    this.fields = fields;
    this.options = options;
  }
  #fields(): readonly DeclaredField[] {
    this.#declared ??= Object.entries(this.fields).map(([key, f]) => ({ key, field: asField(f) }));
    return this.#declared;
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
    const out: Record<string, unknown> = {};
    /** Keys present whose value decoded to nothing (made only when one does). */
    let unset: Set<string> | undefined;
    // Indexed loops: a decode runs once per agent in a cold process, where an iterator costs
    // an allocation per step.
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      const p = joinPath(path, e.key);
      // Own fields only: a key named like an Object.prototype member (`toString`, `__proto__`)
      // is an unknown key, not that member.
      const f = Object.hasOwn(this.fields, e.key) ? this.fields[e.key] : undefined;
      if (f === undefined && this.options.extensions && e.key.startsWith(EXTENSION_PREFIX)) continue;
      if (f === undefined) {
        const known = Object.keys(this.fields);
        const hint = didYouMean(e.key, known) || `; known keys: ${known.join(", ")}`;
        report(ctx, e.keyNode, p, `unknown key ${JSON.stringify(e.key)}${hint}`);
        continue;
      }
      const v = asField(f).schema.decode(e.value, p, ctx, depth + 1);
      if (v !== INVALID) out[e.key] = v;
      if (v === INVALID || v === undefined) {
        unset ??= new Set();
        unset.add(e.key);
      }
    }
    const declared = this.#fields();
    for (let i = 0; i < declared.length; i++) {
      const { key: k, field } = declared[i]!;
      if (out[k] !== undefined) continue;
      // Absent (a present key with a bad value was reported already).
      if (field.mode === "required" && unset?.has(k) !== true) {
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
