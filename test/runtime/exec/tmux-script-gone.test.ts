/**
 * The reference tmux script when a session (or the whole server) is gone between two of its
 * tmux calls: every operation answers per the protocol ("false", exit 3, or nothing to list),
 * never a generic failure. The state that made CI fail is reproduced exactly: a server of the
 * script's own socket that is still up but has no session left, where tmux answers every
 * `-t` lookup with "no current target" (what a client sees in the moment after the last
 * session's program exited, before the server exits).
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { onPath } from "../../support/path.js";
import { TMUX_SCRIPT } from "./mock.js";

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

function script(env: NodeJS.ProcessEnv, args: string[], stdin = ""): Promise<Out> {
  return new Promise((resolve) => {
    const child = execFile(
      "bash",
      [TMUX_SCRIPT, ...args],
      { env, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(stdin);
  });
}

function tmux(sock: string, args: string[]): Promise<Out> {
  return new Promise((resolve) => {
    execFile("tmux", ["-S", sock, "-f", "/dev/null", ...args], { timeout: 10_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? 1 : 0, stdout, stderr });
    });
  });
}

describe.skipIf(!onPath("tmux") || !onPath("jq"))("gc-session-tmux: a session gone mid-operation", () => {
  it("on a server with no session left ('no current target') every operation reads as not found", async () => {
    const state = await mkdtemp(join(tmpdir(), "gcgone-"));
    const sock = join(state, "tmux.sock");
    onTestFinished(async () => {
      await tmux(sock, ["kill-server"]);
      await rm(state, { recursive: true, force: true });
    });
    // A server of the script's socket that outlives its last session.
    const up = await tmux(sock, [
      "new-session",
      "-d",
      "-s",
      "seed",
      "sleep 600",
      ";",
      "set",
      "-g",
      "exit-empty",
      "off",
    ]);
    expect(up.code, up.stderr).toBe(0);
    expect((await tmux(sock, ["kill-session", "-t", "=seed"])).code).toBe(0);
    // The precondition: tmux itself now answers a targeted lookup with "no current target".
    const raw = await tmux(sock, ["list-panes", "-s", "-t", "=x:"]);
    expect(raw.stderr).toMatch(/no current target/);

    const env = { ...process.env, GC_EXEC_STATE_DIR: state, GC_CITY: "gone" };
    const name = "ex.gone-1";
    const expectations: [string[], string, number, string?][] = [
      [["is-running", name], "", 0, "false"],
      [["process-alive", name], "sleep\n", 0, "false"],
      [["stop", name], "", 0],
      [["list-running", "ex"], "", 0, ""],
      [["interrupt", name], "", 3],
      [["is-attached", name], "", 3],
      [["nudge", name], "hello", 3],
      [["send-keys", name, "Enter"], "", 3],
      [["peek", name, "10"], "", 3],
      [["get-last-activity", name], "", 3],
      [["clear-scrollback", name], "", 3],
      [["set-meta", name, "k"], "v", 3],
      [["get-meta", name, "k"], "", 3],
      [["remove-meta", name, "k"], "", 3],
      [["copy-to", name, "/etc/hostname", "x"], "", 3],
      [["copy-from", name, "x"], "", 3],
      [["run-live", name], "{}", 3],
    ];
    for (const [args, stdin, code, stdout] of expectations) {
      const r = await script(env, args, stdin);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code, stderr: expect.any(String) });
      if (stdout !== undefined) expect(r.stdout.trim(), args.join(" ")).toBe(stdout);
    }
  });
});
