/**
 * AcpProvider: sessions whose program is an Agent Client Protocol agent (`gemini --acp`,
 * `claude-code-acp`, `codex-acp`, …). It composes the subprocess provider's machinery with
 * the holder's ACP mode plugged in (holder.ts, holder-mode.ts): the same kind of detached
 * holder (one per city for all its sessions; socket per session, ownership, adoption after a
 * controller restart, start lock, stop of the whole tree), but the holder speaks ACP over the
 * agent's stdio instead of owning a pty (host.ts). What ACP answers differently is its own;
 * the rest is the subprocess provider's, delegated. Operations map onto ACP: nudge =
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
import type { CensusEntry } from "../../proc/census.js";
import { OP_TIMEOUT_MS } from "../../proc/run.js";
import {
  type BackendShutdownProvider,
  type BackendWatchProvider,
  type CensusProvider,
  type CommandProvider,
  type ExecCommandOptions,
  type ExecCommandResult,
  type ExitStatus,
  type ExitStatusProvider,
  flattenContent,
  type IdleResult,
  type IdleWaitProvider,
  type ImmediateNudgeProvider,
  type InteractionProvider,
  type InteractionResponse,
  type NudgeContent,
  type OpOptions,
  type OrphanKillProvider,
  type OutputChunk,
  type PendingInteraction,
  type Provider,
  type ProviderCapabilities,
  type SessionLook,
  type SessionSnapshot,
  type SnapshotProvider,
  type StartConfig,
  type StartReport,
  type TurnProvider,
  type TurnRecord,
} from "../provider.js";
import { holderScriptOf } from "../subprocess/holder-control.js";
import type { SubprocessProviderOptions } from "../subprocess/options.js";
import { SubprocessProvider } from "../subprocess/provider.js";
import type { CallResult } from "../subprocess/session-calls.js";
import { ACP_MODE, type AcpHolderStatus, type AcpRequest, type AcpResults, type AcpStatus } from "./wire.js";

/** Longest wait for `initialize` + `session/new` during start. */
export const HANDSHAKE_TIMEOUT_MS = 60_000;
/** Deadline of a status-like holder call. */
const QUICK_MS = 3_000;

/** Options of {@link AcpProvider}. */
export interface AcpProviderOptions extends Omit<SubprocessProviderOptions, "rootDir" | "name" | "mode"> {
  /** MCP servers handed to `session/new`, in ACP's shape (`{name, command, args, env}`). */
  readonly mcpServers?: readonly unknown[] | undefined;
}

/** The ACP holder script (holder.ts: the holder with the ACP mode plugged in). */
export function defaultAcpHolderPath(): string {
  return holderScriptOf(import.meta.url);
}

/** The ACP provider. */
export class AcpProvider
  implements
    Provider,
    TurnProvider,
    IdleWaitProvider,
    ImmediateNudgeProvider,
    InteractionProvider,
    ExitStatusProvider,
    CommandProvider,
    SnapshotProvider,
    CensusProvider,
    OrphanKillProvider,
    BackendWatchProvider,
    BackendShutdownProvider
{
  readonly name: string = "acp";
  /** The subprocess machinery, its holder running sessions in the ACP mode. */
  private readonly held: SubprocessProvider;

  constructor(opts: AcpProviderOptions) {
    this.held = new SubprocessProvider({
      ...opts,
      name: this.name,
      rootDir: join(opts.stateDir, "acp"),
      holderPath: opts.holderPath ?? defaultAcpHolderPath(),
      mode: {
        mode: ACP_MODE,
        spec: { mcpServers: opts.mcpServers ?? [] },
        afterCreate: (name, signal) => this.handshake(name, signal),
      },
    });
  }

  /** City name. */
  get city(): string {
    return this.held.city;
  }

  /** Ownership tag of this city's holders. */
  get owner(): string {
    return this.held.owner;
  }

  /** `<stateDir>/acp`. */
  get root(): string {
    return this.held.root;
  }

  /** The subprocess provider's, without a terminal to attach to. */
  capabilities(): ProviderCapabilities {
    return { ...this.held.capabilities(), attach: false, attachDetect: false };
  }

  /** One `acp.*` request to `name`'s holder, as the subprocess provider's `call`. */
  private acpCall<O extends AcpRequest["op"]>(
    name: string,
    req: Extract<AcpRequest, { op: O }>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<CallResult<AcpResults[O]>> {
    return this.held.callMode<AcpResults[O]>(name, req, timeoutMs, signal);
  }

  /**
   * Run by the start (the shared lifecycle, {@link SubprocessProvider.start}) inside `create`:
   * start returns once `initialize` and `session/new` answered; an agent that needs signing in
   * starts with its auth methods as the pending interaction. The initial nudge
   * (`prompt_mode: nudge`) is the first turn.
   * @throws ProviderError when the handshake fails or does not finish in time.
   */
  private async handshake(name: string, signal: AbortSignal): Promise<void> {
    const r = await this.acpCall(
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

  /** The session's `status`, with its ACP part. */
  private async statusOf(name: string, signal?: AbortSignal): Promise<CallResult<AcpHolderStatus>> {
    return this.held.statusOf(name, signal);
  }

  /** The ACP session's state, or `undefined` when missing. */
  async acpStatus(name: string, opts: OpOptions = {}): Promise<AcpStatus | undefined> {
    validateSessionName(name);
    const st = await this.statusOf(name, opts.signal);
    return st.ok ? st.value.acp : undefined;
  }

  /** Queues a prompt (a new turn). Best-effort for a missing session (resolves). */
  async nudge(name: string, content: NudgeContent, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const text = flattenContent(content);
    if (text === "") return;
    await this.submit(name, text, opts.signal, false);
  }

  /** Same as {@link AcpProvider.nudge}: prompts queue behind the running turn (ACP runs one at a time). */
  async nudgeNow(name: string, content: NudgeContent, opts: OpOptions = {}): Promise<void> {
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
    let r: Awaited<ReturnType<typeof this.held.call<"nudge">>>;
    try {
      r = await this.held.call(name, { op: "nudge", text }, OP_TIMEOUT_MS, signal);
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
    const r = await this.acpCall(
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
    const r = await this.acpCall(
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
  async pending(name: string, opts: OpOptions = {}): Promise<PendingInteraction | undefined> {
    validateSessionName(name);
    const r = await this.acpCall(name, { op: "acp.pending" }, QUICK_MS, opts.signal);
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
   * The running sessions among `names` as their protocol reports them (no screen): the open
   * interaction, whether a turn runs, and the error of the session (`failed`) or of its last
   * finished turn — a turn's `error`, or its stop reason when that is a refusal.
   */
  async look(names: readonly string[], opts: OpOptions = {}): Promise<Map<string, SessionLook>> {
    const out = new Map<string, SessionLook>();
    await Promise.all(
      names.map(async (name) => {
        const st = await this.statusOf(name, opts.signal).catch(() => undefined);
        if (!st?.ok || !st.value.running || !st.value.acp) return;
        const acp = st.value.acp;
        const interaction = await this.pending(name, opts).catch(() => undefined);
        let error = acp.state === "failed" ? (acp.error ?? "the ACP session failed") : undefined;
        if (error === undefined && !acp.busy && acp.lastTurn > 0) {
          const last = (await this.turns(name, acp.lastTurn - 1, opts).catch(() => [])).at(-1);
          if (last?.state === "done" && (last.error || last.stopReason === "refusal"))
            error = last.error ?? "the agent refused the prompt";
        }
        out.set(name, {
          interaction,
          lastActivity: new Date(st.value.lastActivity),
          turn: { busy: acp.busy, ...(error !== undefined ? { error } : {}) },
        });
      }),
    );
    return out;
  }

  /**
   * Answers the pending interaction: an option id or name, or `approve`/`approve-always`/
   * `deny`/`cancel` for a permission; an auth method id for authentication.
   * @throws SessionNotFoundError when missing; ProviderError when nothing fits.
   */
  async respond(name: string, response: InteractionResponse, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const r = await this.acpCall(
      name,
      { op: "acp.respond", action: response.action, requestId: response.requestId },
      HANDSHAKE_TIMEOUT_MS,
      opts.signal,
    );
    if (!r.ok) throw new SessionNotFoundError(name);
  }

  /** @throws UnsupportedError: an ACP agent has no terminal. */
  async attach(name: string): Promise<void> {
    validateSessionName(name);
    throw new UnsupportedError("attach: an ACP session has no terminal (use gc peek / gc run)");
  }

  /** Always false: nothing can attach. */
  async isAttached(name: string): Promise<boolean> {
    validateSessionName(name);
    return false;
  }

  // ---------------------------------------------------------------- the subprocess machinery's

  /** @inheritdoc */
  close(): Promise<void> {
    return this.held.close();
  }

  /** @inheritdoc */
  onBackendLost(fn: () => void): () => void {
    return this.held.onBackendLost(fn);
  }

  /** @inheritdoc */
  census(): Promise<CensusEntry[]> {
    return this.held.census();
  }

  /** @inheritdoc */
  killOrphans(names: readonly string[]): Promise<CensusEntry[]> {
    return this.held.killOrphans(names);
  }

  /** @inheritdoc */
  start(name: string, config: StartConfig, opts?: OpOptions): Promise<StartReport> {
    return this.held.start(name, config, opts);
  }

  /** @inheritdoc */
  stop(name: string, opts?: OpOptions): Promise<void> {
    return this.held.stop(name, opts);
  }

  /** @inheritdoc */
  shutdown(opts?: OpOptions): Promise<void> {
    return this.held.shutdown(opts);
  }

  /** @inheritdoc */
  isRunning(name: string, opts?: OpOptions): Promise<boolean> {
    return this.held.isRunning(name, opts);
  }

  /** @inheritdoc */
  listRunning(prefix: string, opts?: OpOptions): Promise<string[]> {
    return this.held.listRunning(prefix, opts);
  }

  /** @inheritdoc */
  snapshot(prefix: string, opts?: OpOptions): Promise<SessionSnapshot[]> {
    return this.held.snapshot(prefix, opts);
  }

  /** @inheritdoc */
  processAlive(name: string, names: readonly string[], opts?: OpOptions): Promise<boolean> {
    return this.held.processAlive(name, names, opts);
  }

  /** @inheritdoc */
  getLastActivity(name: string, opts?: OpOptions): Promise<Date | undefined> {
    return this.held.getLastActivity(name, opts);
  }

  /** @inheritdoc */
  lastExit(name: string, opts?: OpOptions): Promise<ExitStatus | undefined> {
    return this.held.lastExit(name, opts);
  }

  /** The rendered transcript's last `lines` lines. */
  peek(name: string, lines: number, opts?: OpOptions): Promise<string> {
    return this.held.peek(name, lines, opts);
  }

  /** @inheritdoc */
  output(name: string, since: number, opts?: OpOptions): Promise<OutputChunk | undefined> {
    return this.held.output(name, since, opts);
  }

  /** @inheritdoc */
  logFiles(name: string): { readonly output: string; readonly holder: string } {
    return this.held.logFiles(name);
  }

  /** C-c and Escape cancel the running turn; Enter sends an empty prompt; other keys are refused. */
  sendKeys(name: string, keys: readonly string[], opts?: OpOptions): Promise<void> {
    return this.held.sendKeys(name, keys, opts);
  }

  /** `session/cancel` of the running turn. */
  interrupt(name: string, opts?: OpOptions): Promise<void> {
    return this.held.interrupt(name, opts);
  }

  /** Clears the transcript. */
  clearScrollback(name: string, opts?: OpOptions): Promise<void> {
    return this.held.clearScrollback(name, opts);
  }

  /** `idle` once no turn runs or waits. */
  waitForIdle(name: string, timeoutMs: number, opts?: OpOptions): Promise<IdleResult> {
    return this.held.waitForIdle(name, timeoutMs, opts);
  }

  /** @inheritdoc */
  setMeta(name: string, key: string, value: string, opts?: OpOptions): Promise<void> {
    return this.held.setMeta(name, key, value, opts);
  }

  /** @inheritdoc */
  getMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined> {
    return this.held.getMeta(name, key, opts);
  }

  /** @inheritdoc */
  removeMeta(name: string, key: string, opts?: OpOptions): Promise<void> {
    return this.held.removeMeta(name, key, opts);
  }

  /** @inheritdoc */
  copyTo(name: string, src: string, relDst: string, opts?: OpOptions): Promise<void> {
    return this.held.copyTo(name, src, relDst, opts);
  }

  /** @inheritdoc */
  runLive(name: string, config: StartConfig, opts?: OpOptions): Promise<void> {
    return this.held.runLive(name, config, opts);
  }

  /** @inheritdoc */
  execCommand(name: string, argv: readonly string[], opts?: ExecCommandOptions): Promise<ExecCommandResult> {
    return this.held.execCommand(name, argv, opts);
  }
}
