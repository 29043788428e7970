/**
 * The ACP half of the session holder (the ACP mode, holder-mode.ts, runs it instead of a pty
 * when the spec's mode is `acp`): it spawns the agent with pipes on its stdio, speaks ACP v1 to it
 * through the official SDK's client side (`initialize`, `session/new`, `session/prompt`,
 * `session/cancel`, `authenticate`), queues prompts (one turn at a time, as ACP requires),
 * records every turn (prompt, streamed reply, tool calls, stop reason), renders a transcript
 * for peek, and holds `session/request_permission` and authentication as pending interactions
 * until answered. Everything the holder needs goes through {@link AcpHost}'s small surface.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import {
  type AuthMethod,
  type ClientConnection,
  client,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from "@agentclientprotocol/sdk";
import { describeError } from "../../base/errors.js";
import { renderTranscript, type TranscriptEntry } from "./transcript.js";
import type { AcpState, AcpStatus, AcpTurn, InteractionView } from "./wire.js";

/** What the holder gives the host. */
export interface AcpHostSpec {
  /** The gc session name (for messages). */
  readonly name: string;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** MCP servers handed to `session/new` (ACP's own shape). */
  readonly mcpServers?: readonly unknown[] | undefined;
}

/** Callbacks into the holder. */
export interface AcpHostEvents {
  /** The agent said something (an update, a reply, stderr). */
  activity(): void;
  /** Raw bytes for the holder's log (the agent's stderr, protocol errors). */
  log(chunk: Buffer): void;
  /** The agent process ended. */
  exit(code: number | null, signal: NodeJS.Signals | null): void;
}

/** Longest time `initialize` and `session/new` may take together. */
const HANDSHAKE_TIMEOUT_MS = 60_000;
/** Turns kept in memory (older ones have long been recorded by gc). */
const MAX_TURNS = 500;

interface PendingPermission {
  readonly view: InteractionView;
  readonly resolve: (r: RequestPermissionResponse) => void;
}

type Waiter = () => void;

/** One agent process and its ACP session. */
export class AcpHost {
  private readonly spec: AcpHostSpec;
  private readonly ev: AcpHostEvents;
  private child: ChildProcess | undefined;
  private conn: ClientConnection | undefined;
  private sessionId: string | undefined;
  private state: AcpState = "initializing";
  private error: string | undefined;
  private authMethods: AuthMethod[] = [];
  private agentInfo: string | undefined;
  private readonly turns: AcpTurn[] = [];
  private nextTurn = 1;
  private readonly queue: AcpTurn[] = [];
  private current: AcpTurn | undefined;
  private readonly entries: TranscriptEntry[] = [];
  private permission: PendingPermission | undefined;
  private nextRequest = 1;
  private exited = false;
  private readonly waiters = new Set<Waiter>();

  constructor(spec: AcpHostSpec, events: AcpHostEvents) {
    this.spec = spec;
    this.ev = events;
  }

  /** Pid of the agent (its own session leader, so the holder can kill its whole tree). */
  get pid(): number {
    return this.child?.pid ?? 0;
  }

  /**
   * Spawns the agent and starts the handshake in the background (its outcome shows in
   * {@link AcpHost.status}). @throws when the program cannot be spawned.
   */
  start(): Promise<void> {
    const [file, ...args] = this.spec.argv;
    if (!file) return Promise.reject(new Error("empty argv"));
    return new Promise((resolve, reject) => {
      const child = spawn(file, args, {
        cwd: this.spec.cwd,
        env: { ...this.spec.env },
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
      this.child = child;
      child.once("error", (e) => {
        if (child.pid === undefined) reject(e);
        else this.ev.log(Buffer.from(`agent error: ${describeError(e)}\n`));
      });
      child.once("spawn", () => {
        resolve();
        this.connect(child);
      });
      child.once("exit", (code, signal) => this.onExit(code, signal));
      child.stderr?.on("data", (d: Buffer) => {
        this.ev.activity();
        this.ev.log(d);
      });
      child.stdin?.on("error", () => undefined);
    });
  }

  private connect(child: ChildProcess): void {
    if (!child.stdin || !child.stdout) return;
    const stream = ndJsonStream(
      Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    );
    const app = client({ name: "gc" })
      .onNotification(methods.client.session.update, ({ params }) => this.onUpdate(params))
      .onRequest(methods.client.session.requestPermission, ({ params, signal }) =>
        this.onPermission(params, signal),
      );
    this.conn = app.connect(stream);
    void this.handshake();
  }

  private async handshake(): Promise<void> {
    const agent = this.conn?.agent;
    if (!agent) return;
    const timeout = AbortSignal.timeout(HANDSHAKE_TIMEOUT_MS);
    try {
      const init = await agent.request(
        methods.agent.initialize,
        {
          protocolVersion: PROTOCOL_VERSION,
          // Honest: gc serves neither files nor terminals to the agent.
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
          clientInfo: { name: "gc", version: "1" },
        },
        { cancellationSignal: timeout, stopWaitingOnCancel: true },
      );
      this.authMethods = init.authMethods ?? [];
      if (init.agentInfo) this.agentInfo = `${init.agentInfo.name} ${init.agentInfo.version}`;
      this.ev.activity();
      await this.newSession(timeout);
    } catch (e) {
      this.fail(`ACP handshake failed: ${agentErrorText(e)}`);
    }
  }

  /** `session/new`; an auth_required answer leaves the session waiting for an auth choice. */
  private async newSession(signal?: AbortSignal): Promise<void> {
    const agent = this.conn?.agent;
    if (!agent) return;
    try {
      const res = await agent.request(
        methods.agent.session.new,
        { cwd: this.spec.cwd, mcpServers: (this.spec.mcpServers ?? []) as never[] },
        signal ? { cancellationSignal: signal, stopWaitingOnCancel: true } : undefined,
      );
      this.sessionId = res.sessionId;
      this.setState("ready");
      this.pump();
    } catch (e) {
      if (isAuthRequired(e)) {
        this.error = `the agent needs authentication: ${agentErrorText(e)}`;
        this.setState("needs_auth");
        this.failQueued(this.authError());
        return;
      }
      throw e;
    }
  }

  private authError(): string {
    const ids = this.authMethods.map((m) => m.id).join(", ") || "none offered";
    return `the agent needs authentication (auth methods: ${ids}); answer with \`gc session respond ${this.spec.name} <method>\` or sign the agent in`;
  }

  private fail(message: string): void {
    if (this.state === "failed" || this.exited) return;
    this.error = message;
    this.ev.log(Buffer.from(`${message}\n`));
    this.setState("failed");
    this.failQueued(message);
  }

  private setState(s: AcpState): void {
    this.state = s;
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = true;
    const how = signal ? `killed by ${signal}` : `exit code ${code}`;
    if (this.current) this.finishTurn(this.current, { error: `the agent ended during the turn (${how})` });
    this.failQueued(`the agent ended (${how})`);
    this.permission = undefined;
    this.conn?.close();
    this.ev.exit(code, signal);
    this.wake();
  }

  private failQueued(message: string): void {
    for (const t of this.queue.splice(0)) this.finishTurn(t, { error: message });
  }

  // ------------------------------------------------------------------ updates

  private onUpdate(n: SessionNotification): void {
    this.ev.activity();
    const u = n.update;
    const turn = this.current;
    switch (u.sessionUpdate) {
      case "agent_message_chunk":
        if (u.content.type === "text") {
          this.append({ kind: "agent", text: u.content.text });
          if (turn) turn.reply += u.content.text;
        }
        break;
      case "tool_call": {
        const call = {
          id: u.toolCallId,
          title: u.title,
          kind: u.kind ?? "other",
          status: u.status ?? "pending",
        };
        this.entries.push({
          kind: "tool",
          id: call.id,
          title: call.title,
          toolKind: call.kind,
          status: call.status,
        });
        turn?.toolCalls.push({ ...call });
        break;
      }
      case "tool_call_update": {
        for (const e of this.entries) {
          if (e.kind === "tool" && e.id === u.toolCallId) {
            if (u.status) e.status = u.status;
            if (u.title) e.title = u.title;
          }
        }
        const call = turn?.toolCalls.find((c) => c.id === u.toolCallId);
        if (call) {
          if (u.status) call.status = u.status;
          if (u.title) call.title = u.title;
        }
        break;
      }
      case "plan":
        this.entries.push({
          kind: "plan",
          items: u.entries.map((e) => ({ content: e.content, status: e.status })),
        });
        break;
      default:
        break;
    }
    this.trim();
    this.wake();
  }

  private append(e: TranscriptEntry & { kind: "agent" }): void {
    const last = this.entries.at(-1);
    if (last?.kind === "agent") last.text += e.text;
    else this.entries.push({ ...e });
  }

  private trim(): void {
    // The transcript keeps the last entries only; a long-lived agent must not grow without bound.
    if (this.entries.length > 5_000) this.entries.splice(0, this.entries.length - 5_000);
  }

  private onPermission(
    params: RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<RequestPermissionResponse> {
    this.ev.activity();
    return new Promise((resolve) => {
      const view: InteractionView = {
        requestId: `perm-${this.nextRequest++}`,
        kind: "permission",
        prompt: params.toolCall.title ?? `tool call ${params.toolCall.toolCallId}`,
        options: params.options.map((o) => ({ id: o.optionId, name: o.name, kind: o.kind })),
        toolCallId: params.toolCall.toolCallId,
      };
      const done = (r: RequestPermissionResponse) => {
        if (this.permission?.view !== view) return;
        this.permission = undefined;
        const chosen = r.outcome.outcome === "selected" ? r.outcome.optionId : "cancelled";
        this.entries.push({ kind: "note", text: `[permission] ${view.prompt}: ${chosen}` });
        this.wake();
        resolve(r);
      };
      this.permission = { view, resolve: done };
      this.entries.push({
        kind: "note",
        text: `[permission needed] ${view.prompt} (${view.options.map((o) => o.id).join(" | ")})`,
      });
      signal.addEventListener("abort", () => done({ outcome: { outcome: "cancelled" } }), { once: true });
      this.wake();
    });
  }

  // ------------------------------------------------------------------ turns

  /**
   * Queues a prompt; it is sent when no turn runs. @returns the turn's id.
   * @throws Error (with a clear message) when the session cannot take prompts.
   */
  prompt(text: string): number {
    if (this.exited) throw new Error("the agent has exited");
    if (this.state === "failed") throw new Error(this.error ?? "the ACP session failed");
    if (this.state === "needs_auth") throw new Error(this.authError());
    const turn: AcpTurn = {
      id: this.nextTurn++,
      prompt: text,
      state: "queued",
      queuedAt: Date.now(),
      reply: "",
      toolCalls: [],
    };
    this.turns.push(turn);
    if (this.turns.length > MAX_TURNS) this.turns.splice(0, this.turns.length - MAX_TURNS);
    this.queue.push(turn);
    this.pump();
    this.wake();
    return turn.id;
  }

  private pump(): void {
    if (this.current || this.state !== "ready" || !this.sessionId || !this.conn) return;
    const turn = this.queue.shift();
    if (!turn) return;
    this.current = turn;
    turn.state = "running";
    turn.startedAt = Date.now();
    this.entries.push({ kind: "user", text: turn.prompt });
    const sessionId = this.sessionId;
    this.conn.agent
      .request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: turn.prompt }] })
      .then(
        (r) => this.finishTurn(turn, { stopReason: r.stopReason }),
        (e: unknown) => {
          if (this.conn?.signal.aborted && !this.exited) {
            // The pipe closed first: the exit (any moment now) ends the turn with its status.
            setTimeout(
              () => this.finishTurn(turn, { error: `the agent closed the connection: ${agentErrorText(e)}` }),
              2_000,
            ).unref();
            return;
          }
          if (!isAuthRequired(e)) {
            this.finishTurn(turn, { error: `session/prompt failed: ${agentErrorText(e)}` });
            return;
          }
          // An agent that opens sessions signed out (claude-code-acp) asks only now: from here
          // on the session waits for an auth choice, exactly as after session/new.
          this.error = `the agent is not signed in: ${agentErrorText(e)}`;
          this.setState("needs_auth");
          this.finishTurn(turn, { error: this.authError() });
          this.failQueued(this.authError());
        },
      );
  }

  private finishTurn(turn: AcpTurn, how: { stopReason?: string; error?: string }): void {
    if (turn.state === "done") return;
    turn.state = "done";
    turn.endedAt = Date.now();
    if (how.stopReason) turn.stopReason = how.stopReason;
    if (how.error) turn.error = how.error;
    if (turn.startedAt !== undefined) {
      this.entries.push({
        kind: "note",
        text: how.error
          ? `[turn ${turn.id} failed: ${how.error}]`
          : `[turn ${turn.id} ended: ${how.stopReason}]`,
      });
    }
    if (this.current === turn) this.current = undefined;
    this.wake();
    this.pump();
  }

  /** `session/cancel` for the running turn; queued prompts stay queued. Best-effort. */
  cancel(): void {
    this.permission?.resolve({ outcome: { outcome: "cancelled" } });
    if (this.sessionId && this.conn && !this.exited) {
      void this.conn.agent
        .notify(methods.agent.session.cancel, { sessionId: this.sessionId })
        .catch(() => undefined);
    }
  }

  /** Turns with an id greater than `since`, oldest first. */
  turnsSince(since: number): AcpTurn[] {
    return this.turns
      .filter((t) => t.id > since)
      .map((t) => ({ ...t, toolCalls: t.toolCalls.map((c) => ({ ...c })) }));
  }

  /** True when no turn runs or waits and nothing is pending. */
  private idle(): boolean {
    return !this.current && this.queue.length === 0 && this.permission === undefined;
  }

  // ------------------------------------------------------------------ interactions

  /** The permission request or auth choice the session waits on. */
  pending(): InteractionView | undefined {
    if (this.permission) return this.permission.view;
    if (this.state === "needs_auth") {
      return {
        requestId: "auth",
        kind: "authentication",
        prompt: this.error ?? "the agent needs authentication",
        options: this.authMethods.map((m) => ({ id: m.id, name: m.name, kind: "auth" })),
      };
    }
    return undefined;
  }

  /**
   * Answers the pending interaction with an option id, an option name, or a kind-like word
   * (`approve`/`allow` → the first allow option, `deny`/`reject` → the first reject option,
   * `approve-always` → allow_always, `cancel`). @throws Error when nothing fits.
   */
  async respond(action: string, requestId: string | undefined): Promise<string> {
    const p = this.pending();
    if (!p) throw new Error("nothing is pending");
    if (requestId && requestId !== p.requestId)
      throw new Error(`pending request is ${p.requestId}, not ${requestId}`);
    if (p.kind === "permission" && this.permission) {
      if (action === "cancel") {
        this.permission.resolve({ outcome: { outcome: "cancelled" } });
        return "cancelled";
      }
      const opt = chooseOption(p.options, action);
      if (!opt)
        throw new Error(
          `no option fits ${JSON.stringify(action)} (options: ${p.options.map((o) => o.id).join(", ")})`,
        );
      this.permission.resolve({ outcome: { outcome: "selected", optionId: opt.id } });
      return opt.id;
    }
    const method = p.options.find((o) => o.id === action || o.name === action);
    if (!method)
      throw new Error(
        `unknown auth method ${JSON.stringify(action)} (offered: ${p.options.map((o) => o.id).join(", ")})`,
      );
    try {
      await this.conn?.agent.request(methods.agent.authenticate, { methodId: method.id });
    } catch (e) {
      throw new Error(`authenticate ${method.id} failed: ${agentErrorText(e)}`, { cause: e });
    }
    this.error = undefined;
    this.setState("initializing");
    await this.newSession(AbortSignal.timeout(HANDSHAKE_TIMEOUT_MS));
    return method.id;
  }

  // ------------------------------------------------------------------ observation

  /** The state the holder reports in `status`. */
  status(): AcpStatus {
    return {
      state: this.exited ? "exited" : this.state,
      error: this.error,
      agent: this.agentInfo,
      busy: !this.idle(),
      queued: this.queue.length,
      lastTurn: this.nextTurn - 1,
      authMethods: this.authMethods.map((m) => m.id),
    };
  }

  /** The rendered transcript: last `lines` lines (all when `lines <= 0`). */
  peek(lines: number): string {
    return renderTranscript(this.entries, lines);
  }

  /** Drops the transcript (turn records stay). */
  clear(): void {
    this.entries.splice(0);
  }

  /**
   * Resolves with `check()`'s first answer other than `undefined`, re-evaluated whenever
   * the session changes; `onTimeout` at the deadline or when `signal` aborts.
   */
  waitFor<T>(timeoutMs: number, onTimeout: T, check: () => T | undefined, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve) => {
      let done = false;
      const finish = (v: T) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.waiters.delete(waiter);
        signal?.removeEventListener("abort", cancel);
        resolve(v);
      };
      const waiter = () => {
        const v = check();
        if (v !== undefined) finish(v);
      };
      const cancel = () => finish(onTimeout);
      const timer = setTimeout(cancel, Math.max(0, timeoutMs));
      signal?.addEventListener("abort", cancel, { once: true });
      this.waiters.add(waiter);
      waiter();
    });
  }

  /** `idle` once no turn runs or waits (exact: the last turn returned its stop reason). */
  waitIdle(timeoutMs: number, signal?: AbortSignal): Promise<"idle" | "timeout" | "gone"> {
    return this.waitFor<"idle" | "timeout" | "gone">(
      timeoutMs,
      "timeout",
      () => {
        if (this.exited) return "gone";
        if (this.state === "initializing") return undefined;
        return this.idle() ? "idle" : undefined;
      },
      signal,
    );
  }

  /** Waits until the handshake settled: `ready`, `needs_auth`, `failed` or `exited`. */
  waitHandshake(timeoutMs: number, signal?: AbortSignal): Promise<AcpState | "timeout"> {
    return this.waitFor<AcpState | "timeout">(
      timeoutMs,
      "timeout",
      () => (this.exited ? "exited" : this.state === "initializing" ? undefined : this.state),
      signal,
    );
  }

  /** Waits for turn `id` to end; `undefined` on timeout or for an unknown id. */
  waitTurn(id: number, timeoutMs: number, signal?: AbortSignal): Promise<AcpTurn | undefined> {
    return this.waitFor<AcpTurn | undefined | null>(
      timeoutMs,
      null,
      () => {
        const t = this.turns.find((x) => x.id === id);
        if (!t) return null;
        return t.state === "done" ? { ...t, toolCalls: t.toolCalls.map((c) => ({ ...c })) } : undefined;
      },
      signal,
    ).then((t) => t ?? undefined);
  }

  /** Waits until the transcript's last line starts with `prefix` (readiness), or the agent exits. */
  waitReady(
    prefix: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<"ready" | "timeout" | "exited"> {
    return this.waitFor<"ready" | "timeout" | "exited">(
      timeoutMs,
      "timeout",
      () => {
        if (this.exited) return "exited";
        const last = this.peek(1);
        return last.startsWith(prefix) ? "ready" : undefined;
      },
      signal,
    );
  }
}

/** The option `action` names: its id, its name, or a kind word. Pure. */
export function chooseOption(
  options: readonly { id: string; name: string; kind: string }[],
  action: string,
): { id: string; name: string; kind: string } | undefined {
  const exact = options.find((o) => o.id === action || o.name === action);
  if (exact) return exact;
  const a = action.toLowerCase();
  const byKind = (...kinds: string[]) => kinds.map((k) => options.find((o) => o.kind === k)).find(Boolean);
  if (["approve", "allow", "yes", "accept", "approve-once", "allow-once"].includes(a))
    return byKind("allow_once", "allow_always");
  if (["approve-always", "allow-always", "always"].includes(a)) return byKind("allow_always", "allow_once");
  if (["deny", "reject", "no", "deny-once", "reject-once"].includes(a))
    return byKind("reject_once", "reject_always");
  if (["deny-always", "reject-always", "never"].includes(a)) return byKind("reject_always", "reject_once");
  return undefined;
}

/**
 * An error's message plus, for a JSON-RPC error from the agent, its `data.details` (or string
 * data) when the message does not already say it: "Internal error" alone tells nobody why.
 */
function agentErrorText(e: unknown): string {
  const msg = describeError(e);
  const data = typeof e === "object" && e !== null ? (e as { data?: unknown }).data : undefined;
  const details =
    typeof data === "string"
      ? data
      : typeof data === "object" &&
          data !== null &&
          typeof (data as { details?: unknown }).details === "string"
        ? (data as { details: string }).details
        : undefined;
  return details && !msg.includes(details) ? `${msg}: ${details}` : msg;
}

function isAuthRequired(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: unknown }).code === -32000;
}
