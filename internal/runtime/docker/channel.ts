/**
 * The tmux control channel into a container: a {@link ControlTransport} that runs `tmux -C`
 * through one Docker exec (stdin attached, hijacked stream, no TTY) and reads the engine's
 * multiplexed output frames. The docker provider keeps one such stream per container.
 */
import type { ControlStream, ControlTransport } from "../tmux/transport.js";
import { type Engine, startHijacked } from "./engine.js";

/** The engine's stream header: byte 0 = 1 stdout / 2 stderr, bytes 4–7 = payload size (big endian). */
const HEADER = 8;

/**
 * Splits the engine's multiplexed exec stream (`application/vnd.docker.raw-stream`) into
 * stdout and stderr payloads, across chunk boundaries. Pure apart from the callbacks.
 */
export class Demuxer {
  private buf: Buffer = Buffer.alloc(0);
  private readonly stdout: (b: Buffer) => void;
  private readonly stderr: (b: Buffer) => void;
  constructor(stdout: (b: Buffer) => void, stderr: (b: Buffer) => void) {
    this.stdout = stdout;
    this.stderr = stderr;
  }

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= HEADER) {
      const size = this.buf.readUInt32BE(4);
      if (this.buf.length < HEADER + size) return;
      const payload = this.buf.subarray(HEADER, HEADER + size);
      if (this.buf[0] === 2) this.stderr(payload);
      else this.stdout(payload);
      this.buf = this.buf.subarray(HEADER + size);
    }
  }
}

/** A transport running the tmux client in container `id` (as `user` when set). */
export function dockerTransport(engine: Engine, id: string, user: string | undefined): ControlTransport {
  return {
    open: async (args, events): Promise<ControlStream> => {
      const d = await engine.docker();
      const exec = await d.getContainer(id).exec({
        Cmd: ["tmux", ...args],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        ...(user ? { User: user } : {}),
      });
      const stream = await startHijacked(exec, true);
      const demux = new Demuxer(events.data, events.stderr);
      let closed = false;
      const close = (why: string) => {
        if (closed) return;
        closed = true;
        events.close(why);
      };
      stream.on("data", (b: Buffer) => demux.push(b));
      stream.on("end", () => close("the exec stream ended"));
      stream.on("close", () => close("the exec stream closed"));
      stream.on("error", (e) => close(e.message));
      return {
        pid: undefined,
        write: (text) => {
          if (!stream.destroyed && stream.writable) stream.write(text);
        },
        end: () => stream.end(),
        kill: () => stream.destroy(),
        ref: (on) => {
          if (on) stream.ref?.();
          else stream.unref?.();
        },
      };
    },
  };
}
