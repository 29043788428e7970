/**
 * The docker provider's only door to the engine: a lazily loaded dockerode client, and the
 * few calls it needs — containers by exact name, a label-filtered listing, exec with
 * stdin/stdout/stderr and exit code, and tar upload/download. Errors keep the engine's
 * status code so callers can tell "missing" from "unreachable".
 */
import type { Socket } from "node:net";
import { PassThrough, type Readable } from "node:stream";
import type Dockerode from "dockerode";
import { OperationTimeoutError, ProviderError } from "../../base/errors.js";
import { OutputCapture } from "../../proc/capture.js";

/** The engine answered with an HTTP status (404 missing, 409 conflict/not running, …). */
export function statusOf(e: unknown): number | undefined {
  const c = (e as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof c === "number" ? c : undefined;
}

/** Options of one {@link Engine.exec}. */
export interface ExecOptions {
  readonly argv: readonly string[];
  readonly stdin?: string | Buffer | undefined;
  readonly env?: readonly string[] | undefined;
  readonly user?: string | undefined;
  readonly workDir?: string | undefined;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** On a deadline or abort, hang the output received on the error (`capturedOutputOf`). */
  readonly keepOutputOnCut?: boolean | undefined;
}

/** What an exec did. */
export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A connection to one engine (one unix socket). Loads dockerode on first use. */
export class Engine {
  readonly socketPath: string;
  private client: Promise<Dockerode> | undefined;

  constructor(socketPath: string) {
    this.socketPath = socketPath;
  }

  /** The dockerode client (imported lazily: `gc peek` on tmux never loads it). */
  docker(): Promise<Dockerode> {
    this.client ??= import("dockerode").then(
      ({ default: Docker }) => new Docker({ socketPath: this.socketPath }),
    );
    return this.client;
  }

  /** The container named exactly `name`, or `undefined` when there is none. */
  async inspect(name: string, signal?: AbortSignal): Promise<Dockerode.ContainerInspectInfo | undefined> {
    const d = await this.docker();
    try {
      return (await d
        .getContainer(name)
        .inspect({ abortSignal: signal } as never)) as unknown as Dockerode.ContainerInspectInfo;
    } catch (e) {
      if (statusOf(e) === 404) return undefined;
      throw this.wrap(`inspect ${name}`, e);
    }
  }

  /**
   * Runs `argv` in the running container `id` and collects its output (each stream capped,
   * proc/capture.ts) and exit code. Past `timeoutMs` or on abort it stops waiting and closes
   * the stream, rejecting with OperationTimeoutError or the abort reason (with
   * `keepOutputOnCut`, carrying the output received until then); the engine does not kill the command for that
   * (callers that must, see lifecycle/kill-on-cut.ts).
   */
  async exec(id: string, o: ExecOptions): Promise<ExecResult> {
    const d = await this.docker();
    const container = d.getContainer(id);
    const withStdin = o.stdin !== undefined;
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
    signal.throwIfAborted();
    const exec = await container.exec({
      Cmd: [...o.argv],
      AttachStdin: withStdin,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      ...(o.env ? { Env: [...o.env] } : {}),
      ...(o.user ? { User: o.user } : {}),
      ...(o.workDir ? { WorkingDir: o.workDir } : {}),
    });
    const stream = (await startHijacked(exec, withStdin, signal)) as NodeJS.ReadWriteStream & Readable;
    const capture = new OutputCapture({ keepOnCut: o.keepOutputOnCut });
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    stdout.on("data", capture.stdout);
    stderr.on("data", capture.stderr);
    d.modem.demuxStream(stream, stdout, stderr);
    const done = new Promise<void>((resolve, reject) => {
      stream.on("end", resolve);
      stream.on("close", resolve);
      stream.on("error", reject);
    });
    const onAbort = () => stream.destroy();
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort(); // aborted while the exec was being created or started
    try {
      if (withStdin) {
        stream.write(o.stdin as string | Buffer);
        stream.end();
      }
      await done;
      if (signal.aborted) throw signal.reason;
      for (let i = 0; ; i++) {
        const info = await exec.inspect();
        if (!info.Running) {
          return { exitCode: info.ExitCode ?? -1, ...capture.text() };
        }
        if (i > 200)
          throw new ProviderError("docker", `exec ${o.argv[0]}: still running after its output ended`);
        await new Promise((r) => setTimeout(r, 10));
      }
    } catch (e) {
      if (o.signal?.aborted) throw capture.cut(o.signal.reason);
      if (timeout.aborted)
        throw capture.cut(new OperationTimeoutError(`docker exec ${o.argv[0]}`, o.timeoutMs, { cause: e }));
      throw e;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Extracts the tar `archive` at `path` (a directory that exists) in container `id`. */
  async putArchive(id: string, archive: Buffer, path: string): Promise<void> {
    const d = await this.docker();
    await d.getContainer(id).putArchive(archive, { path });
  }

  /** The tar archive of `path` in container `id`, or `undefined` when the path is missing. */
  async getArchive(id: string, path: string): Promise<Buffer | undefined> {
    const d = await this.docker();
    let stream: NodeJS.ReadableStream;
    try {
      stream = await d.getContainer(id).getArchive({ path });
    } catch (e) {
      if (statusOf(e) === 404) return undefined;
      throw e;
    }
    const chunks: Buffer[] = [];
    for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
    return Buffer.concat(chunks);
  }

  /** Adds what the engine said to an error. */
  wrap(what: string, e: unknown): Error {
    if (e instanceof Error && "code" in e && typeof e.code === "string" && e.code.startsWith("GC_")) return e;
    const msg = (e as { json?: { message?: string } })?.json?.message ?? (e as Error)?.message ?? String(e);
    return new ProviderError("docker", `${what}: ${msg}`, { cause: e });
  }
}

/**
 * Starts `exec` with its stream hijacked and resolves the stream. docker-modem never ends a
 * hijacked request with stdin whose answer is not an upgrade (a 500 or 409 when the container
 * stopped meanwhile): its socket would stay open and keep the gc process alive after its
 * command is over. A failed start aborts its request; `signal` aborts a start in progress.
 */
export async function startHijacked(
  exec: Dockerode.Exec,
  stdin: boolean,
  signal?: AbortSignal,
): Promise<Socket> {
  const ac = new AbortController();
  const onAbort = () => ac.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    return (await exec.start({ hijack: true, stdin, abortSignal: ac.signal })) as unknown as Socket;
  } catch (e) {
    ac.abort();
    throw e;
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}
