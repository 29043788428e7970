/**
 * Requests to the sessions of a subprocess provider root, each on its own socket: one call
 * with its deadline and ownership check (the holder must serve this city and this name),
 * its failure read as a {@link CallResult} or a gc error, reads sent on kept-open
 * connections, and the status checks the provider's operations share.
 */
import {
  InvalidNameError,
  NudgeNotDeliveredError,
  ProviderError,
  SessionDiedDuringStartupError,
} from "../../base/errors.js";
import { OP_TIMEOUT_MS } from "../../proc/run.js";
import { ConnectionPool, HolderOpError, HolderUnavailableError, holderRequest } from "./client.js";
import { sessionPaths } from "./layout.js";
import { STATUS_TIMEOUT_MS } from "./options.js";
import type { HolderOp, HolderRequest, HolderResults, HolderStatus, ModeRequest } from "./protocol.js";

/**
 * What one holder call found. `missing`: nothing listens on the session's socket (the
 * session is gone, or its holder died); `unresponsive`: the socket accepted nothing in time
 * (a busy or hung holder: the session may well be alive, so it is never cleaned up for it).
 */
export type CallResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly why: "missing" | "unresponsive" | "foreign" | "exited" };

const MISSING = { ok: false, why: "missing" } as const;
const UNRESPONSIVE = { ok: false, why: "unresponsive" } as const;

/**
 * Holder ops sent on the kept-open connection to a session's socket (client.ts `reuse`):
 * reads, safe to send twice, whose waits are short (`waitReady` is bounded by the start
 * sequence's poll interval).
 */
const REUSABLE_OPS: ReadonlySet<HolderOp> = new Set<HolderOp>([
  "status",
  "info",
  "peek",
  "screen",
  "meta.get",
  "meta.list",
  "waitReady",
]);

/** The session calls of one provider root. Safe for concurrent use. */
export class SessionCalls {
  /** The provider root (`<stateDir>/subprocess`). */
  readonly root: string;
  /** Ownership tag every answering holder must carry (identity.ts). */
  readonly owner: string;
  /** The provider's name in its errors. */
  private readonly name: string;
  /** Kept-open connections to session sockets, for the reads in {@link REUSABLE_OPS}. */
  private readonly connections = new ConnectionPool();

  constructor(opts: { readonly root: string; readonly owner: string; readonly name: string }) {
    this.root = opts.root;
    this.owner = opts.owner;
    this.name = opts.name;
  }

  /** Closes the kept-open connections (sessions keep running). Idempotent. */
  close(): void {
    this.connections.close();
  }

  /**
   * One request to `name`'s holder. `missing` = nothing answers; `foreign` = the holder
   * serves another city (or another name); `exited` = the program is gone (for operations
   * that need it). Other holder errors are thrown as gc errors. Also how a provider composing
   * this one (the ACP provider) reaches its sessions.
   */
  async call<O extends HolderOp>(
    name: string,
    req: Extract<HolderRequest, { op: O }>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<CallResult<HolderResults[O]>> {
    try {
      const value = await holderRequest(sessionPaths(this.root, name).socket, req, {
        timeoutMs,
        signal,
        expect: { city: this.owner, name },
        reuse: REUSABLE_OPS.has(req.op) ? this.connections : undefined,
      });
      return { ok: true, value };
    } catch (e) {
      if (e instanceof HolderUnavailableError)
        return e.reason === "ENOENT" || e.reason === "ECONNREFUSED" ? MISSING : UNRESPONSIVE;
      if (e instanceof HolderOpError) {
        if (e.code === "not_owner") return { ok: false, why: "foreign" };
        if (e.code === "not_running" || e.code === "shutting_down") return { ok: false, why: "exited" };
        if (e.code === "awaiting_choice") throw new NudgeNotDeliveredError(name, e.message, { cause: e });
        if (e.code === "invalid_name" || e.code === "invalid_key") {
          throw new InvalidNameError(e.code === "invalid_key" ? "key" : "metadata key", "", e.message, {
            cause: e,
          });
        }
        throw new ProviderError(this.name, `${name}: ${req.op}: ${e.message}`, { cause: e });
      }
      throw e;
    }
  }

  /**
   * One request of the sessions' mode's own ops (`<mode>.<op>`), answered as {@link call}; the
   * mode states the result's type.
   */
  callMode<T>(
    name: string,
    req: ModeRequest,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<CallResult<T>> {
    // The holder's reply to a mode op is the mode's result, which the client passes through.
    return this.call(name, req as unknown as HolderRequest & { op: HolderOp }, timeoutMs, signal) as Promise<
      CallResult<T>
    >;
  }

  /** The session's `status`, as {@link call}. */
  async statusOf(name: string, signal?: AbortSignal): Promise<CallResult<HolderStatus>> {
    return this.call(name, { op: "status" }, STATUS_TIMEOUT_MS, signal);
  }

  /**
   * {@link SessionCalls.statusOf}, asking once more with the long operation deadline
   * when the holder was slow: during start a holder busy with a burst of other starts must
   * not make this session look dead.
   */
  async patientStatus(name: string, signal?: AbortSignal): Promise<CallResult<HolderStatus>> {
    const st = await this.statusOf(name, signal);
    if (st.ok || st.why !== "unresponsive") return st;
    return this.call(name, { op: "status" }, OP_TIMEOUT_MS, signal);
  }

  /** @throws SessionDiedDuringStartupError (with exit status and last screen lines) unless running. */
  async requireAlive(name: string, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    const st = await this.patientStatus(name, signal);
    if (st.ok && st.value.running) return;
    let detail = "holder gone";
    if (st.ok && st.value.exit) {
      const ex = st.value.exit;
      detail = ex.signal ? `killed by ${ex.signal}` : `exit code ${ex.code}`;
      const screen = await this.call(name, { op: "peek", lines: 5 }, STATUS_TIMEOUT_MS);
      const last = screen.ok ? screen.value.text.trim() : "";
      if (last) detail += `; last output: ${last.length > 500 ? `…${last.slice(-500)}` : last}`;
    }
    throw new SessionDiedDuringStartupError(name, detail);
  }
}
