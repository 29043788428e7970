import { setTimeout as sleep } from "node:timers/promises";
import pty from "@lydell/node-pty";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TmuxProvider } from "../../../internal/runtime/tmux/index.js";
import { attachChildArgs } from "../../support/attach.js";
import { until } from "../../support/until.js";
import { HAS_TMUX, type TmuxFixture, tmuxFixture } from "./helpers.js";

describe.skipIf(!HAS_TMUX)("TmuxProvider.attach in a real terminal", () => {
  let fx: TmuxFixture;
  let p: TmuxProvider;
  const city = `attach-${process.pid}`;
  beforeEach(async () => {
    fx = await tmuxFixture();
    p = fx.provider({}, city);
  });
  afterEach(async () => {
    await fx.cleanup();
  });

  it("attach: shows the session's screen, detaches on C-b d, and the session keeps running", async () => {
    await p.start("att.1", {
      command: "echo HELLO-FROM-SESSION; exec cat",
      workDir: await fx.dir(),
      env: {},
    });
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "TMUX") env[k] = v;
    const term = pty.spawn(
      process.execPath,
      attachChildArgs({
        provider: "tmux",
        city,
        cityDir: fx.root,
        session: "att.1",
        settings: { socket: fx.socket },
      }),
      {
        name: "xterm-256color",
        cols: 100,
        rows: 30,
        cwd: fx.root,
        env: { ...env, TERM: "xterm-256color" },
      },
    );
    let screen = "";
    term.onData((d) => {
      screen += d;
    });
    const exited = new Promise<{ exitCode: number }>((resolve) => term.onExit(resolve));
    try {
      await until("the session's screen in the terminal", () => screen.includes("HELLO-FROM-SESSION"));
      await until("tmux to count the client", () => p.isAttached("att.1"));
      term.write("\x02d"); // the tmux prefix (C-b), then d: detach
      const { exitCode } = await exited;
      expect(screen).toContain("GC-ATTACH-RETURNED");
      expect(exitCode).toBe(0);
      expect(await p.isRunning("att.1")).toBe(true);
      expect(await p.isAttached("att.1")).toBe(false);
      // Still the same program: it reads what we nudge.
      await p.nudge("att.1", "still here");
      await until("the nudge on screen", async () => (await p.peek("att.1", 10)).includes("still here"));
    } finally {
      term.kill();
    }
  });

  it("attach: rejects with SessionNotFoundError for a missing session", async () => {
    await expect(p.attach("nope")).rejects.toMatchObject({ code: "GC_SESSION_NOT_FOUND" });
  });
});
