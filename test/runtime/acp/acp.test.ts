/**
 * The ACP provider's own behaviours on the real ACP test agent (test/fixtures/acp/agent.mjs,
 * the official SDK's agent side, a real process over stdio) through real holders: turns with
 * replies, tool calls and plans in the transcript; a permission request as a pending
 * interaction answered by option kind; interrupt = session/cancel ending the turn
 * `cancelled`; a crash mid-turn ending the turn with an error and the exit status kept; an
 * agent that needs signing in, left alone by `approval: allow-all` and answered with its auth
 * method; `session.acp.mcp_servers`
 * reaching session/new.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testAgentCommand } from "../../../conformance/targets/acp.js";
import { applyApprovalPolicy } from "../../../internal/reconcile/approval.js";
import { type AcpProvider, createProvider } from "../../../internal/runtime/acp/index.js";
import type { StartConfig } from "../../../internal/runtime/provider.js";
import { openMemoryStore } from "../../../internal/session/memory-store.js";

let root: string;
let p: AcpProvider;
let n = 0;
const names: string[] = [];

async function session(env: Record<string, string> = {}, extra: Partial<StartConfig> = {}): Promise<string> {
  const name = `acp-t${++n}`;
  const workDir = join(root, name);
  await mkdir(workDir);
  names.push(name);
  await p.start(name, { command: testAgentCommand(), workDir, env, ...extra });
  return name;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gc-acp-rt-"));
  p = createProvider({
    city: "acp-rt",
    cityDir: root,
    stateDir: join(root, "state"),
    settings: { mcp_servers: [{ name: "files", command: "/usr/bin/true", args: ["--x"], env: { A: "1" } }] },
  });
});

afterAll(async () => {
  await Promise.all(names.map((s) => p.stop(s)));
  await rm(root, { recursive: true, force: true });
});

describe("acp provider", { timeout: 60_000 }, () => {
  it("turns: reply, tool calls, plan and the initial nudge as the first turn, in the transcript", async () => {
    const s = await session({}, { nudge: "first words" });
    expect(await p.waitTurn(s, 1, 10_000)).toMatchObject({
      prompt: "first words",
      reply: "echo: first words",
    });
    const id = await p.prompt(s, "plan it");
    expect(await p.waitTurn(s, id, 10_000)).toMatchObject({ reply: "planned", stopReason: "end_turn" });
    expect(await p.waitForIdle(s, 5_000)).toBe("idle");
    expect(await p.peek(s, 0)).toBe(
      [
        "> first words",
        "echo: first words",
        "[turn 1 ended: end_turn]",
        "> plan it",
        "[plan]",
        "  [x] look around",
        "  [~] write the answer",
        "planned",
        "[turn 2 ended: end_turn]",
      ].join("\n"),
    );
    expect((await p.turns(s, 1)).map((t) => t.id)).toEqual([2]);
  });

  it("permission: pending with its options and kinds; approve picks allow_once; the turn completes", async () => {
    const s = await session();
    const id = await p.prompt(s, "permission please");
    const pending = await expect
      .poll(() => p.pending(s))
      .toBeTruthy()
      .then(() => p.pending(s));
    expect(pending).toMatchObject({
      kind: "permission",
      prompt: "Delete build/",
      options: ["allow-once", "allow-always", "reject-once"],
      metadata: { "option.allow-always": "allow_always: Always allow", toolCallId: "call-perm" },
    });
    expect(await p.waitForIdle(s, 300)).toBe("timeout"); // waiting on the operator is not idle
    await expect(p.respond(s, { action: "maybe" })).rejects.toThrow(/no option fits/);
    await p.respond(s, { action: "approve" });
    expect(await p.waitTurn(s, id, 10_000)).toMatchObject({
      reply: "permission: allow-once",
      toolCalls: [{ id: "call-perm", status: "completed" }],
    });
    expect(await p.pending(s)).toBeUndefined();
  });

  it("interrupt is session/cancel: a slow turn ends cancelled and the next prompt runs", async () => {
    const s = await session();
    const id = await p.prompt(s, "slow 20000");
    const queued = await p.prompt(s, "after");
    await expect.poll(async () => (await p.peek(s, 1)).startsWith("tick")).toBe(true);
    await p.interrupt(s);
    expect(await p.waitTurn(s, id, 10_000)).toMatchObject({ stopReason: "cancelled" });
    expect(await p.waitTurn(s, queued, 10_000)).toMatchObject({
      reply: "echo: after",
      stopReason: "end_turn",
    });
  });

  it("a crash mid-turn ends the turn with an error; exit status kept; prompts then fail clearly", async () => {
    const s = await session();
    const id = await p.prompt(s, "crash");
    expect((await p.waitTurn(s, id, 10_000))?.error).toMatch(
      /the agent ended during the turn \(exit code 3\)/,
    );
    await expect.poll(() => p.isRunning(s)).toBe(false);
    expect((await p.lastExit(s))?.code).toBe(3);
    await expect(p.prompt(s, "hello?")).rejects.toThrow(/exited/);
  });

  it("authentication: the auth methods are the pending interaction; answering one signs in", async () => {
    const s = await session({ ACP_TEST_AUTH: "1" });
    expect((await p.acpStatus(s))?.state).toBe("needs_auth");
    expect(await p.pending(s)).toMatchObject({ kind: "authentication", options: ["test-login"] });
    await expect(p.prompt(s, "hi")).rejects.toThrow(/needs authentication \(auth methods: test-login\)/);
    // `approval: allow-all` does not try to "approve" it: it is left to the operator.
    const store = openMemoryStore({ singleTenant: true });
    const [out] = await applyApprovalPolicy({
      store,
      providerFor: async () => p,
      policy: "allow-all",
      sessions: [{ name: s, provider: "acp" }],
      announced: new Map(),
    });
    expect(out?.decision).toEqual({ action: "ask", by: "not-an-approval" });
    expect((await store.queryEvents({ session: s })).map((e) => e.type)).toEqual(["interaction.pending"]);
    await store.close();
    expect((await p.acpStatus(s))?.state).toBe("needs_auth");
    await p.respond(s, { action: "test-login" });
    expect((await p.acpStatus(s))?.state).toBe("ready");
    expect(await p.waitTurn(s, await p.prompt(s, "hi"), 10_000)).toMatchObject({ reply: "echo: hi" });
  });

  it("a prompt answered auth_required: a clear turn error, then the auth choice is pending", async () => {
    const s = await session({ ACP_TEST_FAIL_PROMPT: "1" });
    expect((await p.acpStatus(s))?.state).toBe("ready"); // session/new needed no sign-in
    expect(await p.pending(s)).toBeUndefined();
    const t = await p.waitTurn(s, await p.prompt(s, "hi"), 10_000);
    expect(t?.error).toMatch(/needs authentication \(auth methods: test-login\)/);
    expect(t?.stopReason).toBeUndefined();
    expect(await p.pending(s)).toMatchObject({ kind: "authentication", options: ["test-login"] });
    expect(await p.waitForIdle(s, 5_000)).toBe("idle");
    await expect(p.prompt(s, "again")).rejects.toMatchObject({ code: "GC_NUDGE_NOT_DELIVERED" });
    await p.respond(s, { action: "test-login" });
    expect(await p.waitTurn(s, await p.prompt(s, "hi"), 10_000)).toMatchObject({ reply: "echo: hi" });
  });

  it("session.acp.mcp_servers reach session/new in ACP's shape", async () => {
    const s = await session();
    const t = await p.waitTurn(s, await p.prompt(s, "mcp"), 10_000);
    expect(JSON.parse(String(t?.reply).replace(/^mcp: /, ""))).toEqual([
      { name: "files", command: "/usr/bin/true", args: ["--x"], env: [{ name: "A", value: "1" }] },
    ]);
  });

  it("attach is unsupported; raw keys other than C-c, Escape and Enter are refused", async () => {
    const s = await session();
    await expect(p.attach(s)).rejects.toMatchObject({ code: "GC_UNSUPPORTED" });
    await expect(p.sendKeys(s, ["Down"])).rejects.toThrow(/no raw key/);
  });
});
