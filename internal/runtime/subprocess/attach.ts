/**
 * Attaching a terminal to a held session: the terminal goes raw and is wired to the
 * session's attach stream until the detach keys (keys.ts), the end of the program, or an
 * abort; it is restored afterwards, and follows the terminal's resizes. The session keeps
 * running.
 */
import { OP_TIMEOUT_MS } from "../../proc/run.js";
import { holderRequest, openAttach } from "./client.js";
import { DETACH_RESET, type DetachKeys, DetachMatcher, describeDetachKeys } from "./keys.js";
import { STATUS_TIMEOUT_MS } from "./options.js";

/** What {@link attachTerminal} joins. */
export interface AttachTarget {
  /** The session's name (in the terminal title and the closing line). */
  readonly name: string;
  /** The session's socket. */
  readonly socket: string;
  /** Who the holder must serve: this city's ownership tag and the session's name. */
  readonly expect: { readonly city: string; readonly name: string };
  readonly input: NodeJS.ReadStream;
  readonly output: NodeJS.WriteStream;
  readonly keys: DetachKeys;
  readonly signal?: AbortSignal | undefined;
}

/** Runs one attach (see the module comment); resolves on detach or when the session ends. */
export async function attachTerminal(t: AttachTarget): Promise<void> {
  const { name, socket, input, output, expect, keys, signal } = t;
  const size = () => ({ cols: output.columns || undefined, rows: output.rows || undefined });
  const stream = await openAttach(socket, size(), {
    timeoutMs: OP_TIMEOUT_MS,
    signal,
    expect,
  });
  const matcher = new DetachMatcher(keys);
  const wasRaw = input.isRaw;
  await new Promise<void>((resolveAttach) => {
    let done = false;
    const finish = (how: "detached" | "ended") => {
      if (done) return;
      done = true;
      input.off("data", onInput);
      output.off("resize", onResize);
      stream.socket.off("data", onOutput);
      signal?.removeEventListener("abort", onAbort);
      input.setRawMode(wasRaw);
      input.pause();
      stream.socket.destroy();
      output.write(
        `${DETACH_RESET}\r\n[gc: ${how === "detached" ? "detached from" : "session ended:"} ${name}]\r\n`,
      );
      resolveAttach();
    };
    const onInput = (chunk: Buffer | string) => {
      const step = matcher.feed(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
      if (step.forward.length > 0) stream.socket.write(step.forward);
      if (step.detach) finish("detached");
    };
    const onOutput = (chunk: Buffer) => output.write(chunk);
    const onResize = () => {
      const s = size();
      if (s.cols === undefined || s.rows === undefined) return;
      holderRequest(
        socket,
        { op: "resize", cols: s.cols, rows: s.rows },
        { timeoutMs: STATUS_TIMEOUT_MS, expect },
      ).catch(() => undefined);
    };
    const onAbort = () => finish("detached");
    stream.socket.on("data", onOutput);
    stream.socket.on("error", () => finish("ended"));
    stream.socket.on("close", () => finish("ended"));
    output.on("resize", onResize);
    signal?.addEventListener("abort", onAbort, { once: true });
    output.write(`\x1b]2;gc: ${name} (detach: ${describeDetachKeys(keys)})\x07`);
    if (stream.initial.length > 0) output.write(stream.initial);
    input.setRawMode(true);
    input.on("data", onInput);
    input.resume();
    stream.socket.resume();
  });
}
