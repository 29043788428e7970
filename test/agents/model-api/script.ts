/**
 * A test's script for the model-API double: which reply each agent turn gets, chosen by the
 * prompt it carries (the first rule whose text occurs in the last user message; each match
 * takes the rule's next reply, the last one repeating), and how a reply is cut into paced
 * chunks. Side calls (titles, routers, classifiers) never consume the script: they are
 * answered in the shape they ask for. Pure.
 */
import { type Classified, fillSchema } from "./requests.js";
import type { ToolCall } from "./wire.js";

/** One scripted answer to an agent turn. */
export type Reply =
  /** Text, streamed in `chunks` parts over `overMs`, with a `silenceMs` pause mid-stream. */
  | { readonly text: string; readonly chunks?: number; readonly overMs?: number; readonly silenceMs?: number }
  /**
   * A call of the CLI's shell tool running `shell` (asked so the CLI wants permission:
   * Codex's call requests escalated permissions); the turn's follow-up after the tool's
   * result gets `then`.
   */
  | { readonly shell: string; readonly after: string }
  /** An HTTP error in the API's own shape (429 with Retry-After, 529/503 overloaded, 401). */
  | { readonly error: number; readonly retryAfterS?: number; readonly message?: string };

/** What the server sends for one request. */
export type Planned =
  | { readonly kind: "text"; readonly parts: readonly string[]; readonly pausesMs: readonly number[] }
  | { readonly kind: "tool"; readonly call: ToolCall }
  | {
      readonly kind: "error";
      readonly status: number;
      readonly retryAfterS?: number;
      readonly message: string;
    };

interface Rule {
  readonly match: string | RegExp;
  readonly replies: readonly Reply[];
  served: number;
}

/** The shell tools of the CLIs, and the arguments each takes. */
const SHELL_TOOLS: Readonly<Record<string, (cmd: string) => Record<string, unknown>>> = {
  Bash: (command) => ({ command, description: "Run the command the test asked for" }),
  exec_command: (cmd) => ({
    cmd,
    sandbox_permissions: "require_escalated",
    justification: "The test asks to run this command",
  }),
  run_shell_command: (command) => ({ command, description: "Run the command the test asked for" }),
  bash: (command) => ({ command, description: "Run the command the test asked for" }),
  shell: (cmd) => ({ command: ["bash", "-lc", cmd] }),
};

/** The call of the request's shell tool running `cmd`; throws when it declares none. */
export function shellCall(tools: readonly string[], cmd: string, id: string): ToolCall {
  const name = Object.keys(SHELL_TOOLS).find((t) => tools.includes(t));
  if (!name) throw new Error(`no shell tool among the request's tools (${tools.join(", ")})`);
  return { id, name, args: SHELL_TOOLS[name]!(cmd) };
}

/**
 * `text` cut into `chunks` non-empty parts and the pause before each (the first immediate):
 * the gaps share `overMs - silenceMs`, and the middle gap also holds the silence. Pure.
 */
export function pace(
  text: string,
  chunks = 1,
  overMs = 0,
  silenceMs = 0,
): { parts: string[]; pausesMs: number[] } {
  const chars = [...text];
  const n = Math.max(1, Math.min(chunks, chars.length));
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    parts.push(
      chars.slice(Math.floor((i * chars.length) / n), Math.floor(((i + 1) * chars.length) / n)).join(""),
    );
  }
  const gap = n > 1 ? Math.max(0, overMs - silenceMs) / (n - 1) : 0;
  const middle = Math.floor(n / 2);
  const pausesMs = parts.map((_, i) => (i === 0 ? 0 : Math.round(gap + (i === middle ? silenceMs : 0))));
  return { parts, pausesMs };
}

/** A test's script. */
export class Script {
  readonly #rules: Rule[] = [];
  #then: string | undefined;
  #calls = 0;

  /** Text for turns no rule matches. */
  readonly fallback: string;

  constructor(fallback = "Done.") {
    this.fallback = fallback;
  }

  /** Turns whose prompt contains (or matches) `match` get `replies`, one per turn, the last repeating. */
  on(match: string | RegExp, ...replies: Reply[]): this {
    if (replies.length === 0) throw new Error("a rule needs at least one reply");
    this.#rules.push({ match, replies, served: 0 });
    return this;
  }

  /** What to send for the classified request `c`. */
  plan(c: Classified): Planned {
    if (c.kind === "side") return side(c, `call_side_${++this.#calls}`);
    if (c.toolResult) {
      const then = this.#then ?? this.fallback;
      this.#then = undefined;
      return { kind: "text", ...pace(then) };
    }
    const rule = this.#rules.find((r) =>
      c.userTexts.some((t) => (typeof r.match === "string" ? t.includes(r.match) : r.match.test(t))),
    );
    const reply: Reply = rule
      ? rule.replies[Math.min(rule.served++, rule.replies.length - 1)]!
      : { text: this.fallback };
    if ("error" in reply) {
      return {
        kind: "error",
        status: reply.error,
        ...(reply.retryAfterS !== undefined ? { retryAfterS: reply.retryAfterS } : {}),
        message: reply.message ?? `scripted error ${reply.error}`,
      };
    }
    if ("shell" in reply) {
      this.#then = reply.after;
      return { kind: "tool", call: shellCall(c.tools, reply.shell, `call_${++this.#calls}`) };
    }
    return { kind: "text", ...pace(reply.text, reply.chunks, reply.overMs, reply.silenceMs) };
  }
}

/** A side call's answer: its forced tool called with schema-shaped arguments, else schema-shaped JSON text, else a title. */
function side(c: Classified, id: string): Planned {
  if (c.forcedTool) {
    const args = fillSchema(c.schema);
    return {
      kind: "tool",
      call: {
        id,
        name: c.forcedTool,
        args: typeof args === "object" && args ? (args as Record<string, unknown>) : {},
      },
    };
  }
  const text = c.schema !== undefined ? JSON.stringify(fillSchema(c.schema)) : "Test session";
  return { kind: "text", parts: [text], pausesMs: [0] };
}
