/**
 * Test support for CLI tests: temporary city directories and the built `gc` binary.
 * Every city made here is torn down after the test (controller, sessions, tmux server,
 * temp dir), even when the test fails.
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { onTestFinished } from "vitest";
import { defaultSocketName, storedIdentity } from "../../internal/runtime/identity.js";

/** Absolute path of the built CLI. */
export const GC_BIN = fileURLToPath(new URL("../../dist/cmd/gc/main.js", import.meta.url));

/** Output of one `gc` run. */
export interface GcResult {
  /** The exit code; `null` when a signal ended it (`signal`, present only then). */
  readonly code: number | null;
  readonly signal?: NodeJS.Signals | null | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/** A temporary city. */
export interface TestCity {
  readonly dir: string;
  readonly name: string;
  /**
   * tmux socket name of the city (`gc-<name>-<city id>`, runtime/identity.ts), read from the
   * identity gc stored with the city on its first load.
   */
  readonly socket: string;
  /** Runs the built `gc --city <dir> ...args`. */
  gc(
    args: string[],
    opts?: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ): Promise<GcResult>;
  /** Rewrites city.yaml. */
  write(yaml: string): void;
  /** Runs raw tmux against the city's socket (argv, no shell). */
  tmux(...args: string[]): { code: number | null; stdout: string };
}

let seq = 0;

/** The id gc stored with the city at `dir` (runtime/identity.ts); `undefined` before its first load. */
export function storedCityId(dir: string): string | undefined {
  return storedIdentity(dir)?.id;
}

/** The default tmux socket of the city at `dir` (from its stored identity, once it has one). */
function socketOf(dir: string, name: string): string {
  const id = storedIdentity(dir);
  return id ? defaultSocketName(id.name, id.id) : defaultSocketName(name);
}

/**
 * Creates a city whose `workspace.name` is unique; `yaml` gets `@NAME@` replaced by it. Its
 * cleanup is registered with `onFinished`: concurrent tests pass their own context's
 * `onTestFinished` (the global one may bind the cleanup to another running test).
 */
export function makeCity(yaml: string, onFinished: typeof onTestFinished = onTestFinished): TestCity {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-city-")));
  const name = `t${process.pid}x${++seq}`;
  const write = (text: string) => writeFileSync(join(dir, "city.yaml"), text.replaceAll("@NAME@", name));
  write(yaml);
  const city: TestCity = {
    dir,
    name,
    get socket() {
      return socketOf(dir, name);
    },
    write,
    gc: (args, opts = {}) => runGc(["--city", dir, ...args], opts),
    tmux: (...args) => {
      const r = spawnSync("tmux", ["-L", socketOf(dir, name), ...args], { encoding: "utf8" });
      return { code: r.status, stdout: r.stdout };
    },
  };
  onFinished(async () => {
    await runGc(["--city", dir, "stop"], { timeoutMs: 60_000 }).catch(() => undefined);
    // Whatever the test did to the city (even an unloadable file), no controller survives it:
    // a live one would re-create the tmux server we are about to kill.
    try {
      const pid = Number(readFileSync(join(dir, ".gc", "controller.pid"), "utf8").trim());
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(pid, "SIGKILL");
    } catch {
      // no controller left
    }
    spawnSync("tmux", ["-L", socketOf(dir, name), "kill-server"], { stdio: "ignore" });
    // GC_TEST_SAVE_LOGS=<dir> keeps each city's controller log (for debugging flaky runs).
    const saveTo = process.env.GC_TEST_SAVE_LOGS;
    if (saveTo) {
      mkdirSync(saveTo, { recursive: true });
      try {
        cpSync(join(dir, ".gc", "controller.log"), join(saveTo, `${name}.log`));
      } catch {
        // no controller log
      }
    }
    const socketPath = join(`/tmp/tmux-${process.getuid?.() ?? 0}`, socketOf(dir, name));
    rmSync(socketPath, { force: true });
    rmSync(`${socketPath}.gc-gate`, { force: true });
    // A program finishing its exit (an agent CLI saving state into its HOME under the city)
    // can still add a file while the tree is removed: retry instead of failing the test.
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });
  return city;
}

/**
 * Runs the built gc with `args` (`gcBin`: another build's CLI, default {@link GC_BIN}); never
 * rejects for a non-zero exit.
 */
export function runGc(
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string; gcBin?: string } = {},
): Promise<GcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [opts.gcBin ?? GC_BIN, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, NO_COLOR: "1", ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ...(signal ? { signal } : {}) });
    });
    // A command that exits without reading its stdin closes the pipe: not an error here.
    child.stdin.on("error", () => undefined);
    child.stdin.end(opts.input ?? "");
  });
}

export { until } from "./until.js";
