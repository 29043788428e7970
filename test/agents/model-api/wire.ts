/**
 * The bytes of the four wire formats: server-sent-event frames of a streamed reply (split into
 * a head, the text deltas the server paces, and a tail), whole JSON bodies of unstreamed
 * replies, and each API's error body. Pure.
 */
import type { ApiKind } from "./requests.js";

/** A function call the model makes: the tool's name and its JSON arguments. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** A streamed reply: written as head, then each delta (paced), then tail. */
export interface Frames {
  readonly head: string;
  readonly deltas: readonly string[];
  readonly tail: string;
}

const sse = (event: string | undefined, data: unknown) =>
  `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

const usage = { input_tokens: 12, output_tokens: 7 };

function anthropicFrames(model: string, id: string, parts: readonly string[], call?: ToolCall): Frames {
  const start = sse("message_start", {
    type: "message_start",
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  });
  const stop = (reason: string) =>
    sse("message_delta", {
      type: "message_delta",
      delta: { stop_reason: reason, stop_sequence: null },
      usage: { output_tokens: 7 },
    }) + sse("message_stop", { type: "message_stop" });
  if (call) {
    return {
      head:
        start +
        sse("content_block_start", {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
        }) +
        sse("content_block_delta", {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(call.args) },
        }) +
        sse("content_block_stop", { type: "content_block_stop", index: 0 }) +
        stop("tool_use"),
      deltas: [],
      tail: "",
    };
  }
  return {
    head:
      start +
      sse("content_block_start", {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      }),
    deltas: parts.map((text) =>
      sse("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text },
      }),
    ),
    tail: sse("content_block_stop", { type: "content_block_stop", index: 0 }) + stop("end_turn"),
  };
}

function responsesItem(id: string, text: string, call?: ToolCall) {
  return call
    ? {
        type: "function_call",
        id: `fc_${id}`,
        call_id: call.id,
        name: call.name,
        arguments: JSON.stringify(call.args),
        status: "completed",
      }
    : {
        type: "message",
        id: `msg_${id}`,
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text, annotations: [] }],
      };
}

function responsesFrames(model: string, id: string, parts: readonly string[], call?: ToolCall): Frames {
  const response = (status: string, output: unknown[]) => ({
    id: `resp_${id}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output,
    ...(status === "completed"
      ? {
          usage: {
            ...usage,
            total_tokens: 19,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 0 },
          },
        }
      : {}),
  });
  const done = responsesItem(id, parts.join(""), call);
  const created = sse("response.created", {
    type: "response.created",
    sequence_number: 0,
    response: response("in_progress", []),
  });
  const completed = sse("response.completed", {
    type: "response.completed",
    response: response("completed", [done]),
  });
  const itemDone = sse("response.output_item.done", {
    type: "response.output_item.done",
    output_index: 0,
    item: done,
  });
  if (call) {
    return {
      head:
        created +
        sse("response.output_item.added", {
          type: "response.output_item.added",
          output_index: 0,
          item: { ...done, arguments: "", status: "in_progress" },
        }) +
        itemDone +
        completed,
      deltas: [],
      tail: "",
    };
  }
  const itemId = `msg_${id}`;
  return {
    head:
      created +
      sse("response.output_item.added", {
        type: "response.output_item.added",
        output_index: 0,
        item: { type: "message", id: itemId, role: "assistant", status: "in_progress", content: [] },
      }) +
      sse("response.content_part.added", {
        type: "response.content_part.added",
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      }),
    deltas: parts.map((delta) =>
      sse("response.output_text.delta", {
        type: "response.output_text.delta",
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        delta,
      }),
    ),
    tail:
      sse("response.output_text.done", {
        type: "response.output_text.done",
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        text: parts.join(""),
      }) +
      itemDone +
      completed,
  };
}

function chatFrames(model: string, id: string, parts: readonly string[], call?: ToolCall): Frames {
  const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
    sse(undefined, {
      id: `chatcmpl-${id}`,
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  const end = (finish: string) =>
    chunk({}, finish) +
    sse(undefined, {
      id: `chatcmpl-${id}`,
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [],
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
    }) +
    sse(undefined, "[DONE]");
  if (call) {
    return {
      head:
        chunk(
          {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                index: 0,
                id: call.id,
                type: "function",
                function: { name: call.name, arguments: JSON.stringify(call.args) },
              },
            ],
          },
          null,
        ) + end("tool_calls"),
      deltas: [],
      tail: "",
    };
  }
  return {
    head: chunk({ role: "assistant", content: "" }, null),
    deltas: parts.map((content) => chunk({ content }, null)),
    tail: end("stop"),
  };
}

function geminiChunk(model: string, parts: unknown[], finish?: string) {
  return {
    candidates: [
      { content: { role: "model", parts }, index: 0, ...(finish ? { finishReason: finish } : {}) },
    ],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 7, totalTokenCount: 19 },
    modelVersion: model,
  };
}

function geminiFrames(model: string, parts: readonly string[], call?: ToolCall): Frames {
  if (call) {
    return {
      head: sse(
        undefined,
        geminiChunk(model, [{ functionCall: { name: call.name, args: call.args } }], "STOP"),
      ),
      deltas: [],
      tail: "",
    };
  }
  const last = parts.length - 1;
  return {
    head: "",
    deltas: parts.map((text, i) =>
      sse(undefined, geminiChunk(model, [{ text }], i === last ? "STOP" : undefined)),
    ),
    tail: "",
  };
}

/** The streamed frames of a text reply split in `parts`, or of one tool call. */
export function streamFrames(
  api: ApiKind,
  model: string,
  id: string,
  parts: readonly string[],
  call?: ToolCall,
): Frames {
  switch (api) {
    case "anthropic":
      return anthropicFrames(model, id, parts, call);
    case "responses":
      return responsesFrames(model, id, parts, call);
    case "chat":
      return chatFrames(model, id, parts, call);
    case "gemini":
      return geminiFrames(model, parts, call);
  }
}

/** The JSON body of an unstreamed reply (text, or one tool call). */
export function wholeBody(api: ApiKind, model: string, id: string, text: string, call?: ToolCall): unknown {
  switch (api) {
    case "anthropic":
      return {
        id,
        type: "message",
        role: "assistant",
        model,
        content: call
          ? [{ type: "tool_use", id: call.id, name: call.name, input: call.args }]
          : [{ type: "text", text }],
        stop_reason: call ? "tool_use" : "end_turn",
        stop_sequence: null,
        usage,
      };
    case "responses":
      return {
        id: `resp_${id}`,
        object: "response",
        status: "completed",
        model,
        output: [responsesItem(id, text, call)],
        output_text: call ? "" : text,
        usage: { ...usage, total_tokens: 19 },
      };
    case "chat":
      return {
        id: `chatcmpl-${id}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [
          {
            index: 0,
            message: call
              ? {
                  role: "assistant",
                  content: null,
                  tool_calls: [
                    {
                      id: call.id,
                      type: "function",
                      function: { name: call.name, arguments: JSON.stringify(call.args) },
                    },
                  ],
                }
              : { role: "assistant", content: text },
            finish_reason: call ? "tool_calls" : "stop",
          },
        ],
        usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
      };
    case "gemini":
      return geminiChunk(
        model,
        call ? [{ functionCall: { name: call.name, args: call.args } }] : [{ text }],
        "STOP",
      );
  }
}

/** The error body each API sends with `status` (429 rate limit, 529/503 overloaded, 401). */
export function errorBody(api: ApiKind, status: number, message: string): unknown {
  switch (api) {
    case "anthropic": {
      const type =
        status === 429
          ? "rate_limit_error"
          : status === 401
            ? "authentication_error"
            : status === 529 || status === 503
              ? "overloaded_error"
              : "api_error";
      return { type: "error", error: { type, message } };
    }
    case "responses":
    case "chat": {
      const type =
        status === 429 ? "rate_limit_exceeded" : status === 401 ? "invalid_api_key" : "server_error";
      return { error: { message, type, code: type, param: null } };
    }
    case "gemini": {
      const s =
        status === 429
          ? "RESOURCE_EXHAUSTED"
          : status === 401
            ? "UNAUTHENTICATED"
            : status === 503 || status === 529
              ? "UNAVAILABLE"
              : "INTERNAL";
      return { error: { code: status, message, status: s } };
    }
  }
}
