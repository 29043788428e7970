/**
 * The provider conformance cases, as data. Every provider (including a user's exec script)
 * must pass every case its capabilities admit. Session programs are POSIX sh so they run in
 * minimal containers too. Far stricter than the reference suite: errors are checked by
 * class/code, and effects are checked where the program can observe them.
 *
 * The cases are kept by group in cases/ (one file each, a table of cases), with the programs
 * they run (cases/programs.ts) and the checks they share (cases/checks.ts); this is their index.
 */

import { DISCOVERY_CASES } from "./cases/discovery.js";
import { IO_CASES } from "./cases/io.js";
import { LIFECYCLE_CASES } from "./cases/lifecycle.js";
import { META_CASES } from "./cases/meta.js";
import { OBSERVATION_CASES } from "./cases/observation.js";
import { STOPPING_CASES } from "./cases/stopping.js";
import type { ConformanceCase } from "./harness.js";

export { EXEC_ALIVE, EXEC_PRINT, EXEC_TREE, LONG, NUDGE_TEXTS } from "./cases/programs.js";

/** Every provider conformance case, in report order. */
export const PROVIDER_CASES: readonly ConformanceCase[] = [
  ...LIFECYCLE_CASES,
  ...STOPPING_CASES,
  ...DISCOVERY_CASES,
  ...META_CASES,
  ...IO_CASES,
  ...OBSERVATION_CASES,
];
