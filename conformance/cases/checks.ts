/**
 * The assertions and polls the provider conformance cases share: an error by code, a session
 * gone, a program armed, a file's text, an exec'd process tree gone.
 */
import assert from "node:assert/strict";
import { type GcErrorCode, isGcError } from "../../internal/base/errors.js";
import type { CommandProvider, StartConfig } from "../../internal/runtime/provider.js";
import { type CaseContext, CaseSkip } from "./case.js";
import { EXEC_ALIVE, LONG } from "./programs.js";

export async function rejectsWith(p: Promise<unknown>, code: GcErrorCode, what: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (isGcError(e, code)) return;
    throw new assert.AssertionError({ message: `${what}: expected ${code}, got ${String(e)}` });
  }
  throw new assert.AssertionError({ message: `${what}: expected rejection with ${code}, but it resolved` });
}

export async function assertGone(ctx: CaseContext, name: string): Promise<void> {
  assert.equal(await ctx.provider.isRunning(name), false, `${name} must not be running`);
  const listed = await ctx.provider.listRunning(ctx.target.namePrefix);
  assert.ok(!listed.includes(name), `${name} must not be listed`);
}

/**
 * Waits until the program of `name` wrote `armed.out` ({@link INT_TRAP}, {@link EXIT_ON_INT}):
 * its SIGINT trap is set. A program still starting (a loaded host) would otherwise die of a
 * SIGINT sent before its trap exists.
 */
export async function armed(ctx: CaseContext, name: string, cfg: StartConfig): Promise<void> {
  await fileEquals(ctx, name, cfg, "armed.out", "armed\n");
}

export async function running(ctx: CaseContext, command = LONG, extra?: Partial<StartConfig>) {
  const name = ctx.newName();
  const cfg = await ctx.config(command, extra);
  await ctx.start(name, cfg);
  return { name, cfg };
}

export async function fileEquals(
  ctx: CaseContext,
  name: string,
  cfg: StartConfig,
  rel: string,
  want: string,
) {
  let last: string | undefined;
  try {
    await ctx.eventually(`${rel} to equal the expected text`, async () => {
      last = await ctx.read(name, cfg, rel);
      return last === want;
    });
  } catch (e) {
    if (e instanceof CaseSkip) throw e;
    const show = (s: string | undefined) =>
      s === undefined ? "(absent)" : JSON.stringify(s.length > 200 ? `${s.slice(0, 200)}…(${s.length})` : s);
    throw new assert.AssertionError({
      message: `${rel}: want ${show(want)}, got ${show(last)} (${String(e)})`,
    });
  }
}

/** The two pids an {@link EXEC_TREE} command wrote to `file` (read with a second exec), or `undefined`. */
export async function treePids(
  p: CommandProvider,
  name: string,
  file: string,
): Promise<string[] | undefined> {
  const r = await p.execCommand(name, ["cat", file]);
  const pids = r.stdout.trim().split(" ");
  return r.exitCode === 0 && pids.length === 2 && pids.every((x) => /^[1-9][0-9]*$/.test(x))
    ? pids
    : undefined;
}

/** Polls (with a second exec) until none of `pids` is a live process in the session's environment. */
export async function treeGone(ctx: CaseContext, p: CommandProvider, name: string, pids: readonly string[]) {
  await ctx.eventually(`the command and its child (${pids.join(" ")}) to be gone`, async () => {
    const r = await p.execCommand(name, ["sh", "-c", EXEC_ALIVE, "gc-alive", ...pids]);
    return r.exitCode === 1;
  });
}
