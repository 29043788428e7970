/**
 * The byte stream a tmux control-mode client (control-client.ts) runs over: the `tmux -C`
 * process's stdin and stdout, wherever that process lives. {@link localTransport} spawns it
 * here; the docker provider runs it through a hijacked exec stream (docker/channel.ts), the
 * k8s provider through an exec WebSocket (k8s/channel.ts). The client itself never knows
 * which.
 */
import { spawn } from "node:child_process";
import type { Socket } from "node:net";

/** What a transport reports about its stream. `close` comes exactly once, last. */
export interface StreamEvents {
  data(chunk: Buffer): void;
  /** Diagnostic output (the tmux client's stderr). */
  stderr(chunk: Buffer): void;
  /** The stream ended; `why` says how when known ("" otherwise). */
  close(why: string): void;
}

/** One open stream to a `tmux … -C …` client process. */
export interface ControlStream {
  /** Pid of the client process when it is local. */
  readonly pid: number | undefined;
  /** Writes to the client's stdin. Never throws; a broken stream reports `close`. */
  write(text: string): void;
  /** Ends the client's stdin (tmux -C exits at EOF). */
  end(): void;
  /** Ends the stream at once (the client process dies, or loses its stdin). */
  kill(): void;
  /** Whether the stream may keep Node alive (only while commands are pending). */
  ref(on: boolean): void;
}

/** Opens control streams: runs `tmux <args>` somewhere and connects to its stdin/stdout. */
export interface ControlTransport {
  /**
   * Starts the client with `args` (tmux's arguments, without the binary).
   * @throws when the stream cannot be opened (the caller wraps it as a connection error).
   */
  open(args: readonly string[], events: StreamEvents): Promise<ControlStream>;
  /**
   * False when no tmux server listens (so a read-only command need not start one); absent
   * when the transport cannot tell (remote: the container's server is its own business).
   */
  serverListening?: (() => Promise<boolean>) | undefined;
}

/** The tmux client as a child process of this one. */
export function localTransport(opts: {
  readonly tmuxPath: string;
  readonly env: NodeJS.ProcessEnv;
  readonly serverListening?: (() => Promise<boolean>) | undefined;
}): ControlTransport {
  return {
    serverListening: opts.serverListening,
    open: (args, events) =>
      new Promise<ControlStream>((resolve, reject) => {
        const child = spawn(opts.tmuxPath, [...args], { stdio: ["pipe", "pipe", "pipe"], env: opts.env });
        const handles = [child.stdout, child.stderr, child.stdin] as unknown as Socket[];
        let opened = false;
        child.stdout.on("data", (b: Buffer) => events.data(b));
        child.stderr.on("data", (b: Buffer) => events.stderr(b));
        child.stdin.on("error", () => {
          // EPIPE after the client went away; `close` reports it
        });
        child.once("error", (e) => {
          if (!opened) reject(e);
          else events.close(`cannot run tmux: ${e.message}`);
        });
        child.once("spawn", () => {
          opened = true;
          resolve({
            pid: child.pid,
            write: (text) => {
              if (child.stdin.writable) child.stdin.write(text);
            },
            end: () => child.stdin.end(),
            kill: () => child.kill("SIGKILL"),
            ref: (on) => {
              if (on) child.ref();
              else child.unref();
              for (const h of handles) (on ? h.ref : h.unref)?.call(h);
            },
          });
        });
        child.once("close", (code, sig) => {
          if (opened) events.close(`tmux client exited (${sig ?? code})`);
        });
      }),
  };
}
