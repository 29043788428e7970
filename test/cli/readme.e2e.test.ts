/**
 * The README's "Using it" walkthrough, run verbatim with bash against `gc init`'s city, with
 * `gc` on PATH the way `npm link` puts it there (a symlink to the built CLI).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { defaultSocketName } from "../../internal/runtime/identity.js";
import { GC_BIN, runGc, storedCityId } from "../support/city.js";

const hasPython = spawnSync("python3", ["-V"]).status === 0;

/** The shell block after the `<!-- readme-walkthrough -->` marker. Pure. */
function walkthrough(readme: string): string {
  const at = readme.indexOf("<!-- readme-walkthrough -->");
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (at < 0 || !m?.[1]) throw new Error("README has no readme-walkthrough block");
  return m[1];
}

describe.skipIf(!hasPython)("README", () => {
  it("readme: the 'Using it' walkthrough runs verbatim on gc init's city", { timeout: 300_000 }, async () => {
    const block = walkthrough(readFileSync(new URL("../../README.md", import.meta.url), "utf8"));
    expect(block).toContain("gc init mycity");
    const work = realpathSync(mkdtempSync(join(tmpdir(), "gc-readme-")));
    const bin = join(work, "bin");
    spawnSync("mkdir", [bin]);
    symlinkSync(GC_BIN, join(bin, "gc")); // what `npm link` does
    const cityDir = join(work, "mycity");
    onTestFinished(async () => {
      await runGc(["--city", cityDir, "stop"], { timeoutMs: 60_000 }).catch(() => undefined);
      spawnSync("tmux", ["-L", defaultSocketName("mycity", storedCityId(cityDir)), "kill-server"], {
        stdio: "ignore",
      });
      rmSync(work, { recursive: true, force: true });
    });
    const r = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      // -x: the failing line is in the output; -e/pipefail: any failing step fails the test.
      const child = spawn("bash", ["-x", "-euo", "pipefail", "-c", block], {
        cwd: work,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}`, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, out }));
    });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain("42"); // gc run repl "print(6*7)"
    expect(r.out).toMatch(/worker-3/); // gc scale worker 3
  });
});
