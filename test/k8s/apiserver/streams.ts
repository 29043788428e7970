/**
 * The remotecommand channel protocol over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`),
 * server side, as the 1.32 API server speaks it: every frame binary, byte 0 = channel; an empty
 * frame on the lowest requested output channel at once; output on 1/2; one JSON Status on 3; then
 * a close frame with code 1000. Clients send stdin on 0, resize on 4, and (v5) `[255, 0]` to
 * close stdin, in binary or (the Python client) text frames.
 */
import type { WebSocket } from "ws";
import { parseResize } from "./kubelet.js";
import type { ExitInfo, Proc } from "./proc.js";

/** The subprotocols served, most preferred first. */
export const STREAM_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"] as const;

/** Stream flags of an exec/attach request. */
export interface StreamFlags {
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255;

/** The channel-3 payload for an exit. */
export function exitStatus(exit: ExitInfo, argv: readonly string[]): Record<string, unknown> {
  if (exit.code === 0) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${argv.join(" ")}], exit code ${exit.code}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exit.code) }] },
  };
}

/** The channel-3 payload for a failure to run at all (500 InternalError). */
export function internalStatus(message: string): Record<string, unknown> {
  return {
    metadata: {},
    status: "Failure",
    message: `Internal error occurred: ${message}`,
    reason: "InternalError",
    details: { causes: [{ message }] },
    code: 500,
  };
}

/** A connected stream session: frames out, handlers in. */
export class ChannelSocket {
  private done = false;
  private readonly ws: WebSocket;
  readonly protocol: string;
  readonly flags: StreamFlags;

  constructor(ws: WebSocket, protocol: string, flags: StreamFlags) {
    this.ws = ws;
    this.protocol = protocol;
    this.flags = flags;
    const first = flags.stdout ? STDOUT : flags.stderr && !flags.tty ? STDERR : ERROR;
    this.send(first, Buffer.alloc(0));
  }

  private send(channel: number, payload: Buffer): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(Buffer.concat([Buffer.from([channel]), payload]), { binary: true });
  }

  /** Sends process output on the right channel (stderr folds into stdout on a TTY). */
  output(stream: 1 | 2, data: Buffer): void {
    if (this.done) return;
    const channel = this.flags.tty ? STDOUT : stream;
    if (channel === STDOUT && !this.flags.stdout) return;
    if (channel === STDERR && !this.flags.stderr) return;
    this.send(channel, data);
  }

  /** Sends the final Status and closes with 1000. Idempotent. */
  finish(status: Record<string, unknown>): void {
    if (this.done) return;
    this.done = true;
    this.send(ERROR, Buffer.from(JSON.stringify(status)));
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(1000);
  }

  /** Wires client frames to `proc`: stdin, resize, stdin-close. */
  wireInput(proc: Proc, opts: { onClientGone: () => void }): void {
    this.ws.on("message", (raw: Buffer | ArrayBuffer | Buffer[]) => {
      const data = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
      if (data.length === 0) return;
      // The official Python client sends text frames: the channel is the first character
      // (`chr(0) + data`), which in UTF-8 is the same first byte as a binary frame's.
      const channel = data[0];
      const payload = data.subarray(1);
      if (channel === STDIN && this.flags.stdin) proc.write(payload);
      else if (channel === RESIZE) {
        const size = parseResize(payload);
        if (size) proc.resize(size.cols, size.rows);
      } else if (channel === CLOSE && this.protocol.startsWith("v5") && payload[0] === STDIN) proc.endStdin();
    });
    this.ws.on("close", () => {
      if (!this.done) opts.onClientGone();
      this.done = true;
    });
  }
}
