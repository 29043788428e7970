/**
 * Idle waits driven by tmux's `%output` notifications (tmux/pane.ts OutputWatch): the quiet
 * period is measured from the session's last output, and the screen is read only to confirm.
 * Every read goes through the provider's control client, so the tests count them there: a
 * session printing nothing costs a handful of reads however long the wait, not one per poll.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { probeIdle } from "../../../internal/reconcile/nudge-delivery.js";
import type { TmuxProvider } from "../../../internal/runtime/tmux/index.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

describe.skipIf(!HAS_TMUX)("idle waits from %output notifications (tmux)", () => {
  let fx: TmuxFixture;
  let p: TmuxProvider;
  beforeEach(async () => {
    fx = await tmuxFixture();
    p = fx.provider({ idleQuietMs: 300 });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await fx.cleanup();
  });

  /** Counts the screen reads (`capture-pane`, alone or in a command list) on the provider's client. */
  function countReads(): () => number {
    let n = 0;
    const has = (argv: readonly string[]) => argv[0] === "capture-pane";
    const list = p.control.commandList.bind(p.control);
    const one = p.control.command.bind(p.control);
    vi.spyOn(p.control, "commandList").mockImplementation((argvs, o) => {
      if (argvs.some(has)) n++;
      return list(argvs, o);
    });
    vi.spyOn(p.control, "command").mockImplementation((argv, o) => {
      if (has(argv)) n++;
      return one(argv, o);
    });
    return () => n;
  }

  async function started(name: string, script: string, marker: string): Promise<void> {
    await p.start(name, { command: script, workDir: await fx.dir(), env: {} });
    await expect.poll(() => p.peek(name, 5), { timeout: 10_000 }).toContain(marker);
  }

  it("a quiet session: idle after the quiet period, with O(1) screen reads", async () => {
    await started("quiet", "echo QUIET-READY; exec sleep 1000", "QUIET-READY");
    const reads = countReads();
    expect(await p.waitForIdle("quiet", 10_000)).toBe("idle");
    // First read, the read confirming the quiet period, at most one more (the death
    // subscription's first report): polling every 100 ms would be ≥ 3.
    expect(reads()).toBeLessThanOrEqual(3);
  });

  it("a busy screen printing nothing for 3 s: timeout after O(1) screen reads, not one per 100 ms", async () => {
    await started("busy", "echo 'working (esc to interrupt)'; exec sleep 1000", "esc to interrupt");
    const reads = countReads();
    expect(await p.waitForIdle("busy", 3_000)).toBe("timeout");
    expect(reads()).toBeLessThanOrEqual(4);
  });

  it("output keeps the wait waiting; idle only once the output stopped for the quiet period", async () => {
    await started(
      "chatty",
      "echo CHATTY-START; i=0; while [ $i -lt 12 ]; do i=$((i+1)); echo tick-$i; sleep 0.1; done; echo CHATTY-DONE; exec sleep 1000",
      "CHATTY-START",
    );
    expect(await p.waitForIdle("chatty", 20_000)).toBe("idle");
    expect(await p.peek("chatty", 3)).toContain("CHATTY-DONE");
  });

  it("a busy session whose program dies during the wait: gone, long before the timeout", async () => {
    await started("dies", "echo 'working (esc to interrupt)'; sleep 2; exit 3", "esc to interrupt");
    const t0 = Date.now();
    expect(await p.waitForIdle("dies", 30_000)).toBe("gone");
    expect(Date.now() - t0).toBeLessThan(30_000);
  });

  it("the wait's watcher is not an attached terminal", async () => {
    await started("watched", "echo 'working (esc to interrupt)'; exec sleep 1000", "esc to interrupt");
    const waiting = p.waitForIdle("watched", 3_000);
    // The watcher: a control client in the session itself (the provider's own sits in the keeper).
    const watchers = async () =>
      (await fx.tmux("list-clients", "-F", "#{client_control_mode}|#{session_name}")).stdout
        .split("\n")
        .filter((l) => l.startsWith("1|") && !l.endsWith("|_gc_keeper")).length;
    await expect.poll(watchers).toBe(1);
    expect(await p.isAttached("watched")).toBe(false);
    expect((await p.snapshot("watched")).map((s) => s.attached)).toEqual([false]);
    expect(await waiting).toBe("timeout");
    // Closed with the wait: no client is left behind.
    await expect.poll(watchers).toBe(0);
  });

  it("probeIdle (gc run's turn end, when-idle nudges): a busy screen printing nothing costs O(1) reads", async () => {
    await started("probe", "echo 'working (esc to interrupt)'; exec sleep 1000", "esc to interrupt");
    const reads = countReads();
    expect(await probeIdle(p, "probe", { boundMs: 3_000 })).toBe("busy");
    // Each probe round reads the screen twice (pending + peek) plus waitForIdle's reads; the
    // 150 ms poll of before would be ≥ 40.
    expect(reads()).toBeLessThanOrEqual(8);
  });

  it("probeIdle: a bare ready prompt is idle after two reads of the same screen", async () => {
    await started("prompt", "printf 'READY-P> '; exec sleep 1000", "READY-P>");
    expect(await probeIdle(p, "prompt", { readyPromptPrefix: "READY-P> ", boundMs: 5_000 })).toBe("idle");
  });
});
