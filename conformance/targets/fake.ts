/**
 * Conformance target for the in-memory FakeProvider. Files "written by the session" are the
 * ones `copyTo` placed in the fake's memory; foreign sessions come from a second fake city
 * sharing the same backend.
 */
import { FakeBackend, FakeProvider } from "../../internal/runtime/fake.js";
import type { ConformanceTarget } from "../harness.js";

/** A fresh fake backend and provider (city `conformance`), plus a foreign city beside it. */
export async function createTarget(): Promise<ConformanceTarget> {
  const backend = new FakeBackend();
  const provider = new FakeProvider({ city: "conformance", backend });
  const foreign = new FakeProvider({ city: "someone-else", backend });
  let dirs = 0;
  return {
    label: "fake",
    provider,
    namePrefix: `fk${process.pid}-`,
    async makeConfig(command, extra) {
      return { command, workDir: `/fake/work-${++dirs}`, env: {}, ...extra };
    },
    async readFile(name, _cfg, rel) {
      return provider.session(name)?.files.get(rel)?.toString("utf8");
    },
    async createForeign(name) {
      await foreign.start(name, { command: "sleep 300", workDir: "/fake/foreign", env: {} });
      return () => foreign.stop(name);
    },
  };
}
