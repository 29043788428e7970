/**
 * Helpers for the exec provider's unit tests: a provider over the mock session script
 * (test/fixtures/exec/mock-session.sh) in a private temp state dir, and readers for what the
 * script recorded (argv per call, stdin kept per session).
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createProvider, type ExecProvider } from "../../../internal/runtime/exec/index.js";

/** The mock session script. */
export const MOCK_SCRIPT = fileURLToPath(new URL("../../fixtures/exec/mock-session.sh", import.meta.url));
/** The argv-recording shim in front of a real script. */
export const RECORD_SCRIPT = fileURLToPath(new URL("../../fixtures/exec/record-argv.sh", import.meta.url));
/** The reference tmux script. */
export const TMUX_SCRIPT = fileURLToPath(
  new URL("../../../contrib/session-scripts/gc-session-tmux", import.meta.url),
);

/** A provider over `script` with its own temp state dir. */
export interface TestProvider {
  readonly provider: ExecProvider;
  /** `GC_EXEC_STATE_DIR` of the script. */
  readonly execDir: string;
  /** Removes the temp dirs. */
  cleanup(): Promise<void>;
}

/** Builds an exec provider over `script` (default: the mock) with `env` for the script. */
export async function testProvider(
  opts: { script?: string; env?: Record<string, string>; settings?: Record<string, unknown> } = {},
): Promise<TestProvider> {
  const root = await mkdtemp(join(tmpdir(), "gcxt-"));
  try {
    const provider = await createProvider({
      city: "unit",
      cityDir: root,
      stateDir: root,
      arg: opts.script ?? MOCK_SCRIPT,
      env: opts.env,
      settings: opts.settings,
    });
    return {
      provider,
      execDir: join(root, "exec"),
      cleanup: () => rm(root, { recursive: true, force: true }),
    };
  } catch (e) {
    await rm(root, { recursive: true, force: true });
    throw e;
  }
}

/** Every recorded argv (argv[1..], i.e. operation first), one array per call. */
export async function recordedArgv(dir: string): Promise<string[][]> {
  let files: string[];
  try {
    files = await readdir(dir);
  } catch {
    return [];
  }
  const calls: string[][] = [];
  for (const f of files) {
    const text = await readFile(join(dir, f), "utf8");
    calls.push(text.split("\0").slice(0, -1));
  }
  return calls;
}

/** A file the mock keeps for session `name` (`start.json`, `nudge`, `meta/<key>`…). */
export async function mockFile(execDir: string, name: string, rel: string): Promise<string | undefined> {
  try {
    return await readFile(join(execDir, "sess", name, rel), "utf8");
  } catch {
    return undefined;
  }
}

/** Kept for tests written against this module; the one implementation is test/support/path.ts. */
export { onPath } from "../../support/path.js";
