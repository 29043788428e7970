import { createTarget } from "../../conformance/targets/fake.js";
import { describeProviderConformance } from "../../conformance/vitest.js";

describeProviderConformance("fake", createTarget);
