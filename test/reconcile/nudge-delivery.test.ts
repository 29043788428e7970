import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { turnIdleMode } from "../../cmd/gc/commands/run.js";
import { NudgeNotDeliveredError } from "../../internal/base/errors.js";
import {
  atBarePrompt,
  deliverDueNudges,
  NUDGE_RETRY_MAX_MS,
  NUDGE_RETRY_MIN_MS,
  nudgeRetryDelayMs,
  probeIdle,
} from "../../internal/reconcile/nudge-delivery.js";
import { FakeProvider } from "../../internal/runtime/fake.js";
import type { Provider } from "../../internal/runtime/provider.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";
import type { SessionStore } from "../../internal/session/store.js";

const CFG = { command: "python3 -i", workDir: "/tmp", env: {} };

describe("idle probe", () => {
  let p: FakeProvider;
  beforeEach(async () => {
    p = new FakeProvider({ city: "t" });
    await p.start("py", CFG);
  });

  it("atBarePrompt: only an empty prompt on the last line is idle", () => {
    expect(atBarePrompt([">>> print(1)", "1", ">>>"], ">>> ")).toBe(true);
    expect(atBarePrompt([">>> import time; time.sleep(60)"], ">>> ")).toBe(false);
    expect(atBarePrompt([">>>", "output"], ">>> ")).toBe(false);
    expect(atBarePrompt([], ">>> ")).toBe(false);
  });

  it("probeIdle: a bare ready prompt is idle", async () => {
    p.peekOutput.set("py", ">>> 1+1\n2\n>>> ");
    expect(await probeIdle(p, "py", { readyPromptPrefix: ">>> ", boundMs: 5_000, pollMs: 1 })).toBe("idle");
  });

  it("probeIdle: a prompt with a command still running is busy at the bound", async () => {
    p.peekOutput.set("py", ">>> import time; time.sleep(60)");
    expect(await probeIdle(p, "py", { readyPromptPrefix: ">>> ", boundMs: 50, pollMs: 5 })).toBe("busy");
  });

  it("probeIdle: accept() must hold too (the turn visibly started)", async () => {
    p.peekOutput.set("py", ">>>");
    const r = await probeIdle(p, "py", {
      readyPromptPrefix: ">>> ",
      boundMs: 50,
      pollMs: 5,
      accept: () => false,
    });
    expect(r).toBe("busy");
  });

  it("probeIdle: promptOnly never defers to the provider; promptLike accepts a changed prompt once quiet", async () => {
    p.peekOutput.set("py", "$ sleep 5");
    expect(
      await probeIdle(p, "py", { readyPromptPrefix: "$", promptOnly: true, boundMs: 30, pollMs: 5 }),
    ).toBe("busy");
    expect(p.calls.some((c) => c.method === "waitForIdle")).toBe(false);
    p.peekOutput.set("py", "$ cd /tmp\n/tmp $");
    const r = await probeIdle(p, "py", {
      readyPromptPrefix: "$",
      promptOnly: true,
      promptLike: true,
      boundMs: 5_000,
      pollMs: 5,
      quietMs: 20,
    });
    expect(r).toBe("idle");
  });

  it("probeIdle: a full-screen program whose prompt is not the last line is left to the provider", async () => {
    p.peekOutput.set("py", "│ ❯ │\n? for shortcuts");
    expect(await probeIdle(p, "py", { readyPromptPrefix: "❯ ", boundMs: 1_000 })).toBe("idle");
    expect(p.calls.some((c) => c.method === "waitForIdle")).toBe(true);
  });

  it("probeIdle: a pending interaction is never idle", async () => {
    p.peekOutput.set("py", ">>>");
    p.setPending("py", { requestId: "r1", kind: "approval", prompt: "Do you want to proceed?" });
    expect(await probeIdle(p, "py", { readyPromptPrefix: ">>> ", boundMs: 1_000 })).toBe("waiting-for-input");
  });

  it("probeIdle: without a ready prompt the provider's waitForIdle decides", async () => {
    expect(await probeIdle(p, "py", { boundMs: 1_000 })).toBe("idle");
    expect(p.calls.some((c) => c.method === "waitForIdle")).toBe(true);
  });

  it("probeIdle: a missing session is gone", async () => {
    expect(await probeIdle(p, "nope", { readyPromptPrefix: ">>> ", boundMs: 1_000 })).toBe("gone");
  });

  it("probeIdle: rejects with the signal's reason when aborted", async () => {
    p.peekOutput.set("py", ">>> busy");
    const ac = new AbortController();
    const r = probeIdle(p, "py", {
      readyPromptPrefix: ">>> ",
      boundMs: 60_000,
      pollMs: 5,
      signal: ac.signal,
    });
    ac.abort(new Error("stop"));
    await expect(r).rejects.toThrow("stop");
  });

  it("nudgeRetryDelayMs: doubles from the minimum and is capped", () => {
    expect(nudgeRetryDelayMs(1)).toBe(NUDGE_RETRY_MIN_MS);
    expect(nudgeRetryDelayMs(2)).toBe(2 * NUDGE_RETRY_MIN_MS);
    expect(nudgeRetryDelayMs(40)).toBe(NUDGE_RETRY_MAX_MS);
  });
});

describe("deliverDueNudges", () => {
  let p: FakeProvider;
  let store: SessionStore;
  let now: number;
  const deps = (over: Partial<Parameters<typeof deliverDueNudges>[0]> = {}) => ({
    store,
    providerFor: async (): Promise<Provider> => p,
    targetOf: (s: string) => (s === "py" ? { provider: "fake", readyPromptPrefix: ">>> " } : undefined),
    now: () => now,
    idleBoundMs: 30,
    ...over,
  });
  beforeEach(async () => {
    now = Date.now();
    p = new FakeProvider({ city: "t" });
    store = openMemoryStore({ singleTenant: true, now: () => now });
    await p.start("py", CFG);
  });
  afterEach(async () => {
    await store.close();
  });

  it("deliver: an idle session gets the nudge and it is recorded delivered", async () => {
    p.peekOutput.set("py", ">>>");
    const n = await store.enqueueNudge({ session: "py", text: "print('hi')" });
    const r = await deliverDueNudges(deps());
    expect(r.delivered.map((x) => x.id)).toEqual([n.id]);
    expect(p.session("py")?.nudges).toEqual(["print('hi')"]);
    expect((await store.getNudge(n.id))?.state).toBe("delivered");
    const ev = await store.queryEvents({ session: "py", types: ["nudge.delivered"] });
    expect(ev).toHaveLength(1);
  });

  it("deliver: a busy session is an attempt with a reason and a backoff, not a silent skip", async () => {
    p.peekOutput.set("py", ">>> working");
    const n = await store.enqueueNudge({ session: "py", text: "x", maxAttempts: 3 });
    const r = await deliverDueNudges(deps());
    expect(r.failed).toHaveLength(1);
    const stored = await store.getNudge(n.id);
    expect(stored).toMatchObject({ state: "queued", attempts: 1 });
    expect(stored?.lastError).toMatch(/busy/);
    expect(stored?.notBefore).toBe(now + NUDGE_RETRY_MIN_MS);
    expect(r.nextDueAt).toBe(now + NUDGE_RETRY_MIN_MS);
    expect(p.session("py")?.nudges).toEqual([]);
    // Not due yet: nothing is attempted.
    expect((await deliverDueNudges(deps())).failed).toHaveLength(0);
  });

  it("deliver: attempts run out into a dead letter that keeps the last failure", async () => {
    p.peekOutput.set("py", ">>> working");
    const n = await store.enqueueNudge({ session: "py", text: "x", maxAttempts: 2 });
    await deliverDueNudges(deps());
    now += NUDGE_RETRY_MIN_MS;
    await deliverDueNudges(deps());
    const dead = await store.getNudge(n.id);
    expect(dead).toMatchObject({ state: "dead", attempts: 2 });
    expect(dead?.deadReason).toMatch(/attempts/);
    expect(dead?.lastError).toMatch(/busy/);
    expect(await store.queryEvents({ session: "py", types: ["nudge.dead"] })).toHaveLength(1);
  });

  it("deliver: an expired nudge becomes a dead letter with an event", async () => {
    const n = await store.enqueueNudge({ session: "py", text: "x", ttlMs: 10 });
    now += 11;
    const r = await deliverDueNudges(deps());
    expect(r.expired.map((x) => x.id)).toEqual([n.id]);
    expect((await store.getNudge(n.id))?.state).toBe("dead");
    expect(await store.queryEvents({ session: "py", types: ["nudge.dead"] })).toHaveLength(1);
  });

  it("deliver: a session locked by gc run is busy; the lock is never stolen", async () => {
    p.peekOutput.set("py", ">>>");
    const lock = await store.tryLock("py", { purpose: "gc run" });
    try {
      const n = await store.enqueueNudge({ session: "py", text: "x" });
      await deliverDueNudges(deps());
      expect((await store.getNudge(n.id))?.lastError).toMatch(/gc run/);
      expect(p.session("py")?.nudges).toEqual([]);
    } finally {
      await lock.release();
    }
  });

  it("deliver: a stopped session and an unknown session fail with their reason", async () => {
    await p.stop("py");
    const a = await store.enqueueNudge({ session: "py", text: "x" });
    const b = await store.enqueueNudge({ session: "ghost", text: "x" });
    await deliverDueNudges(deps());
    expect((await store.getNudge(a.id))?.lastError).toMatch(/not running/);
    expect((await store.getNudge(b.id))?.lastError).toMatch(/not part of the city/);
  });

  it("deliver: a pending interaction defers the nudge (it would answer the prompt)", async () => {
    p.peekOutput.set("py", ">>>");
    p.setPending("py", { requestId: "r", kind: "approval", prompt: "Proceed?" });
    const n = await store.enqueueNudge({ session: "py", text: "x" });
    await deliverDueNudges(deps());
    expect((await store.getNudge(n.id))?.lastError).toMatch(/waiting for input/);
  });

  it("deliver: a nudge typed but not confirmed is a dead letter, never sent again (at most once)", async () => {
    p.peekOutput.set("py", ">>>");
    const n = await store.enqueueNudge({ session: "py", text: "x", maxAttempts: 5 });
    p.failNext(
      "nudge",
      new NudgeNotDeliveredError("py", "the text is still on the input line", { sent: true }),
    );
    const r = await deliverDueNudges(deps());
    expect(r.failed).toHaveLength(1);
    const stored = await store.getNudge(n.id);
    expect(stored).toMatchObject({ state: "dead", attempts: 1 });
    expect(stored?.deadReason).toMatch(/at most once/);
    now += NUDGE_RETRY_MAX_MS;
    await deliverDueNudges(deps());
    expect(p.calls.filter((c) => c.method === "nudge")).toHaveLength(1);
  });

  it("deliver: a refusal before typing (sent: false) is retried", async () => {
    p.peekOutput.set("py", ">>>");
    const n = await store.enqueueNudge({ session: "py", text: "x", maxAttempts: 5 });
    p.failNext("nudge", new NudgeNotDeliveredError("py", "a menu is waiting for a choice"));
    await deliverDueNudges(deps());
    expect(await store.getNudge(n.id)).toMatchObject({ state: "queued", attempts: 1 });
    now += NUDGE_RETRY_MIN_MS;
    await deliverDueNudges(deps());
    expect(p.session("py")?.nudges).toEqual(["x"]);
  });

  it("deliver: an attempt whose deliverer stopped mid-way (lapsed claim) is never sent again", async () => {
    p.peekOutput.set("py", ">>>");
    const n = await store.enqueueNudge({ session: "py", text: "x" });
    expect((await store.claimNudge("py", { leaseMs: 1_000 }))?.id).toBe(n.id);
    now += 1_000;
    await deliverDueNudges(deps());
    expect(p.session("py")?.nudges).toEqual([]);
    expect((await store.getNudge(n.id))?.state).toBe("dead");
    expect(await store.queryEvents({ session: "py", types: ["nudge.dead"] })).toHaveLength(1);
  });

  it("deliver: one nudge per session per round, in queue order", async () => {
    p.peekOutput.set("py", ">>>");
    await store.enqueueNudge({ session: "py", text: "first" });
    await store.enqueueNudge({ session: "py", text: "second" });
    await deliverDueNudges(deps());
    expect(p.session("py")?.nudges).toEqual(["first"]);
  });
});

describe("turnIdleMode", () => {
  it.each([
    [
      "a REPL idle at its declared prompt: prompt only",
      ">>> ",
      ">>>",
      { readyPromptPrefix: ">>>", promptOnly: true },
    ],
    [
      "a declared prompt that is not last (full-screen agent): the provider decides",
      "❯ ",
      "? for shortcuts",
      {},
    ],
    [
      "an undeclared shell prompt is learned",
      undefined,
      "bash-5.2#",
      { readyPromptPrefix: "bash-5.2#", promptOnly: true, promptLike: true },
    ],
    ["an undeclared screen that ends in output: the provider decides", undefined, "done", {}],
  ] as const)("turnIdleMode: %s", (_what, declared, last, mode) => {
    expect(turnIdleMode(declared, last)).toEqual(mode);
  });
});
