/**
 * "This test needs tool X": the one way tests find out whether a program they drive is
 * installed here. A missing tool is never a silent pass: the first time it is asked for, the
 * run's output says which tool is missing and that the tests needing it are skipped, and
 * {@link describeNeeding} names the reason in the skipped suite's title.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { describe } from "vitest";

const found = new Map<string, boolean>();

/** True when an executable `tool` is on PATH (cached; says so once when it is not). */
export function has(tool: string): boolean {
  let ok = found.get(tool);
  if (ok === undefined) {
    ok = (process.env.PATH ?? "").split(delimiter).some((dir) => {
      try {
        accessSync(join(dir || ".", tool), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    found.set(tool, ok);
    if (!ok) console.warn(`tests needing ${tool} are skipped: ${tool} is not on PATH`);
  }
  return ok;
}

/** Why a test needing `tools` cannot run here, or `undefined` when every one is on PATH. */
export function needs(...tools: string[]): string | undefined {
  const missing = tools.filter((t) => !has(t));
  return missing.length > 0 ? `needs ${missing.join(", ")} on PATH` : undefined;
}

/** `describe(name, fn)` when every tool is here, else the suite skipped with the reason in its title. */
export function describeNeeding(tools: readonly string[], name: string, fn: () => void): void {
  const why = needs(...tools);
  if (why === undefined) describe(name, fn);
  else describe.skip(`${name} (skipped: ${why})`, fn);
}
