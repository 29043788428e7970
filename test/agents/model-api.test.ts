/**
 * The model-API double's own logic, fast: routing, classifying turns from side calls in each
 * wire format, schema-shaped side answers, the script's rule order and pacing, and the server's
 * request log and errors. (That the wire format is right is shown by the real CLIs in
 * turns.e2e.test.ts.)
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  classify,
  fillSchema,
  type ModelApi,
  pace,
  route,
  Script,
  startModelApi,
} from "./model-api/index.js";

describe("model-api double: requests", () => {
  it("routes each API's paths", () => {
    expect(route("HEAD", "/api/hello")).toEqual({ op: "hello" });
    expect(route("POST", "/v1/messages?beta=true")).toEqual({ api: "anthropic", op: "generate" });
    expect(route("POST", "/v1/responses")).toEqual({ api: "responses", op: "generate" });
    expect(route("POST", "/v1/chat/completions")).toEqual({ api: "chat", op: "generate" });
    expect(route("POST", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse")).toEqual({
      api: "gemini",
      op: "generate",
      model: "gemini-x",
      stream: true,
    });
    expect(route("POST", "/v1/messages/count_tokens")).toEqual({ api: "anthropic", op: "count" });
    expect(route("GET", "/v1/models")).toBeUndefined();
  });

  it("tells a turn (tools declared) from a side call, and reads the last user text", () => {
    const turn = classify(
      { api: "anthropic", op: "generate" },
      {
        model: "m",
        stream: true,
        tools: [{ name: "Bash" }],
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "<system-reminder>x</system-reminder>" },
              { type: "text", text: "say hi" },
            ],
          },
          { role: "system", content: "env" },
        ],
      },
    );
    expect(turn).toMatchObject({ kind: "turn", userTexts: ["say hi"], tools: ["Bash"], toolResult: false });
    const title = classify(
      { api: "responses", op: "generate" },
      { input: "name it", text: { format: { type: "json_schema", schema: { type: "object" } } } },
    );
    expect(title.kind).toBe("side");
    const result = classify(
      { api: "chat", op: "generate" },
      { tools: [{ function: { name: "bash" } }], messages: [{ role: "tool", content: "ok" }] },
    );
    expect(result).toMatchObject({ kind: "turn", toolResult: true });
  });

  it("fills a router's schema with a score of at least 1 and picks `user` from an enum", () => {
    expect(
      fillSchema({
        type: "OBJECT",
        properties: {
          complexity_reasoning: { type: "STRING" },
          complexity_score: { type: "INTEGER", minimum: 1 },
        },
      }),
    ).toEqual({ complexity_reasoning: "Test session", complexity_score: 1 });
    expect(fillSchema({ enum: ["model", "user"] })).toBe("user");
  });
});

describe("model-api double: script", () => {
  it("paces: N parts, the silence in the middle gap", () => {
    const p = pace("abcdefghij", 5, 3000, 1000);
    expect(p.parts).toEqual(["ab", "cd", "ef", "gh", "ij"]);
    expect(p.pausesMs).toEqual([0, 500, 1500, 500, 500]);
    expect(p.pausesMs.reduce((a, b) => a + b)).toBe(3000);
  });

  it("serves a rule's replies in order, the last repeating; a tool result gets the tool's follow-up", () => {
    const s = new Script("fallback").on("rate", { error: 429, retryAfterS: 1 }, { text: "after" });
    s.on("file", { shell: "touch x", after: "made it" });
    const c = (text: string, toolResult = false) =>
      classify(
        { api: "anthropic", op: "generate" },
        {
          tools: [{ name: "Bash" }],
          messages: [{ role: "user", content: toolResult ? [{ type: "tool_result", content: "" }] : text }],
        },
      );
    expect(s.plan(c("rate me"))).toMatchObject({ kind: "error", status: 429, retryAfterS: 1 });
    expect(s.plan(c("rate me"))).toMatchObject({ kind: "text", parts: ["after"] });
    expect(s.plan(c("rate me"))).toMatchObject({ kind: "text", parts: ["after"] });
    expect(s.plan(c("a file"))).toMatchObject({
      kind: "tool",
      call: { name: "Bash", args: { command: "touch x" } },
    });
    expect(s.plan(c("", true))).toMatchObject({ kind: "text", parts: ["made it"] });
    expect(s.plan(c("other"))).toMatchObject({ kind: "text", parts: ["fallback"] });
  });
});

describe("model-api double: server", () => {
  let api: ModelApi | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it("streams Anthropic SSE, answers errors in the API's shape, logs every request", async () => {
    api = await startModelApi(
      new Script().on("hi", { text: "hello there", chunks: 3 }).on("busy", { error: 529 }),
    );
    const post = (body: unknown) =>
      fetch(`${api!.url}/v1/messages`, { method: "POST", body: JSON.stringify(body) });
    const r = await post({
      stream: true,
      tools: [{ name: "Bash" }],
      messages: [{ role: "user", content: "hi" }],
    });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const text = await r.text();
    const deltas = [...text.matchAll(/"text_delta","text":"([^"]*)"/g)].map((m) => m[1]);
    expect(deltas.join("")).toBe("hello there");
    expect(text).toContain("event: message_stop");
    const e = await post({ tools: [{ name: "Bash" }], messages: [{ role: "user", content: "busy" }] });
    expect(e.status).toBe(529);
    expect(await e.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    expect((await fetch(`${api.url}/api/hello`, { method: "HEAD" })).status).toBe(200);
    expect(api.turns().map((t) => [t.userTexts, t.reply, t.status])).toEqual([
      [["hi"], "text", 200],
      [["busy"], "error", 529],
    ]);
    expect(api.turns()[0]?.lastChunkAt).toBeGreaterThan(0);
  });
});
