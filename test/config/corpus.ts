/**
 * The broken-config corpus (test/fixtures/configs/invalid): each <case>.yaml has a sibling
 * <case>.expect listing its issues as `file:line:col: path: message`, one per line, with
 * paths relative to the corpus directory. Shared by the loader test and the CLI test.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const INVALID_DIR = fileURLToPath(new URL("../fixtures/configs/invalid", import.meta.url));

export const INVALID_CASES: readonly string[] = readdirSync(INVALID_DIR)
  .filter((f) => f.endsWith(".yaml"))
  .map((f) => f.slice(0, -".yaml".length))
  .sort();

/** The expected issue lines of a corpus case. */
export function expectedIssues(name: string): string[] {
  return readFileSync(`${INVALID_DIR}/${name}.expect`, "utf8").trimEnd().split("\n");
}
