import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  loadShellState,
  needsShell,
  newNonce,
  nextShellState,
  type ShellState,
  saveShellState,
  shellStatePath,
  unwrapCutOutput,
  unwrapOutput,
  wrapArgv,
} from "../../internal/controller/exec-state.js";

const scratch = mkdtempSync(join(tmpdir(), "gc-exec-state-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs argv through the wrapper with a local `sh`, threading the state like `gc exec`. */
function shell() {
  let state: ShellState | undefined;
  return {
    get state() {
      return state;
    },
    run(argv: string[]) {
      const nonce = newNonce();
      const w = wrapArgv(argv, state, nonce);
      const r = spawnSync(w[0]!, w.slice(1), { encoding: "utf8", cwd: scratch });
      const u = unwrapOutput(r.stdout, nonce);
      state = nextShellState(state, u, "inc", 1);
      return { code: r.status, stdout: u.stdout, stderr: r.stderr };
    },
  };
}

describe("exec shell state", () => {
  it("wrap: cd persists into the next call", () => {
    const sh = shell();
    expect(sh.run(["cd", "/tmp"]).code).toBe(0);
    expect(sh.run(["pwd"]).stdout).toBe("/tmp\n");
  });

  it("state: a secret-named export never reaches the state (it lasts one call); others persist", () => {
    const sh = shell();
    sh.run(["export", "API_TOKEN=tok-hidden-123"]);
    sh.run(["export", "PLAIN=visible"]);
    expect(JSON.stringify(sh.state)).not.toContain("tok-hidden-123");
    expect(sh.state?.env.PLAIN).toBe("visible");
  });

  it("wrap: export persists and values are never evaluated by a shell", () => {
    const sh = shell();
    const marker = join(scratch, "pwned");
    sh.run(["export", `X=1 $(touch ${marker}) \`touch ${marker}\``]);
    expect(sh.run(["sh", "-c", 'printf "%s" "$X"']).stdout).toBe(`1 $(touch ${marker}) \`touch ${marker}\``);
    expect(existsSync(marker)).toBe(false);
  });

  it("wrap: unset of an inherited variable persists", () => {
    const sh = shell();
    sh.run(["export", "KEEP=1"]);
    sh.run(["unset", "HOME"]);
    expect(sh.state?.unset).toContain("HOME");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    expect(sh.run(["sh", "-c", 'echo "home=${HOME-unset} keep=$KEEP"']).stdout).toBe("home=unset keep=1\n");
  });

  it("wrap: exit status, stdout without a trailing newline and stderr pass through", () => {
    const sh = shell();
    expect(sh.run(["false"]).code).toBe(1);
    expect(sh.run(["printf", "no newline"]).stdout).toBe("no newline");
    const r = sh.run(["sh", "-c", "echo out; echo err >&2; exit 7"]);
    expect(r).toEqual({ code: 7, stdout: "out\n", stderr: "err\n" });
  });

  it("wrap: a command that ends the shell keeps the previous state", () => {
    const sh = shell();
    sh.run(["cd", "/tmp"]);
    expect(sh.run(["exit", "3"]).code).toBe(3);
    expect(sh.run(["pwd"]).stdout).toBe("/tmp\n");
  });

  it("wrap: output that looks like a marker of another call is kept", () => {
    const sh = shell();
    const fake = `\n${newNonce()}:E\n`;
    expect(sh.run(["printf", "%s", fake]).stdout).toBe(fake);
  });

  it("wrap: source (mapped to `.` for POSIX sh) persists what the file exports", async () => {
    const { writeFileSync } = await import("node:fs");
    const file = join(scratch, "env.sh");
    writeFileSync(file, "export FROM_FILE=yes\ncd /tmp\n");
    const sh = shell();
    expect(sh.run(["source", file]).code).toBe(0);
    expect(sh.run(["sh", "-c", 'echo "$FROM_FILE $(pwd)"']).stdout).toBe("yes /tmp\n");
  });

  it("unwrapCutOutput: a wrapper's stdout cut anywhere yields a prefix of the command's stdout, never the snapshots or markers", () => {
    const nonce = newNonce();
    const cmdOut = "line 1\n$(x) 'q' ü 日本\nlast\n";
    const w = wrapArgv(
      ["printf", "%s", cmdOut],
      { cwd: "/tmp", env: { A: "secret-ish" }, unset: [], incarnation: "i", updatedAt: 1 },
      nonce,
    );
    const full = spawnSync(w[0]!, w.slice(1), { encoding: "utf8", cwd: scratch }).stdout;
    expect(unwrapOutput(full, nonce).stdout).toBe(cmdOut);
    expect(unwrapCutOutput(full, nonce)).toBe(cmdOut);
    for (let i = 0; i <= full.length; i++) {
      const got = unwrapCutOutput(full.slice(0, i), nonce);
      // A cut inside the end marker's fixed start ("\ngc-exec-") cannot be told from the
      // command's own output: at most that much of it is kept, never the random part.
      expect(`${cmdOut}\n${nonce}`.startsWith(got), `cut at ${i}: ${JSON.stringify(got)}`).toBe(true);
      expect(got.length).toBeLessThanOrEqual(cmdOut.length + "\ngc-exec-".length);
      expect(got).not.toContain("secret-ish");
    }
    expect(unwrapCutOutput("/tmp\0A=b\0", nonce)).toBe("");
    // Output that ends like the marker's fixed start is the command's own.
    for (const tail of ["\ng", "\ngc", "\ngc-exec-"]) {
      expect(unwrapCutOutput(`x\n${nonce}:B\nresult: ok${tail}`, nonce)).toBe(`result: ok${tail}`);
    }
  });

  it("needsShell: state builtins and builtins with no program of their own need the shell", () => {
    expect(needsShell(["cd", "/tmp"])).toBe(true);
    expect(needsShell(["export", "X=1"])).toBe(true);
    expect(needsShell(["exit", "3"])).toBe(true);
    expect(needsShell(["umask"])).toBe(true);
    expect(needsShell(["ls"])).toBe(false);
    expect(needsShell(["echo", "exit"])).toBe(false);
  });

  it("exit N in the wrapper shell: its status, and no state change", () => {
    const sh = shell();
    expect(sh.run(["exit", "3"]).code).toBe(3);
    expect(sh.run(["cd", "/tmp"]).code).toBe(0);
    expect(sh.run(["exit", "4"]).code).toBe(4);
    expect(sh.run(["pwd"]).stdout).toBe("/tmp\n");
  });

  it("state file: saved 0600, read back only for the same incarnation, removed when empty", async () => {
    const st: ShellState = { cwd: "/tmp", env: { A: "b" }, unset: [], incarnation: "1:5", updatedAt: 1 };
    await saveShellState(scratch, "s1", st);
    expect(await loadShellState(scratch, "s1", "1:5")).toEqual(st);
    expect(await loadShellState(scratch, "s1", "2:9")).toBeUndefined();
    const { statSync } = await import("node:fs");
    expect(statSync(shellStatePath(scratch, "s1")).mode & 0o777).toBe(0o600);
    await saveShellState(scratch, "s1", { ...st, cwd: undefined, env: {} });
    expect(existsSync(shellStatePath(scratch, "s1"))).toBe(false);
  });
});
