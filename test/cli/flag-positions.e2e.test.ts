/**
 * Global flags go before or after the command, anywhere before `--` (as `gc --help` says):
 * every command is run with `--city DIR` in each documented position and must read DIR as
 * the city (its error names DIR's city file), never refuse the flag.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { COMMANDS } from "../../cmd/gc/registry.js";
import { runGc } from "../support/city.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** An empty directory: no city file, so a command that reads the city names DIR/city.yaml. */
function emptyDir(): string {
  const d = realpathSync(mkdtempSync(join(tmpdir(), "gc-flags-")));
  dirs.push(d);
  return d;
}

/** Arguments of each command (before any `--`) and what follows `--`. */
const ARGS: Record<keyof typeof COMMANDS, { args: string[]; after?: string[] }> = {
  init: { args: [] },
  start: { args: [] },
  stop: { args: [] },
  status: { args: [] },
  reconcile: { args: [] },
  drift: { args: [] },
  scale: { args: ["pool", "2"] },
  peek: { args: ["s"] },
  nudge: { args: ["s", "hello"] },
  attach: { args: ["s"] },
  wait: { args: ["s", "--idle"] },
  run: { args: ["s", "hello"] },
  exec: { args: ["s"], after: ["true"] },
  session: { args: ["list"] },
  dashboard: { args: [] },
  config: { args: ["validate"] },
  conformance: { args: [] },
  completion: { args: ["bash"] },
};

type Position = "before the command" | "after the command" | "after the arguments" | "as --city=DIR";

function argvFor(name: string, pos: Position, dir: string): string[] {
  const { args, after } = ARGS[name as keyof typeof COMMANDS];
  const tail = after ? ["--", ...after] : [];
  switch (pos) {
    case "before the command":
      return ["--city", dir, name, ...args, ...tail];
    case "after the command":
      return [name, "--city", dir, ...args, ...tail];
    case "after the arguments":
      return [name, ...args, "--city", dir, ...tail];
    case "as --city=DIR":
      return [name, ...args, `--city=${dir}`, ...tail];
  }
}

const POSITIONS: Position[] = [
  "before the command",
  "after the command",
  "after the arguments",
  "as --city=DIR",
];

describe("global flags in every documented position", () => {
  const cases = Object.keys(COMMANDS).flatMap((name) => POSITIONS.map((pos) => [name, pos] as const));
  it.concurrent.each(cases)("gc %s: --city %s", async (name, pos) => {
    const dir = emptyDir();
    const r = await runGc(argvFor(name, pos, dir), { timeoutMs: 30_000, env: { GC_CITY: "" } });
    const out = r.stdout + r.stderr;
    expect(out).not.toMatch(/unknown option|unexpected|too many arguments/);
    if (name === "init") {
      expect(r.code).toBe(0);
      expect(existsSync(join(dir, "city.yaml"))).toBe(true);
    } else if (name === "completion") {
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("complete");
    } else if (name === "conformance") {
      // takes no city: the flag is accepted, the missing PROVIDER is what it reports
      expect(out).toContain("expected one PROVIDER");
    } else {
      expect(out).toContain(`${dir}/city.yaml`);
    }
  });
});
