/**
 * The scalar node kinds of the schema builder (schema-builder.ts): strings (with `${VAR}`
 * interpolation, checks and literal choices), integers and numbers, booleans, durations
 * (decoded to milliseconds) and environment values. Each decodes one YAML scalar, reports
 * what is wrong with it through schema-core.ts, and describes itself as JSON Schema. Pure.
 */
import { isScalar } from "yaml";
import { parseDuration } from "./duration.js";
import { interpolate } from "./interpolate.js";
import {
  type DecodeContext,
  type Decoded,
  describeNode,
  INVALID,
  type JsonSchema,
  report,
  Schema,
} from "./schema-core.js";
import { didYouMean } from "./suggest.js";

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
  if (r.used.length > 0) ctx.used.push(...r.used);
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
