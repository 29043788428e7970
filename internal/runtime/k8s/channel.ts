/**
 * The tmux control channel into a pod: a {@link ControlTransport} that runs `tmux -C` through
 * one exec WebSocket (stdin attached, no TTY), so the k8s provider's steady-state screen,
 * keys and nudge operations open no new exec. One such stream per pod.
 */
import type { Socket } from "node:net";
import { PassThrough, Writable } from "node:stream";
import type { ControlStream, ControlTransport } from "../tmux/transport.js";
import type { KubeApi } from "./api.js";

/** A transport running the tmux client in pod `pod` of `namespace`. */
export function k8sTransport(api: () => Promise<KubeApi>, namespace: string, pod: string): ControlTransport {
  return {
    open: async (args, events): Promise<ControlStream> => {
      const a = await api();
      const stdin = new PassThrough();
      const sink = (into: (b: Buffer) => void) =>
        new Writable({
          write(chunk: Buffer, _enc, cb) {
            into(chunk);
            cb();
          },
        });
      const ws = await a.execStream(namespace, pod, ["tmux", ...args], {
        stdout: sink(events.data),
        stderr: sink(events.stderr),
        stdin,
      });
      let closed = false;
      const close = (why: string) => {
        if (closed) return;
        closed = true;
        stdin.destroy();
        events.close(why);
      };
      ws.on("close", (code: number) => close(`the exec stream closed (${code})`));
      ws.on("error", (e: Error) => close(e.message));
      const socket = () => (ws as unknown as { _socket?: Socket })._socket;
      return {
        pid: undefined,
        write: (text) => {
          if (!closed) stdin.write(text);
        },
        end: () => stdin.end(),
        kill: () => ws.terminate(),
        ref: (on) => {
          const s = socket();
          if (on) s?.ref();
          else s?.unref();
        },
      };
    },
  };
}
