import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ApprovalPolicy,
  applyApprovalPolicy,
  approvalPolicyOf,
  decideApproval,
} from "../../internal/reconcile/approval.js";
import { FakeProvider } from "../../internal/runtime/fake.js";
import type { PendingInteraction, Provider } from "../../internal/runtime/provider.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";
import type { SessionStore } from "../../internal/session/store.js";

const EDIT: PendingInteraction = {
  requestId: "r1",
  kind: "approval",
  prompt: "Do you want to make this edit to a.ts?",
};
const RM: PendingInteraction = { requestId: "r2", kind: "approval", prompt: "Bash command: rm -rf build" };
const MENU: PendingInteraction = { requestId: "r3", kind: "menu", prompt: "Pick a model" };
const PERMISSION: PendingInteraction = { requestId: "r5", kind: "permission", prompt: "Run tests?" };
const SIGN_IN: PendingInteraction = {
  requestId: "r6",
  kind: "dialog",
  prompt: "Choose how you want to use Codex.",
  options: ["Sign in with ChatGPT", "Sign in with Device Code", "Sign in another way"],
  metadata: { source: "screen", dialog: "codex-sign-in" },
};
const KEY_FIELD: PendingInteraction = {
  requestId: "r7",
  kind: "dialog",
  prompt: "Codex needs an API key typed into its key field (attach to the session to enter it)",
  options: [],
  metadata: { source: "screen", dialog: "codex-api-key-field", input: "true" },
};
const OTHER_WAY: PendingInteraction = {
  requestId: "r8",
  kind: "menu",
  prompt: "Sign in another way",
  options: ["Use an OpenAI API key", "Use Amazon Bedrock"],
};
const INVENTED: PendingInteraction = { requestId: "r9", kind: "elicitation", prompt: "Your name?" };
const AUTH: PendingInteraction = {
  requestId: "r4",
  kind: "authentication",
  prompt: "the agent needs authentication",
  options: ["oauth-personal", "gemini-api-key"],
};

describe("approval policy", () => {
  const rules: ApprovalPolicy = {
    rules: [
      { kind: "approval", match: "rm -rf", action: "deny" },
      { kind: "approval", action: "approve" },
    ],
    default: "ask",
  };

  it.each([
    ["allow-all approves a screen approval prompt", "allow-all", EDIT, "approve", "allow-all"],
    ["allow-all approves an ACP permission request", "allow-all", PERMISSION, "approve", "allow-all"],
    ["allow-all never answers a sign-in dialog", "allow-all", SIGN_IN, "ask", "not-an-approval"],
    ["allow-all never answers an API-key field", "allow-all", KEY_FIELD, "ask", "not-an-approval"],
    ["allow-all never answers a sign-in menu", "allow-all", OTHER_WAY, "ask", "not-an-approval"],
    ["allow-all never answers a model menu", "allow-all", MENU, "ask", "not-an-approval"],
    ["allow-all never answers a kind it does not know", "allow-all", INVENTED, "ask", "not-an-approval"],
    [
      "a rule naming the dialog kind never answers a sign-in dialog",
      { rules: [{ kind: "dialog", action: "approve" }], default: "approve" },
      SIGN_IN,
      "ask",
      "not-an-approval",
    ],
    ["deny rules never answer a menu either", { rules: [], default: "deny" }, MENU, "ask", "not-an-approval"],
    ["ask leaves anything", "ask", EDIT, "ask", "ask"],
    ["the first matching rule wins (pattern)", rules, RM, "deny", "rules[0]"],
    ["the first matching rule wins (kind)", rules, EDIT, "approve", "rules[1]"],
    ["no rule matches: the default", rules, PERMISSION, "ask", "default"],
    ["allow-all never answers an authentication choice", "allow-all", AUTH, "ask", "not-an-approval"],
    [
      "a catch-all rule never answers an authentication choice",
      { rules: [{ action: "approve" }], default: "deny" },
      AUTH,
      "ask",
      "not-an-approval",
    ],
    [
      "a rule naming the kind does not either",
      { rules: [{ kind: "authentication", action: "approve" }], default: "approve" },
      AUTH,
      "ask",
      "not-an-approval",
    ],
  ] as const)("decideApproval: %s", (_what, policy, interaction, action, by) => {
    expect(decideApproval(policy, interaction)).toEqual({ action, by });
  });

  it("approvalPolicyOf: absent is allow-all; rules keep their order; bad entries are dropped", () => {
    expect(approvalPolicyOf(undefined)).toBe("allow-all");
    expect(approvalPolicyOf("ask")).toBe("ask");
    expect(
      approvalPolicyOf({
        rules: [{ match: "(", action: "deny" }, { kind: "menu", action: "approve" }, { action: "maybe" }],
        default: "deny",
      }),
    ).toEqual({ rules: [{ kind: "menu", action: "approve" }], default: "deny" });
  });
});

describe("applyApprovalPolicy", () => {
  let p: FakeProvider;
  let store: SessionStore;
  beforeEach(async () => {
    p = new FakeProvider({ city: "t" });
    store = openMemoryStore({ singleTenant: true });
    await p.start("a", { command: "x", workDir: "/tmp", env: {} });
  });
  afterEach(async () => {
    await store.close();
  });
  const run = (policy: ApprovalPolicy, announced = new Map<string, string>()) =>
    applyApprovalPolicy({
      store,
      providerFor: async (): Promise<Provider> => p,
      policy,
      sessions: [
        { name: "a", provider: "fake" },
        { name: "gone", provider: "fake" },
      ],
      announced,
    });

  it("allow-all: answers through the provider and records the decision", async () => {
    p.setPending("a", EDIT);
    const out = await run("allow-all");
    expect(out.map((o) => o.decision.action)).toEqual(["approve"]);
    expect(p.calls.find((c) => c.method === "respond")?.args[0]).toEqual({
      requestId: "r1",
      action: "approve",
    });
    const [ev] = await store.queryEvents({ session: "a", types: ["interaction.responded"] });
    expect(ev?.payload).toMatchObject({
      requestId: "r1",
      action: "approve",
      by: "policy",
      rule: "allow-all",
    });
  });

  it("ask: nothing is answered; the pending prompt is recorded once", async () => {
    p.setPending("a", EDIT);
    const announced = new Map<string, string>();
    await run("ask", announced);
    await run("ask", announced);
    expect(p.calls.some((c) => c.method === "respond")).toBe(false);
    expect(await store.queryEvents({ session: "a", types: ["interaction.pending"] })).toHaveLength(1);
  });

  it("allow-all leaves an authentication choice to the operator: no answer, no failure, pending once", async () => {
    p.setPending("a", AUTH);
    const announced = new Map<string, string>();
    const lines: string[] = [];
    for (let i = 0; i < 2; i++)
      await applyApprovalPolicy({
        store,
        providerFor: async (): Promise<Provider> => p,
        policy: "allow-all",
        sessions: [{ name: "a", provider: "fake" }],
        announced,
        log: (l) => lines.push(l),
      });
    expect(p.calls.some((c) => c.method === "respond")).toBe(false);
    expect(await store.queryEvents({ session: "a", types: ["interaction.respond-failed"] })).toEqual([]);
    const pending = await store.queryEvents({ session: "a", types: ["interaction.pending"] });
    expect(pending.map((e) => e.payload)).toEqual([
      expect.objectContaining({ requestId: "r4", kind: "authentication", rule: "not-an-approval" }),
    ]);
    expect(lines).toEqual(["a is waiting for input: the agent needs authentication"]);
  });

  it("a failed answer is recorded once while the same prompt stays; a new prompt is tried again", async () => {
    const broken: Provider = Object.assign(Object.create(p) as FakeProvider, {
      respond: async () => {
        throw new Error("dialog changed");
      },
    });
    const announced = new Map<string, string>();
    const lines: string[] = [];
    const pass = (policy: ApprovalPolicy = "allow-all") =>
      applyApprovalPolicy({
        store,
        providerFor: async () => broken,
        policy,
        sessions: [{ name: "a", provider: "fake" }],
        announced,
        log: (l) => lines.push(l),
      });
    p.setPending("a", RM);
    const outs = [await pass(), await pass(), await pass()];
    expect(outs.map((o) => [o[0]?.error !== undefined, o[0]?.unchanged])).toEqual([
      [true, undefined],
      [false, true],
      [false, true],
    ]);
    const failed = () => store.queryEvents({ session: "a", types: ["interaction.respond-failed"] });
    expect(await failed()).toHaveLength(1);
    expect(lines).toEqual([
      "approval: could not approve a (approval): dialog changed; not tried again until the prompt changes",
    ]);
    // A policy edit that changes the decision is tried once.
    await pass({ rules: [], default: "deny" });
    await pass({ rules: [], default: "deny" });
    expect((await failed()).map((e) => e.payload.action)).toEqual(["approve", "deny"]);
    // So is a different prompt.
    p.setPending("a", { ...RM, requestId: "r2b" });
    await pass();
    await pass();
    expect(await failed()).toHaveLength(3);
  });

  it("a failed answer is recorded as such and does not stop the step", async () => {
    p.setPending("a", RM);
    const broken: Provider = Object.assign(Object.create(p) as FakeProvider, {
      respond: async () => {
        throw new Error("dialog changed");
      },
    });
    const out = await applyApprovalPolicy({
      store,
      providerFor: async () => broken,
      policy: "allow-all",
      sessions: [{ name: "a", provider: "fake" }],
      announced: new Map(),
    });
    expect(out[0]?.error).toMatch(/dialog changed/);
    expect(await store.queryEvents({ session: "a", types: ["interaction.respond-failed"] })).toHaveLength(1);
  });
});
