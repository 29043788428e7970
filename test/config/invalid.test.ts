/**
 * The broken-config corpus: every test/fixtures/configs/invalid/<case>.yaml must fail to
 * load with exactly the issues in <case>.expect (`file:line:col: path: message`, paths
 * relative to the corpus directory). The CLI test runs the same corpus through the binary.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, formatConfigIssue } from "../../internal/base/errors.js";
import { loadCity } from "../../internal/config/load.js";
import { expectedIssues, INVALID_CASES, INVALID_DIR } from "./corpus.js";

async function issuesOf(name: string): Promise<string[]> {
  try {
    await loadCity({
      configFile: `${INVALID_DIR}/${name}.yaml`,
      env: { PATH: "/nonexistent" },
      lookup: async () => undefined,
    });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.issues.map((i) => formatConfigIssue(i).replaceAll(`${INVALID_DIR}/`, ""));
  }
  return [];
}

describe("invalid config corpus", () => {
  it("corpus: holds at least 30 cases, each with an .expect file naming file:line:col", () => {
    expect(INVALID_CASES.length).toBeGreaterThanOrEqual(30);
    for (const name of INVALID_CASES) {
      for (const line of expectedIssues(name)) expect(line).toMatch(/^[\w./-]+\.(yaml|md):\d+:\d+: /);
    }
  });

  it.each(INVALID_CASES)("loadCity: %s is rejected with exactly the expected issues", async (name) => {
    expect(await issuesOf(name)).toEqual(expectedIssues(name));
  });

  it("loadCity: reports every problem of a file at once, in file order", async () => {
    const issues = await issuesOf("many-problems-at-once");
    expect(issues).toHaveLength(5);
    const lines = issues.map((i) => Number(i.split(":")[1]));
    expect(lines).toEqual([...lines].sort((a, b) => a - b));
  });
});
