/**
 * Work inside a session's pod, over the exec WebSocket (never kubectl): running a command
 * (no shell around it; values travel as argv elements), a start hook or a local script
 * streamed over stdin, unpacking files packed here as tar, and reading and typing into the
 * pod's tmux session over its control channel.
 */
import { readFile, stat } from "node:fs/promises";
import { basename, posix, resolve } from "node:path";
import { InvalidNameError, OperationTimeoutError, ProviderError } from "../../base/errors.js";
import type { RunResult } from "../../proc/run.js";
import { SHELL } from "../launch.js";
import type { CommandOptions, StartPlan } from "../lifecycle/index.js";
import { RUN_STDIN } from "../lifecycle/target-scripts.js";
import { tarOfPath } from "../tar.js";
import type { PaneState } from "../tmux/pane.js";
import { apiMessage, type ExecResult } from "./api.js";
import { EXEC_TIMEOUT_MS, type K8sCity } from "./city.js";
import { IN_DIR, UNTAR, UNTAR_FILE } from "./scripts.js";
import { splitEnv, tmuxSocket } from "./spec.js";

/** How long a typed text may take to show as submitted. */
const CONFIRM_MS = 1_500;

/** Runs `argv` in pod `pod` (no shell). */
export async function runInPod(
  city: K8sCity,
  pod: string,
  argv: readonly string[],
  opts: {
    stdin?: string | Buffer | NodeJS.ReadableStream | undefined;
    signal?: AbortSignal | undefined;
    timeoutMs?: number | undefined;
    /** On a deadline or abort, hang the output received on the error (`capturedOutputOf`). */
    keepOutputOnCut?: boolean | undefined;
  } = {},
): Promise<ExecResult> {
  const api = await city.api();
  try {
    return await api.exec(city.ns, pod, argv, {
      stdin: opts.stdin as never,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs ?? EXEC_TIMEOUT_MS,
      keepOutputOnCut: opts.keepOutputOnCut,
    });
  } catch (e) {
    if (e instanceof ProviderError || e instanceof OperationTimeoutError || opts.signal?.aborted) throw e;
    throw new ProviderError("k8s", `exec in pod ${pod}: ${apiMessage(e)}`, { cause: e });
  }
}

/** `tmux` on the pod's server socket, with `args`. */
export function tmuxIn(pod: string, ...args: string[]): string[] {
  return ["tmux", "-S", tmuxSocket(pod), ...args];
}

/**
 * {@link StartBackend.runCommand} in a pod: `argv` (a hook's `/bin/sh -c CMD`) runs in
 * `opts.cwd` in the pod with the plain values of `opts.env` (secret ones are already in the
 * container's environment, from the Secret; they never travel as argv). A local script
 * (`session_setup_script`: `[path]` or `[sh, path]`, `path` under `hookDir` in the pod,
 * i.e. under `localHookDir` here) is streamed over stdin and run by {@link RUN_STDIN}.
 * @throws OperationTimeoutError past `opts.timeoutMs`; the signal's reason on abort.
 */
export async function podCommand(
  city: K8sCity,
  pod: string,
  hookDir: string,
  localHookDir: string,
  argv: readonly string[],
  opts: CommandOptions,
): Promise<RunResult> {
  const env = envArgv(splitEnv(opts.env).plain);
  const hook = argv.length === 3 && argv[0] === SHELL && argv[1] === "-c";
  let r: ExecResult;
  if (hook) {
    r = await runInPod(city, pod, [...env, "/bin/sh", "-c", IN_DIR, "gc-hook", opts.cwd, ...argv], {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  } else {
    const path = argv[argv.length - 1]!;
    const rel = posix.relative(hookDir, path);
    const local = rel.startsWith("..") || posix.isAbsolute(rel) ? path : resolve(localHookDir, rel);
    r = await runInPod(city, pod, [...env, "/bin/sh", "-c", RUN_STDIN, "gc-script", opts.cwd], {
      stdin: await readFile(local),
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }
  return {
    exitCode: r.exitCode,
    signal: null,
    stdout: r.stdout.toString("utf8"),
    stderr: r.stderr.toString("utf8"),
  };
}

/** Unpacks a {@link pack}ed archive under the pod's `workDir`. */
export async function unpack(
  city: K8sCity,
  pod: string,
  workDir: string,
  item: Packed,
  signal?: AbortSignal,
): Promise<void> {
  const dst = posix.join(workDir, item.relDst || ".");
  const untar = item.file
    ? ["/bin/sh", "-c", UNTAR_FILE, "gc-untar", posix.dirname(dst), item.name, posix.basename(dst)]
    : ["/bin/sh", "-c", UNTAR, "gc-untar", dst];
  const r = await runInPod(city, pod, untar, { stdin: item.archive, signal });
  if (r.exitCode !== 0) {
    throw new ProviderError(
      "k8s",
      `unpacking ${item.src} in pod ${pod}: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`,
    );
  }
}

/** Current pane of the pod's session (over its control channel), or `undefined` when there is none. */
export function readScreen(city: K8sCity, pod: string, signal?: AbortSignal): Promise<PaneState | undefined> {
  return city.channel(pod).read(signal);
}

/**
 * Types `text` into the pod's session (`multiline`: the session's rule) and confirms it was
 * submitted (tmux/pane.ts `deliver`).
 */
export function typeInto(
  city: K8sCity,
  name: string,
  pod: string,
  text: string,
  signal?: AbortSignal,
  multiline?: "paste" | "lines" | undefined,
): Promise<void> {
  return city.channel(pod).deliver(name, text, CONFIRM_MS, signal, multiline);
}

/** `env K=V…` argv prefix (values travel as argv elements, never through a shell). */
export function envArgv(env: Readonly<Record<string, string>>): string[] {
  const pairs = Object.entries(env).filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  return pairs.length ? ["env", ...pairs.map(([k, v]) => `${k}=${v}`)] : [];
}

/** A local file or tree packed as a tar archive, and where under a work dir it goes. */
export interface Packed {
  /** The local source (for errors). */
  readonly src: string;
  readonly archive: Buffer;
  /** Destination relative to the work dir ("" = the work dir, or the file's own name). */
  readonly relDst: string;
  /** A single file (its name in the archive is `name`), else a directory's contents. */
  readonly file: boolean;
  readonly name: string;
}

/**
 * Packs local `src` (file or directory) for `relDst` under a work dir. A file with an empty
 * `relDst` keeps its name.
 * @throws InvalidNameError when `relDst` leaves the work dir; the fs error when `src` cannot be read.
 */
export async function pack(src: string, relDst: string, signal?: AbortSignal): Promise<Packed> {
  const inside = posix.normalize(posix.join("/w", relDst || "."));
  if (inside !== "/w" && !inside.startsWith("/w/")) {
    throw new InvalidNameError("copy destination", relDst, "must stay inside the work dir");
  }
  const file = !(await stat(src)).isDirectory();
  signal?.throwIfAborted();
  // Owned like the local files, as the host's `tar -c` recorded them (tar.ts, no spawn).
  const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const archive = await tarOfPath(src, file ? basename(src) : ".", owner);
  return { src, archive, relDst: file && !relDst ? basename(src) : relDst, file, name: basename(src) };
}

/**
 * The lifecycle's `stage` for pods: packs `overlay_dir` (its contents into the work dir) and
 * each `copy_files` entry, in that order, before the pod exists; `create` unpacks them.
 */
export async function packStage(plan: StartPlan, signal: AbortSignal): Promise<Packed[]> {
  const out: Packed[] = [];
  const { overlayDir, copyFiles } = plan.config;
  if (overlayDir) out.push(await pack(resolve(plan.sourceDir, overlayDir), "", signal));
  for (const e of copyFiles ?? []) out.push(await pack(resolve(plan.sourceDir, e.src), e.relDst, signal));
  return out;
}
