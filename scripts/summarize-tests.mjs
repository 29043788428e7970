// Prints "N passed, N failed" from vitest's JSON report (the line CI reads).
// Exits 1 when the report is missing or any test failed.
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? "test-results.json";
let report;
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch (e) {
  console.log(`no test report at ${file}: ${e.message}`);
  console.log("0 passed, 1 failed");
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
// A file that failed without any failed test (an import or setup error) counts as one failure.
const brokenFiles = (report.testResults ?? []).filter(
  (f) => f.status === "failed" && !(f.assertionResults ?? []).some((a) => a.status === "failed"),
).length;
const failed = (report.numFailedTests ?? 0) + brokenFiles;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || report.success === false ? 1 : 0);
