/**
 * The holder's ACP mode (subprocess/holder-mode.ts): a session whose program is an Agent
 * Client Protocol agent, run on pipes by {@link AcpHost} (host.ts) instead of in the holder's
 * pty. It answers the ops where a screen does not apply: the transcript for peek/screen,
 * prompts for nudge, `session/cancel` for interrupt and C-c/Escape, turn completion for
 * waitIdle, no terminal to attach, and the `acp.*` ops (wire.ts). Status, info, metadata and
 * shutdown are the holder's shared handling; `status` gains the ACP session's state (`acp`).
 */
import { constants as osConstants } from "node:os";
import {
  type HolderMode,
  int,
  type ModeContext,
  type ModeProgram,
  OpError,
  str,
} from "../subprocess/holder-mode.js";
import type { HolderRequest, HolderResults, HolderSpec, ModeRequest } from "../subprocess/protocol.js";
import { AcpHost } from "./host.js";
import type { AcpHolderSpec, AcpRequest, AcpResults } from "./wire.js";

/** The ACP mode: one {@link AcpHost} per session. */
export const acpMode: HolderMode = {
  errorCode: "acp_error",
  program(spec: HolderSpec, events): ModeProgram {
    const host = new AcpHost(
      {
        name: spec.name,
        argv: spec.argv,
        env: spec.env,
        cwd: spec.cwd,
        mcpServers: (spec as AcpHolderSpec).mcpServers,
      },
      {
        activity: () => events.activity(),
        log: (chunk) => events.log(chunk),
        exit: (code, signal) => events.exit(code ?? 0, signal ? osConstants.signals[signal] : undefined),
      },
    );
    return {
      get pid() {
        return host.pid;
      },
      start: () => host.start(),
      handle: (req, ctx) => handle(host, req, ctx),
      status: () => ({ acp: host.status() }),
    };
  },
};

/** The ACP session's answer to `req`; `undefined` = the holder's shared handling. */
async function handle(
  acp: AcpHost,
  req: HolderRequest | ModeRequest,
  ctx: ModeContext,
): Promise<HolderResults[keyof HolderResults] | AcpResults[keyof AcpResults] | undefined> {
  const r = req as HolderRequest | AcpRequest;
  switch (r.op) {
    case "peek":
      return { text: acp.peek(int(r.lines, "lines")) };
    case "screen":
      return { text: acp.peek(0) };
    case "clear":
      acp.clear();
      return {};
    case "nudge": {
      ctx.requireRunning();
      const text = str(r.text, "text");
      return { bytes: Buffer.byteLength(text), turn: acp.prompt(text) };
    }
    case "keys": {
      ctx.requireRunning();
      if (!Array.isArray(r.keys)) throw new OpError("bad_request", "keys must be an array of strings");
      for (const k of r.keys) {
        if (k !== "C-c" && k !== "Escape" && k !== "Enter")
          throw new OpError(
            "invalid_key",
            `an ACP session takes no raw key ${JSON.stringify(k)} (only C-c, Escape, Enter)`,
          );
      }
      for (const k of r.keys) {
        if (k === "Enter") acp.prompt("");
        else acp.cancel();
      }
      return { bytes: 0 };
    }
    case "interrupt":
      ctx.requireRunning();
      acp.cancel();
      return {};
    case "resize":
      return { cols: ctx.cols, rows: ctx.rows };
    case "output":
      return { data: "", next: 0, truncated: false };
    case "attach":
      throw new OpError("unsupported", "an ACP session has no terminal to attach to");
    case "waitReady":
      return {
        result: await acp.waitReady(str(r.prefix, "prefix"), int(r.timeoutMs, "timeoutMs"), ctx.signal),
      };
    case "waitIdle":
      return { result: await acp.waitIdle(int(r.timeoutMs, "timeoutMs"), ctx.signal) };
    case "acp.handshake":
      return { state: await acp.waitHandshake(int(r.timeoutMs, "timeoutMs"), ctx.signal) };
    case "acp.turns":
      return { turns: acp.turnsSince(int(r.since, "since")) };
    case "acp.waitTurn":
      return {
        turn: (await acp.waitTurn(int(r.turn, "turn"), int(r.timeoutMs, "timeoutMs"), ctx.signal)) ?? null,
      };
    case "acp.pending":
      return { interaction: acp.pending() ?? null };
    case "acp.respond":
      return {
        chosen: await acp.respond(
          str(r.action, "action"),
          r.requestId === undefined ? undefined : str(r.requestId, "requestId"),
        ),
      };
    default:
      return undefined;
  }
}
