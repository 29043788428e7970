import { describe, it } from "vitest";
import {
  memoryStoreTarget,
  runStoreCase,
  STORE_CASES,
  type StoreTargetFactory,
  sqliteStoreTarget,
} from "../../conformance/store.js";

const targets: [string, StoreTargetFactory][] = [
  ["memory", memoryStoreTarget],
  ["sqlite", sqliteStoreTarget],
];

for (const [label, makeTarget] of targets) {
  describe(`${label}: store conformance`, () => {
    for (const c of STORE_CASES) {
      it(`${c.title} [${c.id}]`, async (tctx) => {
        if ((await runStoreCase(c, makeTarget)) === "skipped")
          tctx.skip(`requires ${c.requires?.join(", ")}`);
      });
    }
  });
}
