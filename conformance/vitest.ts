/**
 * Registers the provider conformance cases as vitest tests: one `it` per case, skipped at
 * run time when the provider lacks a capability the case requires.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import type { ConformanceCase, ConformanceTarget } from "./harness.js";
import { runCase } from "./harness.js";
import { PROVIDER_CASES } from "./provider-cases.js";

/** Describes `label: provider conformance` with every case run against the target. */
export function describeProviderConformance(
  label: string,
  makeTarget: () => Promise<ConformanceTarget>,
  opts: { cases?: readonly ConformanceCase[]; timeoutMs?: number } = {},
): void {
  describe(`${label}: provider conformance`, { timeout: opts.timeoutMs ?? 90_000 }, () => {
    let target: ConformanceTarget | undefined;
    beforeAll(async () => {
      target = await makeTarget();
    }, 60_000);
    afterAll(async () => {
      await target?.provider.close();
      await target?.cleanup?.();
    }, 60_000);
    for (const c of opts.cases ?? PROVIDER_CASES) {
      it(`${c.title} [${c.id}]`, async (tctx) => {
        if (!target) throw new Error("conformance target was not created");
        const r = await runCase(c, target);
        if (r.status === "skipped") tctx.skip(r.error);
        if (r.status === "failed") throw new Error(r.error);
      });
    }
  });
}
