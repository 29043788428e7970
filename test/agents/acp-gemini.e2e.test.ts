/**
 * Live ACP against the real Gemini CLI (`gemini --acp`, the version pinned in
 * scripts/agent-clis.mjs, installed by npm into the agent-CLI cache outside the repository),
 * offline and signed out (private HOME, no key): `initialize` answers with the agent's info
 * and auth methods, `session/new` answers (auth required), the session starts with the auth
 * methods as its pending interaction, and a prompt fails at once with a clear gc error that
 * names them — never a hang. Skips (with the reason) only when npm cannot be reached and
 * nothing is cached.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { shellQuote } from "../../internal/config/resolve.js";
import { AcpProvider } from "../../internal/runtime/acp/index.js";
import { isGcError } from "../../internal/runtime/errors.js";
import { AGENT_CLIS, installAgentCli, npmUnreachable } from "../../scripts/agent-clis.mjs";

let bin: string | undefined;
let skipReason: string | undefined;

beforeAll(async () => {
  try {
    bin = (await installAgentCli("gemini")).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
  }
}, 900_000);

describe("acp: live gemini --acp", { timeout: 120_000 }, () => {
  it("initialize and session/new answer; an unauthenticated prompt is a clear gc error, not a hang", async (t) => {
    if (skipReason || !bin) t.skip(skipReason);
    const root = await mkdtemp(join(tmpdir(), "gc-acp-gemini-"));
    const home = join(root, "home");
    const work = join(root, "work");
    await mkdir(home);
    await mkdir(work);
    const p = new AcpProvider({
      city: "gemini-live",
      stateDir: join(root, "state"),
      baseEnv: { PATH: process.env.PATH, HOME: home },
    });
    onTestFinished(async () => {
      await p.stop("gem");
      await rm(root, { recursive: true, force: true });
    });
    await p.start("gem", {
      command: `exec ${shellQuote(bin ?? "gemini")} --acp`,
      workDir: work,
      env: { HOME: home },
    });
    const st = await p.acpStatus("gem");
    expect(st?.agent).toBe(`gemini-cli ${AGENT_CLIS.gemini.version}`); // initialize's agentInfo
    expect(st?.state).toBe("needs_auth"); // session/new answered auth_required
    expect(st?.authMethods).toContain("gemini-api-key");
    const pending = await p.pending("gem");
    expect(pending).toMatchObject({ kind: "authentication" });
    expect(pending?.options).toContain("gemini-api-key");
    const err = await p.prompt("gem", "hello").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isGcError(err, "GC_NUDGE_NOT_DELIVERED"), String(err)).toBe(true);
    expect(String(err)).toContain("needs authentication");
    expect(String(err)).toContain("gc session respond gem");
    expect(await p.isRunning("gem")).toBe(true);
  });
});
