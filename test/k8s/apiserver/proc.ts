/**
 * Local processes standing in for container processes: spawned with pipes or on a PTY, each
 * tagged with marker environment variables so that every descendant — including daemons that
 * leave the process group, like a tmux server — can be found and killed later by scanning
 * /proc/<pid>/environ.
 */
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { accessSync, constants, statSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { delimiter, isAbsolute, join } from "node:path";
import pty from "@lydell/node-pty";
import { killPids } from "../../../internal/proc/kill.js";

/** How a process ended. `signal` is set when it was killed by one. */
export interface ExitInfo {
  readonly code: number;
  readonly signal?: string | undefined;
}

/** A running local process with Kubernetes-style streams. */
export interface Proc {
  readonly pid: number;
  /** Output: `1` stdout (everything when on a PTY), `2` stderr. */
  on(event: "output", cb: (stream: 1 | 2, data: Buffer) => void): this;
  write(data: Buffer): void;
  /** Closes stdin (EOF). On a PTY sends ^D. */
  endStdin(): void;
  resize(cols: number, rows: number): void;
  signal(sig: NodeJS.Signals): void;
  readonly exited: Promise<ExitInfo>;
}

/** Options of {@link startProc}. */
export interface ProcOptions {
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly tty?: boolean;
  readonly cols?: number;
  readonly rows?: number;
}

/** Resolves argv[0] like execvp: a path with a slash as is (relative to cwd), else through PATH. */
export function lookPath(file: string, env: Record<string, string>, cwd: string): string | undefined {
  const candidates = file.includes("/")
    ? [isAbsolute(file) ? file : join(cwd, file)]
    : (env.PATH ?? "")
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, file));
  for (const c of candidates) {
    try {
      if (statSync(c).isFile()) {
        accessSync(c, constants.X_OK);
        return c;
      }
    } catch {
      // try the next one
    }
  }
  return undefined;
}

const SIGNALS: Record<number, string> = { 1: "SIGHUP", 2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM" };
const SIGNUM: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGTERM: 15,
  SIGPIPE: 13,
};

class ProcImpl extends EventEmitter implements Proc {
  pid = 0;
  exited!: Promise<ExitInfo>;
  writeFn: (d: Buffer) => void = () => {};
  endFn: () => void = () => {};
  resizeFn: (c: number, r: number) => void = () => {};
  write(data: Buffer): void {
    this.writeFn(data);
  }
  endStdin(): void {
    this.endFn();
  }
  resize(cols: number, rows: number): void {
    this.resizeFn(cols, rows);
  }
  signal(sig: NodeJS.Signals): void {
    try {
      process.kill(this.pid, sig);
    } catch {
      // gone
    }
  }
}

/**
 * Starts `argv` (no shell). Throws `Error` with code ENOENT when argv[0] cannot be found or run,
 * before anything is spawned.
 */
export function startProc(argv: readonly string[], opts: ProcOptions): Proc {
  const [file, ...args] = argv;
  if (!file) throw Object.assign(new Error("no command given"), { code: "ENOENT" });
  const resolved = lookPath(file, opts.env, opts.cwd);
  if (!resolved) {
    throw Object.assign(new Error(`exec: "${file}": executable file not found in $PATH`), { code: "ENOENT" });
  }
  const p = new ProcImpl();
  if (opts.tty) {
    const term = pty.spawn(resolved, args, {
      name: opts.env.TERM || "xterm",
      cols: opts.cols ?? 80,
      rows: opts.rows ?? 24,
      cwd: opts.cwd,
      env: opts.env,
      encoding: null,
    });
    p.pid = term.pid;
    term.onData((d) => p.emit("output", 1, Buffer.isBuffer(d) ? d : Buffer.from(d)));
    p.writeFn = (d) => term.write(d.toString("utf8"));
    p.endFn = () => term.write("\x04");
    p.resizeFn = (c, r) => {
      try {
        term.resize(Math.max(1, c), Math.max(1, r));
      } catch {
        // exited
      }
    };
    p.exited = new Promise((resolve) =>
      term.onExit(({ exitCode, signal }) =>
        resolve(
          signal ? { code: 128 + signal, signal: SIGNALS[signal] ?? String(signal) } : { code: exitCode },
        ),
      ),
    );
    return p;
  }
  const child = spawn(resolved, args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
    argv0: file,
  });
  p.pid = child.pid ?? 0;
  child.stdout.on("data", (d: Buffer) => p.emit("output", 1, d));
  child.stderr.on("data", (d: Buffer) => p.emit("output", 2, d));
  child.stdin.on("error", () => {}); // EPIPE when the process ignores stdin
  p.writeFn = (d) => {
    if (!child.stdin.destroyed && !child.stdin.writableEnded) child.stdin.write(d);
  };
  p.endFn = () => {
    if (!child.stdin.writableEnded) child.stdin.end();
  };
  p.exited = new Promise((resolve) => {
    child.on("error", () => resolve({ code: 126 }));
    // "close" waits for the output pipes, so no output is lost after the exit status.
    child.on("close", (code, signal) =>
      resolve(signal ? { code: 128 + (SIGNUM[signal] ?? 0), signal } : { code: code ?? 0 }),
    );
  });
  return p;
}

/** Pids of live processes whose environment contains `NAME=value` (one /proc scan). */
export async function pidsWithEnv(name: string, value: string): Promise<number[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  const out: number[] = [];
  const entries = await readdir("/proc").catch(() => [] as string[]);
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid)
      .map(async (e) => {
        try {
          const env = await readFile(`/proc/${e}/environ`);
          if (env.indexOf(needle) === 0 || env.includes(Buffer.concat([Buffer.from("\0"), needle]))) {
            out.push(Number(e));
          }
        } catch {
          // gone, or not ours
        }
      }),
  );
  return out;
}

/** SIGTERMs (or `signal`s) every process tagged `NAME=value`, SIGKILLing survivors after `graceMs`. */
export async function killTagged(
  name: string,
  value: string,
  opts: { graceMs?: number; signal?: NodeJS.Signals } = {},
): Promise<void> {
  // Two rounds: a process forked while the first scan ran is caught by the second.
  for (let round = 0; round < 2; round++) {
    const pids = await pidsWithEnv(name, value);
    if (pids.length === 0) return;
    await killPids(pids, opts);
  }
}
