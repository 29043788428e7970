/**
 * A model-API test double for the agent CLIs (a dev tool for tests and benches; never
 * imported by shipped code): Anthropic Messages, OpenAI Responses and Chat Completions, and
 * Gemini generateContent/streamGenerateContent on 127.0.0.1, scripted per test. See
 * docs/agents.md for how each CLI is pointed at it.
 */
export { type ApiKind, type Classified, classify, fillSchema, type Route, route } from "./requests.js";
export { type Planned, pace, type Reply, Script, shellCall } from "./script.js";
export { type ModelApi, type RequestRecord, startModelApi } from "./server.js";
export { errorBody, type Frames, streamFrames, type ToolCall, wholeBody } from "./wire.js";
