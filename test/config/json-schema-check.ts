/**
 * A small, independent JSON Schema (draft-07 subset) validator for tests: it checks a
 * plain JS value against the schema gc prints, so "the shipped schema accepts the example"
 * is a real check rather than the decoder agreeing with itself. Unknown keywords throw.
 */

type Schema = Record<string, unknown>;

const IGNORED = new Set(["$schema", "$id", "title", "description", "default"]);
const KNOWN = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "propertyNames",
  "items",
  "enum",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "uniqueItems",
  "anyOf",
]);

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function typeMatches(v: unknown, t: string): boolean {
  const actual = typeOf(v);
  return actual === t || (t === "number" && actual === "integer");
}

/** Every violation of `schema` by `value`, as `path: problem` strings (empty = valid). */
export function jsonSchemaErrors(schema: Schema, value: unknown, path = "$"): string[] {
  const errors: string[] = [];
  for (const k of Object.keys(schema)) {
    if (!IGNORED.has(k) && !KNOWN.has(k))
      throw new Error(`json-schema-check: unsupported keyword ${k} at ${path}`);
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((t) => typeMatches(value, t))) {
      return [`${path}: expected ${types.join("|")}, got ${typeOf(value)}`];
    }
  }
  if (schema.enum !== undefined && !(schema.enum as unknown[]).some((e) => e === value)) {
    errors.push(`${path}: ${JSON.stringify(value)} not in enum`);
  }
  if (schema.anyOf !== undefined) {
    const ok = (schema.anyOf as Schema[]).some((s) => jsonSchemaErrors(s, value, path).length === 0);
    if (!ok) errors.push(`${path}: matches none of anyOf`);
  }
  if (typeof value === "string") {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern as string, "u").test(value)) {
      errors.push(`${path}: ${JSON.stringify(value)} does not match ${schema.pattern as string}`);
    }
    const len = [...value].length;
    if (schema.minLength !== undefined && len < (schema.minLength as number))
      errors.push(`${path}: too short`);
    if (schema.maxLength !== undefined && len > (schema.maxLength as number))
      errors.push(`${path}: too long`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < (schema.minimum as number))
      errors.push(`${path}: below minimum`);
    if (schema.maximum !== undefined && value > (schema.maximum as number))
      errors.push(`${path}: above maximum`);
  }
  if (Array.isArray(value)) {
    if (schema.items !== undefined) {
      value.forEach((item, i) => {
        errors.push(...jsonSchemaErrors(schema.items as Schema, item, `${path}[${i}]`));
      });
    }
    if (schema.uniqueItems === true) {
      const seen = new Set(value.map((v) => JSON.stringify(v)));
      if (seen.size !== value.length) errors.push(`${path}: items not unique`);
    }
  }
  if (typeOf(value) === "object") {
    const obj = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const r of (schema.required ?? []) as string[]) {
      if (!(r in obj)) errors.push(`${path}: missing required ${r}`);
    }
    for (const [k, v] of Object.entries(obj)) {
      const p = `${path}.${k}`;
      if (schema.propertyNames !== undefined)
        errors.push(...jsonSchemaErrors(schema.propertyNames as Schema, k, p));
      const patterns = Object.entries((schema.patternProperties ?? {}) as Record<string, Schema>).filter(
        ([re]) => new RegExp(re, "u").test(k),
      );
      for (const [, s] of patterns) errors.push(...jsonSchemaErrors(s, v, p));
      if (props[k] !== undefined) errors.push(...jsonSchemaErrors(props[k], v, p));
      else if (patterns.length > 0) continue;
      else if (schema.additionalProperties === false) errors.push(`${p}: additional property not allowed`);
      else if (typeof schema.additionalProperties === "object") {
        errors.push(...jsonSchemaErrors(schema.additionalProperties as Schema, v, p));
      }
    }
  }
  return errors;
}
