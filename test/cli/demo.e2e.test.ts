/**
 * The README's first command runs the demo city (config.example.yaml) from the repository
 * root: `gc --config config.example.yaml start`, `status`, `stop`. This runs that file with
 * the built gc in a temporary directory standing in for the checkout, and checks the demo
 * writes nothing there but its state dir (`.gc/`) and its work dirs under `demo-work/`,
 * which the repository's .gitignore covers — running the demo leaves `git status` clean.
 * Only the city name and tmux socket are made unique (tests run concurrently).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { runGc } from "../support/city.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

describe("README demo city", () => {
  it("config.example.yaml starts, reports its sessions and stops, writing only .gc/ and git-ignored demo-work/", {
    timeout: 240_000,
  }, async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-demo-")));
    const unique = `demo${process.pid}`;
    const text = readFileSync(join(REPO, "config.example.yaml"), "utf8")
      .replace(/^ {2}name: demo\b/m, `  name: ${unique}`)
      .replace(/^ {4}socket: gc-demo\b/m, `    socket: gc-${unique}`);
    expect(text).toContain(`name: ${unique}`);
    expect(text).toContain(`socket: gc-${unique}`);
    writeFileSync(join(dir, "config.example.yaml"), text);
    const gc = (...args: string[]) =>
      runGc(["--config", "config.example.yaml", ...args], { cwd: dir, timeoutMs: 180_000 });
    onTestFinished(async () => {
      await gc("stop");
      rmSync(dir, { recursive: true, force: true });
    });

    const started = await gc("start");
    expect(started.stderr).toBe("");
    expect(started.code).toBe(0);
    const st = await gc("status", "--json");
    const names = (JSON.parse(st.stdout) as { sessions: { name: string }[] }).sessions.map((s) => s.name);
    expect(names.sort()).toEqual(["mayor", "reviewer", "shell", "worker-1", "worker-2"]);
    expect((await gc("stop")).code).toBe(0);

    expect(readdirSync(dir).sort()).toEqual([".gc", "config.example.yaml", "demo-work"]);
    expect(readdirSync(join(dir, "demo-work")).sort()).toEqual(["mayor", "workers"]);
    // In the checkout these are ignored: `git status` stays clean after the demo.
    for (const path of ["demo-work/mayor/live.txt", "demo-work/workers/shell/x", ".gc/state.db"]) {
      expect(spawnSync("git", ["check-ignore", "-q", path], { cwd: REPO }).status).toBe(0);
    }
  });
});
