/**
 * What one model-API request asks for, read from its body whatever the wire format: which API,
 * whether it is an agent turn or a side call (title, router, classifier), the prompt (the text
 * of the last user message), whether it carries a tool result, and the JSON schema or forced
 * tool a side call wants its answer shaped by. Pure.
 */

/** The wire formats the double speaks. */
export type ApiKind = "anthropic" | "responses" | "chat" | "gemini";

/** A request, classified. */
export interface Classified {
  readonly api: ApiKind;
  /** `turn`: the agent loop (declares tools, forces nothing); `side`: anything else. */
  readonly kind: "turn" | "side";
  readonly stream: boolean;
  readonly model: string;
  /** Text blocks of the last user message (system reminders left out). */
  readonly userTexts: readonly string[];
  /** The last message is a tool's result (the turn's follow-up after a tool call). */
  readonly toolResult: boolean;
  /** The names of the tools the request declares. */
  readonly tools: readonly string[];
  /** A side call's answer shape: a JSON schema for a text reply, or a forced tool's. */
  readonly schema?: unknown;
  readonly forcedTool?: string | undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** Text parts of a message's content (a string, or a list of typed parts), reminders dropped. */
function texts(content: unknown): string[] {
  if (typeof content === "string") return [content];
  const out: string[] = [];
  for (const p of arr(content)) {
    if (!isObj(p)) continue;
    const t = str(p.text);
    const type = str(p.type);
    if (t && (type === "" || type === "text" || type === "input_text")) out.push(t);
  }
  return out.filter((t) => !t.trimStart().startsWith("<system-reminder>"));
}

function anthropic(body: Obj, model: string): Classified {
  // Claude Code may append a system-role message after the user's: skip those.
  const last = arr(body.messages)
    .filter(isObj)
    .filter((m) => m.role !== "system")
    .at(-1);
  const content = arr(last?.content);
  const tools = arr(body.tools).filter(isObj);
  const choice = isObj(body.tool_choice) ? body.tool_choice : undefined;
  const forcedTool = choice?.type === "tool" ? str(choice.name) : undefined;
  const schemaFormat = isObj(body.output_format) ? body.output_format.schema : undefined;
  return {
    api: "anthropic",
    kind: tools.length > 0 && !forcedTool && schemaFormat === undefined ? "turn" : "side",
    stream: body.stream === true,
    model,
    userTexts: last?.role === "user" ? texts(last.content) : [],
    toolResult: content.some((b) => isObj(b) && b.type === "tool_result"),
    tools: tools.map((t) => str(t.name)),
    schema: forcedTool ? tools.find((t) => t.name === forcedTool)?.input_schema : schemaFormat,
    forcedTool,
  };
}

function responses(body: Obj, model: string): Classified {
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : arr(body.input);
  const last = input
    .filter(isObj)
    .filter((m) => m.role !== "system" && m.role !== "developer")
    .at(-1);
  const tools = arr(body.tools).filter(isObj);
  const format = isObj(body.text) && isObj(body.text.format) ? body.text.format : undefined;
  const schema = format?.type === "json_schema" ? format.schema : undefined;
  return {
    api: "responses",
    kind: tools.length > 0 && schema === undefined ? "turn" : "side",
    stream: body.stream === true,
    model,
    userTexts: last?.role === "user" ? texts(last.content) : [],
    toolResult: last?.type === "function_call_output" || last?.type === "custom_tool_call_output",
    tools: tools.map((t) => str(t.name)),
    schema,
  };
}

function chat(body: Obj, model: string): Classified {
  const last = arr(body.messages)
    .filter(isObj)
    .filter((m) => m.role !== "system")
    .at(-1);
  const tools = arr(body.tools).filter(isObj);
  const choice =
    isObj(body.tool_choice) && isObj(body.tool_choice.function) ? body.tool_choice.function : undefined;
  const forcedTool = choice ? str(choice.name) : undefined;
  const fmt = isObj(body.response_format) ? body.response_format : undefined;
  const schema = fmt?.type === "json_schema" && isObj(fmt.json_schema) ? fmt.json_schema.schema : undefined;
  const toolFn = (n: string) =>
    tools.map((t) => (isObj(t.function) ? t.function : {})).find((f) => f.name === n);
  return {
    api: "chat",
    kind: tools.length > 0 && !forcedTool && schema === undefined ? "turn" : "side",
    stream: body.stream === true,
    model,
    userTexts: last?.role === "user" ? texts(last.content) : [],
    toolResult: last?.role === "tool",
    tools: tools.map((t) => (isObj(t.function) ? str(t.function.name) : "")),
    schema: forcedTool ? toolFn(forcedTool)?.parameters : schema,
    forcedTool,
  };
}

function gemini(body: Obj, model: string, stream: boolean): Classified {
  const last = arr(body.contents).filter(isObj).at(-1);
  const parts = arr(last?.parts).filter(isObj);
  const decls = arr(body.tools)
    .filter(isObj)
    .flatMap((t) => arr(t.functionDeclarations).filter(isObj));
  const gen = isObj(body.generationConfig) ? body.generationConfig : {};
  const schema = gen.responseJsonSchema ?? gen.responseSchema;
  return {
    api: "gemini",
    kind: decls.length > 0 && schema === undefined ? "turn" : "side",
    stream,
    model,
    userTexts: last?.role === "user" ? texts(parts.filter((p) => typeof p.text === "string")) : [],
    toolResult: parts.some((p) => isObj(p.functionResponse)),
    tools: decls.map((d) => str(d.name)),
    schema,
  };
}

/** The route a path names, or `undefined` (the double answers 404). */
export type Route =
  | { readonly api: ApiKind; readonly op: "generate"; readonly model?: string; readonly stream?: boolean }
  | { readonly api: "anthropic" | "gemini"; readonly op: "count" }
  | { readonly op: "hello" };

/** Maps a method and URL to what the double does with it. Pure. */
export function route(method: string, url: string): Route | undefined {
  const u = new URL(url, "http://x");
  const p = u.pathname.replace(/\/+$/, "");
  if (p === "/api/hello") return { op: "hello" };
  if (method !== "POST") return undefined;
  if (p.endsWith("/v1/messages/count_tokens")) return { api: "anthropic", op: "count" };
  if (p.endsWith("/v1/messages")) return { api: "anthropic", op: "generate" };
  if (p.endsWith("/responses")) return { api: "responses", op: "generate" };
  if (p.endsWith("/chat/completions")) return { api: "chat", op: "generate" };
  const g = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/.exec(p);
  if (g) {
    if (g[2] === "countTokens") return { api: "gemini", op: "count" };
    return { api: "gemini", op: "generate", model: g[1] ?? "", stream: g[2] === "streamGenerateContent" };
  }
  return undefined;
}

/** Classifies a generate request's JSON body for the route's API. Pure. */
export function classify(r: Extract<Route, { op: "generate" }>, body: unknown): Classified {
  const b = isObj(body) ? body : {};
  const model = r.model ?? str(b.model);
  switch (r.api) {
    case "anthropic":
      return anthropic(b, model);
    case "responses":
      return responses(b, model);
    case "chat":
      return chat(b, model);
    case "gemini":
      return gemini(b, model, r.stream === true);
  }
}

/**
 * A value satisfying the JSON `schema` (OpenAPI/Gemini upper-case types too): objects with
 * every property, the first enum value (`"user"` when offered: a next-speaker check then
 * hands the turn back), numbers at least 1 (a router's complexity score must be ≥ 1). Pure.
 */
export function fillSchema(schema: unknown): unknown {
  if (!isObj(schema)) return "ok";
  const en = arr(schema.enum);
  if (en.length > 0) return en.includes("user") ? "user" : en[0];
  if (schema.const !== undefined) return schema.const;
  const alt = arr(schema.anyOf ?? schema.oneOf)[0];
  if (alt !== undefined) return fillSchema(alt);
  const type = str(Array.isArray(schema.type) ? schema.type[0] : schema.type).toLowerCase();
  switch (type) {
    case "object": {
      const props = isObj(schema.properties) ? schema.properties : {};
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, fillSchema(v)]));
    }
    case "array":
      return [];
    case "integer":
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : 1;
      return Math.max(1, min);
    }
    case "boolean":
      return false;
    case "string":
      return "Test session";
    default:
      return isObj(schema.properties) ? fillSchema({ ...schema, type: "object" }) : "ok";
  }
}
