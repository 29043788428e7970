/**
 * A small in-house schema builder. The city file's shape is declared once (schema.ts) and
 * everything else is derived from that declaration: the TypeScript types (`Infer`), the
 * decoder that validates a positioned YAML tree (every issue gets `file:line:col` and a key
 * path), and the JSON Schema shipped as `city.schema.json`. This module is the builder
 * functions `s`; the node base and decode state are in schema-core.ts, the node kinds in
 * schema-scalars.ts and schema-containers.ts. Pure.
 */
import {
  type ArrayOptions,
  ArraySchema,
  type Fields,
  type ObjectOptions,
  ObjectSchema,
  type RecordOptions,
  RecordSchema,
  UnionSchema,
} from "./schema-containers.js";
import type { Schema } from "./schema-core.js";
import {
  BoolSchema,
  type DurationOptions,
  DurationSchema,
  EnvValueSchema,
  type IntOptions,
  IntSchema,
  type StringOptions,
  StringSchema,
} from "./schema-scalars.js";

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
