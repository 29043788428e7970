/**
 * The provider conformance suite on the docker provider, through the built CLI exactly as
 * the acceptance states it: `gc conformance docker --json` against a real engine (the target
 * starts a private dockerd and stops it afterwards). Cases run four at a time: each one
 * starts containers, and container starts dominate the time.
 */
import { describe, expect, it } from "vitest";
import type { ConformanceReport } from "../../conformance/harness.js";
import { runGc } from "../support/city.js";
import { DOCKER_SKIP } from "../support/docker.js";

describe.skipIf(DOCKER_SKIP !== undefined)(
  `docker: provider conformance${DOCKER_SKIP ? ` (skipped: ${DOCKER_SKIP})` : ""}`,
  () => {
    it("gc conformance docker --json: 0 failed, at least 65 passed", { timeout: 900_000 }, async () => {
      const r = await runGc(["conformance", "docker", "--json", "--concurrency", "4"], {
        env: { DOCKER_HOST: "", GC_TEST_DOCKER_HOST: "" },
        timeoutMs: 880_000,
      });
      const report = JSON.parse(r.stdout) as ConformanceReport;
      const failed = report.cases.filter((c) => c.status === "failed").map((c) => `${c.id}: ${c.error}`);
      expect(failed).toEqual([]);
      expect(report.failed).toBe(0);
      expect(report.passed).toBeGreaterThanOrEqual(65);
      expect(r.code).toBe(0);
      // Only capabilities Docker truly lacks here may skip (no exit status of the program).
      expect(report.cases.filter((c) => c.status === "skipped").map((c) => c.id)).toEqual(["exit.status"]);
    });
  },
);
