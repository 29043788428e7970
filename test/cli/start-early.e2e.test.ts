/**
 * `gc start` launches the background controller before it reads the city file (the
 * controller's boot is the longest step before the first session starts) and abandons it when
 * it refuses the file: a refused start leaves nothing behind — no `.gc` in a new city, no
 * log in an existing one, no controller process.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { ended, readArgv, readProcessTable } from "../../internal/proc/process-table.js";
import { HAS_TMUX } from "../runtime/tmux/helpers.js";
import { makeCity, runGc } from "../support/city.js";

/** Pids of live controller processes (`… start --foreground`) whose argv names `dir`. */
async function controllersOf(dir: string): Promise<number[]> {
  const out: number[] = [];
  for (const p of await readProcessTable()) {
    if (ended(p)) continue;
    const argv = await readArgv(p.pid);
    if (argv?.includes(dir) && argv.includes("--foreground")) out.push(p.pid);
  }
  return out;
}

const INVALID = "workspace:\n  name: @NAME@\nagents: not-a-list\n";

describe("gc start: the early controller of a refused start leaves nothing behind", () => {
  it("a new city with an invalid file: the error, no .gc, no controller", async () => {
    const city = makeCity(INVALID);
    const r = await city.gc(["start"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/agents/);
    expect(existsSync(join(city.dir, ".gc"))).toBe(false);
    expect(await controllersOf(city.dir)).toEqual([]);
  });

  it("an existing city's .gc keeps what it held and gets no controller log", async () => {
    const city = makeCity(INVALID);
    mkdirSync(join(city.dir, ".gc"), { mode: 0o700 });
    writeFileSync(join(city.dir, ".gc", "keep"), "x");
    const r = await city.gc(["start"]);
    expect(r.code).not.toBe(0);
    expect(readdirSync(join(city.dir, ".gc"))).toEqual(["keep"]);
    expect(await controllersOf(city.dir)).toEqual([]);
  });

  it("a directory without a city file: the error, nothing created", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-nocity-")));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const r = await runGc(["--city", dir, "start"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("does not exist");
    expect(readdirSync(dir)).toEqual([]);
  });

  it.skipIf(!HAS_TMUX)("a valid new city starts, with one controller, under a random city id", async () => {
    const city = makeCity(
      "workspace:\n  name: @NAME@\nsession:\n  provider: tmux\nagents:\n  - name: a\n    start_command: exec sleep 1000\n",
    );
    const r = await city.gc(["start"]);
    expect(r.code, r.stderr).toBe(0);
    const pid = Number(readFileSync(join(city.dir, ".gc", "controller.pid"), "utf8").trim());
    expect(r.stdout).toContain(`controller started (pid ${pid})`);
    expect(await controllersOf(city.dir)).toEqual([pid]);
    const status = await city.gc(["status", "--json"]);
    expect(
      JSON.parse(status.stdout).sessions.map((s: { name: string; state: string }) => [s.name, s.state]),
    ).toEqual([["a", "running"]]);
  });
});
