/**
 * The exec provider's v1 compensations end to end: what the start JSON of a v1 script holds
 * (the prompt inside `command`, no v2 keys), a refusal that sends nothing, a v1 `start` that
 * exits 0 although its program is already gone (caught by the post-start check), and hook
 * failures named from stderr.
 */
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { isGcError } from "../../../internal/base/errors.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { onPath } from "../../support/path.js";
import { mockFile, recordedArgv, type TestProvider, testProvider } from "./mock.js";

const SCREEN_SCRIPT = fileURLToPath(
  new URL("../../../contrib/session-scripts/gc-session-screen", import.meta.url),
);

async function scoped(opts: Parameters<typeof testProvider>[0]): Promise<TestProvider> {
  const t = await testProvider(opts);
  onTestFinished(t.cleanup);
  return t;
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a rejection, but it resolved");
}

describe("exec provider, protocol v1: the start document", () => {
  it("carries the prompt inside command and leaves out every v2 key", async () => {
    const t = await scoped({ env: { MOCK_V1: "1" } });
    const cfg: StartConfig = {
      command: "agent --fast",
      workDir: "/tmp",
      env: {},
      prompt: "it's $(x)\nline 2",
      promptFlag: "-p",
      hookDir: "/tmp",
    };
    await t.provider.start("p1", cfg);
    const doc = JSON.parse((await mockFile(t.execDir, "p1", "start.json")) ?? "{}") as Record<
      string,
      unknown
    >;
    expect(doc.prompt).toBeUndefined();
    expect(doc.prompt_flag).toBeUndefined();
    expect(doc.hook_dir).toBeUndefined();
    expect(doc.command).toBe(`exec /bin/sh -c 'agent --fast "$@"' gc-session -p 'it'\\''s $(x)\nline 2'`);
  });

  it("a prompt v1 cannot carry is refused before the script is called", async () => {
    const t = await scoped({ env: { MOCK_V1: "1" } });
    const err = await rejection(
      t.provider.start("p2", { command: "", workDir: "/tmp", env: {}, prompt: "do it" }),
    );
    expect(isGcError(err, "GC_UNSUPPORTED"), String(err)).toBe(true);
    const calls = (await recordedArgv(join(t.execDir, "argv"))).map((c) => c[0]);
    expect(calls).not.toContain("start");
    expect(await t.provider.isRunning("p2")).toBe(false);
  });
});

describe.skipIf(!onPath("screen") || !onPath("jq"))("exec provider, protocol v1: startup failures", () => {
  it("a v1 start that exits 0 for a program already gone is SessionDiedDuringStartupError, nothing left", async () => {
    // A careless v1 script: start always reports success.
    const dir = await mkdtemp(join(tmpdir(), "gc-v1-sloppy-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const sloppy = join(dir, "sloppy");
    await writeFile(
      sloppy,
      `#!/bin/sh\nif [ "$1" = start ]; then ${SCREEN_SCRIPT} "$@" >/dev/null 2>&1; exit 0; fi\nexec ${SCREEN_SCRIPT} "$@"\n`,
    );
    await chmod(sloppy, 0o755);
    const t = await scoped({ script: sloppy });
    expect(t.provider.probe.protocol).toBe(1);
    const err = await rejection(t.provider.start("gone", { command: "exit 3", workDir: dir, env: {} }));
    expect(isGcError(err, "GC_DIED_DURING_STARTUP"), String(err)).toBe(true);
    expect(String(err)).toMatch(/exited right after start/);
    expect(await t.provider.isRunning("gone")).toBe(false);
    expect(await t.provider.listRunning("")).toEqual([]);
  });

  it("a failing session_setup is HookFailedError naming it, and the session is removed", async () => {
    const t = await scoped({ script: SCREEN_SCRIPT });
    const dir = await mkdtemp(join(tmpdir(), "gc-v1-hook-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const err = await rejection(
      t.provider.start("hook", {
        command: "exec sleep 300",
        workDir: dir,
        env: {},
        sessionSetup: ["exit 4"],
      }),
    );
    expect(isGcError(err, "GC_HOOK_FAILED"), String(err)).toBe(true);
    expect((err as Error & { hook?: string }).hook).toBe("session_setup");
    expect(await t.provider.isRunning("hook")).toBe(false);
  });
});
