/**
 * Vitest global setup: builds nothing, but checks the CLI was built when CLI tests need it,
 * so a missing `npm run build` fails loudly instead of as a confusing spawn error.
 */
import { existsSync } from "node:fs";

export function setup(): void {
  if (!existsSync(new URL("../dist/cmd/gc/main.js", import.meta.url))) {
    throw new Error("dist/cmd/gc/main.js is missing: run `npm run build` before the tests");
  }
}
