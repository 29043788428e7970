/**
 * End-to-end: `gc exec` on a command cut short — past --timeout, or by Ctrl-C — still prints
 * what the command printed until then, verbatim (quotes, `$(…)`, unicode, a line that looks
 * like gc's markers), stdout to stdout and stderr to stderr, with none of the exec-state
 * wrapper's markers or snapshots; the cut command's cd/export are not kept; --json carries
 * the partial output too; the exit codes stay 125 (timeout) and 130 (interrupted).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GC_BIN, type GcResult, makeCity, type TestCity, until } from "../support/city.js";

const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

/** What the cut command prints: shell-hostile text, unicode, and a line shaped like a marker. */
const OUT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, printed verbatim
  "a'b\"c $(touch pwned) `id` ${HOME} ; | & \\ ü ✓ 日本 🙂\ngc-exec-0123456789abcdef01234567:E\nlast line\n";
const ERR = "warn: 'x' \"y\" $(z) — ß 🚧 (no newline)";

/** Prints OUT and ERR from files, changes cwd and env, marks `ready`, then runs until killed. */
const CUT_SCRIPT = 'cd /; export CUT=1; cd "$OLDPWD"; cat out.txt; cat err.txt >&2; : > ready; sleep 60\n';

function cityYaml(provider: string): string {
  return `workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
`;
}

/** Starts the city's session; writes the script and its output files into the session's work dir. */
async function prepared(city: TestCity): Promise<string> {
  const r = await city.gc(["start", "--once"]);
  if (r.code !== 0) throw new Error(`gc start --once failed: ${r.stdout}\n${r.stderr}`);
  const pwd = await city.gc(["exec", "a", "--raw", "--", "pwd"]);
  expect(pwd.code, pwd.stderr).toBe(0);
  const dir = pwd.stdout.trim();
  writeFileSync(join(dir, "out.txt"), OUT);
  writeFileSync(join(dir, "err.txt"), ERR);
  writeFileSync(join(dir, "cut.sh"), CUT_SCRIPT);
  // Shell state to restore: from now on every command runs wrapped (exec-state.ts).
  expect((await city.gc(["exec", "a", "--", "export", "KEEP=1"])).code).toBe(0);
  return dir;
}

/** The shell state after the cut: still KEEP=1 only, in the session's own work dir. */
async function expectStateUnchanged(city: TestCity, dir: string): Promise<void> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
  const r = await city.gc(["exec", "a", "--", "sh", "-c", 'echo "$PWD ${CUT-unset} $KEEP"']);
  expect(r.stdout).toBe(`${dir} unset 1\n`);
}

const providers = [...(hasTmux ? ["tmux"] : []), "subprocess"];

describe.each(providers)("gc exec keeps a cut command's output (%s)", (provider) => {
  it("--timeout: partial stdout and stderr verbatim, then the reason; exit 125; no state kept", async () => {
    const city = makeCity(cityYaml(provider));
    const dir = await prepared(city);
    const r = await city.gc(["exec", "a", "--timeout", "3s", "--", "source", "./cut.sh"]);
    expect(r.code, r.stderr).toBe(125);
    expect(r.stdout).toBe(OUT);
    expect(r.stderr).toMatch(/^warn: .* \(no newline\)\ngc: .*timed out after 3000 ms\n$/);
    expect(r.stderr.startsWith(`${ERR}\n`)).toBe(true);
    expect(existsSync(join(dir, "pwned"))).toBe(false);
    await expectStateUnchanged(city, dir);
  });

  it("--timeout --json: the report carries the partial output; the error stays on stderr", async () => {
    const city = makeCity(cityYaml(provider));
    const dir = await prepared(city);
    const wrapped = await city.gc(["exec", "a", "--timeout", "3s", "--json", "--", "source", "./cut.sh"]);
    expect(wrapped.code, wrapped.stderr).toBe(125);
    expect(JSON.parse(wrapped.stdout)).toEqual({
      session: "a",
      exitCode: null,
      cut: "timeout",
      stdout: OUT,
      stderr: ERR,
      wrapped: true,
    });
    expect(JSON.parse(wrapped.stderr)).toMatchObject({ error: { code: "GC_TIMEOUT" } });
    const raw = await city.gc(["exec", "a", "--timeout", "3s", "--raw", "--json", "--", "sh", "./cut.sh"]);
    expect(raw.code, raw.stderr).toBe(125);
    expect(JSON.parse(raw.stdout)).toMatchObject({
      exitCode: null,
      cut: "timeout",
      stdout: OUT,
      stderr: ERR,
    });
    await expectStateUnchanged(city, dir);
  });

  it("Ctrl-C: partial stdout and stderr verbatim, then `interrupted`; exit 130; no state kept", async () => {
    const city = makeCity(cityYaml(provider));
    const dir = await prepared(city);
    const child = spawn(
      process.execPath,
      [GC_BIN, "--city", city.dir, "exec", "a", "--", "source", "./cut.sh"],
      {
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const done = new Promise<GcResult>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    try {
      await until("the command to print", () => existsSync(join(dir, "ready")));
      child.kill("SIGINT");
      const r = await done;
      expect(r.code, r.stderr).toBe(130);
      expect(r.stdout).toBe(OUT);
      expect(r.stderr).toBe(`${ERR}\ngc exec: interrupted\n`);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    await expectStateUnchanged(city, dir);
  });
});
