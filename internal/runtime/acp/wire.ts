/**
 * What the holder's ACP mode carries over the holder socket (subprocess/protocol.ts): its
 * spec fields, the `acp.*` ops and their results, the ACP part of `status` — the ACP
 * session's state, its turns and its pending interaction. Shared by the holder side
 * (holder-mode.ts, host.ts) and the provider side (provider.ts). Types only.
 */
import type { TurnRecord, TurnToolCall } from "../provider.js";
import type { HolderSpec, HolderStatus } from "../subprocess/protocol.js";

/** The spec's mode name. */
export const ACP_MODE = "acp";

/** A holder spec in the ACP mode. */
export interface AcpHolderSpec extends HolderSpec {
  /** MCP servers passed to `session/new`, in ACP's own shape. */
  readonly mcpServers?: readonly unknown[] | undefined;
}

/** `status` of an ACP session. */
export interface AcpHolderStatus extends HolderStatus {
  /** The ACP session's state (absent only from a session not in the ACP mode). */
  readonly acp?: AcpStatus | undefined;
}

/** The ACP mode's own holder requests. */
export type AcpRequest =
  | { readonly op: "acp.handshake"; readonly timeoutMs: number }
  | { readonly op: "acp.turns"; readonly since: number }
  | { readonly op: "acp.waitTurn"; readonly turn: number; readonly timeoutMs: number }
  | { readonly op: "acp.pending" }
  | { readonly op: "acp.respond"; readonly action: string; readonly requestId?: string | undefined };

/** The result of each of {@link AcpRequest}. */
export interface AcpResults {
  "acp.handshake": { readonly state: AcpState | "timeout" };
  "acp.turns": { readonly turns: AcpTurn[] };
  "acp.waitTurn": { readonly turn: AcpTurn | null };
  "acp.pending": { readonly interaction: InteractionView | null };
  "acp.respond": { readonly chosen: string };
}

/** Where the ACP session is: handshaking, taking prompts, waiting for sign-in, broken, or gone. */
export type AcpState = "initializing" | "ready" | "needs_auth" | "failed" | "exited";

/** The ACP part of the holder's `status`. */
export interface AcpStatus {
  readonly state: AcpState;
  /** Why the session is `failed` or `needs_auth`. */
  readonly error?: string | undefined;
  /** `name version` from `initialize`'s agentInfo. */
  readonly agent?: string | undefined;
  /** A turn runs or waits, or a permission request is open. */
  readonly busy: boolean;
  /** Prompts waiting for the running turn to end. */
  readonly queued: number;
  /** Id of the newest turn (0 before the first). */
  readonly lastTurn: number;
  /** Auth method ids offered by `initialize`. */
  readonly authMethods: readonly string[];
}

/** One tool call of a turn (the contract's type: provider.ts). */
export type AcpToolCall = TurnToolCall;

/** One prompt turn, as the holder records it (the contract's {@link TurnRecord}). */
export type AcpTurn = TurnRecord;

/** An open `session/request_permission` or authentication choice. */
export interface InteractionView {
  readonly requestId: string;
  readonly kind: "permission" | "authentication";
  readonly prompt: string;
  readonly options: readonly { readonly id: string; readonly name: string; readonly kind: string }[];
  readonly toolCallId?: string | undefined;
}
