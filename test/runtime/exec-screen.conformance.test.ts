/**
 * The v1-only reference script (contrib/session-scripts/gc-session-screen) through the real
 * CLI, exactly as a script author runs it: `gc conformance exec:<script> --json` must end with
 * 0 failed and at least 60 passed. Needs GNU screen and jq.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ConformanceReport } from "../../conformance/harness.js";
import { runGc } from "../support/city.js";
import { onPath } from "../support/path.js";

const SCRIPT = "contrib/session-scripts/gc-session-screen";
const REPO = fileURLToPath(new URL("../../", import.meta.url));

describe.skipIf(!onPath("screen") || !onPath("jq"))("exec + gc-session-screen (protocol v1)", () => {
  it("gc conformance exec:contrib/session-scripts/gc-session-screen --json: 0 failed, ≥ 60 passed", {
    timeout: 900_000,
  }, async () => {
    const r = await runGc(["conformance", `exec:${SCRIPT}`, "--json"], { cwd: REPO, timeoutMs: 880_000 });
    let report: ConformanceReport;
    try {
      report = JSON.parse(r.stdout) as ConformanceReport;
    } catch {
      throw new Error(`no JSON report (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    }
    const failed = report.cases.filter((c) => c.status === "failed").map((c) => `${c.id}: ${c.error}`);
    expect(failed, failed.join("\n")).toEqual([]);
    expect(report.failed).toBe(0);
    expect(report.passed).toBeGreaterThanOrEqual(60);
    // What a v1 script cannot be graded on is skipped with a reason, never failed.
    for (const c of report.cases.filter((x) => x.status === "skipped")) expect(c.error, c.id).toBeTruthy();
    expect(r.code).toBe(0);
  });
});
