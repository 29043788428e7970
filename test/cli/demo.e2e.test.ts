/**
 * The README's first command runs the demo city (config.example.yaml) from the repository
 * root: `gc --config config.example.yaml start`, `status`, `stop`. This runs that file with
 * the built gc in a temporary directory standing in for the checkout, and checks the demo
 * writes nothing there but its state dir (`.gc/`) and its work dirs under `demo-work/`,
 * which the repository's .gitignore covers — running the demo leaves `git status` clean.
 * The file is copied verbatim: two checkouts run it side by side (each city has its own
 * identity and so its own tmux server, whatever the name).
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
  it("config.example.yaml starts in two checkouts side by side, reports its sessions and stops, writing only .gc/ and git-ignored demo-work/", {
    timeout: 300_000,
  }, async () => {
    const text = readFileSync(join(REPO, "config.example.yaml"), "utf8");
    const checkouts = [0, 1].map(() => realpathSync(mkdtempSync(join(tmpdir(), "gc-demo-"))));
    const gcIn = (dir: string, ...args: string[]) =>
      runGc(["--config", "config.example.yaml", ...args], { cwd: dir, timeoutMs: 180_000 });
    onTestFinished(async () => {
      for (const dir of checkouts) {
        await gcIn(dir, "stop");
        rmSync(dir, { recursive: true, force: true });
      }
    });
    for (const dir of checkouts) writeFileSync(join(dir, "config.example.yaml"), text);

    for (const dir of checkouts) {
      const started = await gcIn(dir, "start");
      expect(started.stderr).toBe("");
      expect(started.code).toBe(0);
    }
    for (const dir of checkouts) {
      const st = await gcIn(dir, "status", "--json");
      const sessions = (JSON.parse(st.stdout) as { sessions: { name: string; running: boolean }[] }).sessions;
      expect(sessions.map((s) => s.name).sort()).toEqual([
        "mayor",
        "reviewer",
        "shell",
        "worker-1",
        "worker-2",
      ]);
      // Each checkout runs its own: the second start did not collide with the first.
      expect(sessions.find((s) => s.name === "shell")?.running).toBe(true);
    }
    for (const dir of checkouts) expect((await gcIn(dir, "stop")).code).toBe(0);

    for (const dir of checkouts) {
      expect(readdirSync(dir).sort()).toEqual([".gc", "config.example.yaml", "demo-work"]);
      expect(readdirSync(join(dir, "demo-work")).sort()).toEqual(["mayor", "workers"]);
    }
    // In the checkout these are ignored: `git status` stays clean after the demo.
    for (const path of ["demo-work/mayor/live.txt", "demo-work/workers/shell/x", ".gc/state.db"]) {
      expect(spawnSync("git", ["check-ignore", "-q", path], { cwd: REPO }).status).toBe(0);
    }
  });
});
