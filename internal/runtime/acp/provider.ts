/**
 * AcpProvider: sessions whose program is an Agent Client Protocol agent (`gemini --acp`,
 * `claude-code-acp`, `codex-acp`, …). It is the subprocess provider with its holder in `acp`
 * mode: the same kind of detached holder (one per city for all its sessions; socket per session, ownership, adoption after a controller
 * restart, start lock, stop of the whole tree), but the holder speaks ACP over the agent's
 * stdio instead of owning a pty (../acp/host.ts). Operations map onto ACP: nudge =
 * `session/prompt` (queued while a turn runs), interrupt = `session/cancel`, waitForIdle =
 * the turn's end (its `stopReason`), peek = the rendered transcript, pending/respond =
 * `session/request_permission` and the agent's auth methods.
 */
import { join } from "node:path";
import {
  NudgeNotDeliveredError,
  ProviderError,
  SessionNotFoundError,
  UnsupportedError,
} from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import { OP_TIMEOUT_MS } from "../../proc/run.js";
import {
  flattenContent,
  type InteractionResponse,
  type NudgeContent,
  type OpOptions,
  type PendingInteraction,
  type ProviderCapabilities,
  type TurnProvider,
  type TurnRecord,
} from "../provider.js";
import type { HolderSpec } from "../subprocess/protocol.js";
import { SubprocessProvider, type SubprocessProviderOptions } from "../subprocess/provider.js";
import type { AcpStatus } from "./wire.js";

/** Longest wait for `initialize` + `session/new` during start. */
export const HANDSHAKE_TIMEOUT_MS = 60_000;
/** Deadline of a status-like holder call. */
const QUICK_MS = 3_000;

/** Options of {@link AcpProvider}. */
export interface AcpProviderOptions extends Omit<SubprocessProviderOptions, "rootDir"> {
  /** MCP servers handed to `session/new`, in ACP's shape (`{name, command, args, env}`). */
  readonly mcpServers?: readonly unknown[] | undefined;
}

/** The ACP provider. */
export class AcpProvider extends SubprocessProvider implements TurnProvider {
  override readonly name: string = "acp";
  private readonly mcpServers: readonly unknown[];

  constructor(opts: AcpProviderOptions) {
    super({ ...opts, rootDir: join(opts.stateDir, "acp") });
    this.mcpServers = opts.mcpServers ?? [];
  }

  override capabilities(): ProviderCapabilities {
    return { ...super.capabilities(), attach: false, attachDetect: false };
  }

  protected override holderMode(): Pick<HolderSpec, "mode" | "mcpServers"> {
    return { mode: "acp", mcpServers: this.mcpServers };
  }

  /**
   * Start (the shared lifecycle, {@link SubprocessProvider.start}) returns once `initialize`
   * and `session/new` answered; an agent that needs signing in starts with its auth methods
   * as the pending interaction. The initial nudge (`prompt_mode: nudge`) is the first turn.
   * @throws ProviderError when the handshake fails or does not finish in time.
   */
  protected override async afterCreate(name: string, signal: AbortSignal): Promise<void> {
    const r = await this.call(
      name,
      { op: "acp.handshake", timeoutMs: HANDSHAKE_TIMEOUT_MS },
      HANDSHAKE_TIMEOUT_MS + QUICK_MS,
      signal,
    );
    if (!r.ok) return; // gone: the lifecycle reports the death with its exit status
    const state = r.value.state;
    if (state === "failed" || state === "timeout") {
      const st = await this.acpStatus(name);
      throw new ProviderError(
        "acp",
        `${name}: ${state === "timeout" ? `no answer to initialize/session/new within ${HANDSHAKE_TIMEOUT_MS} ms` : (st?.error ?? "the ACP handshake failed")}`,
      );
    }
  }

  /** The ACP session's state, or `undefined` when missing. */
  async acpStatus(name: string, opts: OpOptions = {}): Promise<AcpStatus | undefined> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    return st.ok ? st.value.acp : undefined;
  }

  /** Queues a prompt (a new turn). Best-effort for a missing session (resolves). */
  override async nudge(name: string, content: NudgeContent, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const text = flattenContent(content);
    if (text === "") return;
    await this.submit(name, text, opts.signal, false);
  }

  /** Same as {@link AcpProvider.nudge}: prompts queue behind the running turn (ACP runs one at a time). */
  override async nudgeNow(name: string, content: NudgeContent, opts: OpOptions = {}): Promise<void> {
    await this.nudge(name, content, opts);
  }

  /** @inheritdoc */
  async prompt(name: string, content: NudgeContent, opts: OpOptions = {}): Promise<number> {
    validateSessionName(name);
    const turn = await this.submit(name, flattenContent(content), opts.signal, true);
    if (turn === undefined) throw new SessionNotFoundError(name);
    return turn;
  }

  private async submit(name: string, text: string, signal: AbortSignal | undefined, strict: boolean) {
    let r: Awaited<ReturnType<typeof this.call<"nudge">>>;
    try {
      r = await this.call(name, { op: "nudge", text }, OP_TIMEOUT_MS, signal);
    } catch (e) {
      throw new NudgeNotDeliveredError(name, e instanceof Error ? e.message : String(e), { cause: e });
    }
    if (!r.ok) {
      if (strict)
        throw new NudgeNotDeliveredError(
          name,
          r.why === "exited" ? "the agent has exited" : "no such session",
        );
      return undefined;
    }
    return r.value.turn;
  }

  /** @inheritdoc */
  async waitTurn(
    name: string,
    turn: number,
    timeoutMs: number,
    opts: OpOptions = {},
  ): Promise<TurnRecord | undefined> {
    validateSessionName(name);
    const bound = Math.max(0, Math.trunc(timeoutMs));
    const r = await this.call(
      name,
      { op: "acp.waitTurn", turn, timeoutMs: bound },
      bound + QUICK_MS,
      opts.signal,
    );
    if (!r.ok) throw new SessionNotFoundError(name, r.why === "exited" ? "the agent has exited" : undefined);
    return r.value.turn ?? undefined;
  }

  /** @inheritdoc */
  async turns(name: string, since: number, opts: OpOptions = {}): Promise<TurnRecord[]> {
    validateSessionName(name);
    const r = await this.call(
      name,
      { op: "acp.turns", since: Math.max(0, Math.trunc(since)) },
      OP_TIMEOUT_MS,
      opts.signal,
    );
    if (!r.ok) throw new SessionNotFoundError(name);
    return r.value.turns;
  }

  /**
   * The open `session/request_permission` (kind `permission`, options = option ids, each
   * option's kind in `metadata`) or authentication choice (kind `authentication`, options =
   * auth method ids); `undefined` when none or missing.
   */
  override async pending(name: string, opts: OpOptions = {}): Promise<PendingInteraction | undefined> {
    validateSessionName(name);
    const r = await this.call(name, { op: "acp.pending" }, QUICK_MS, opts.signal);
    const p = r.ok ? r.value.interaction : null;
    if (!p) return undefined;
    const metadata: Record<string, string> = {};
    for (const o of p.options) metadata[`option.${o.id}`] = `${o.kind}: ${o.name}`;
    if (p.toolCallId) metadata.toolCallId = p.toolCallId;
    return {
      requestId: p.requestId,
      kind: p.kind,
      prompt: p.prompt,
      options: p.options.map((o) => o.id),
      metadata,
    };
  }

  /**
   * Answers the pending interaction: an option id or name, or `approve`/`approve-always`/
   * `deny`/`cancel` for a permission; an auth method id for authentication.
   * @throws SessionNotFoundError when missing; ProviderError when nothing fits.
   */
  override async respond(name: string, response: InteractionResponse, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const r = await this.call(
      name,
      { op: "acp.respond", action: response.action, requestId: response.requestId },
      HANDSHAKE_TIMEOUT_MS,
      opts.signal,
    );
    if (!r.ok) throw new SessionNotFoundError(name);
  }

  /** @throws UnsupportedError: an ACP agent has no terminal. */
  override async attach(name: string): Promise<void> {
    validateSessionName(name);
    throw new UnsupportedError("attach: an ACP session has no terminal (use gc peek / gc run)");
  }

  /** Always false: nothing can attach. */
  override async isAttached(name: string): Promise<boolean> {
    validateSessionName(name);
    return false;
  }
}
