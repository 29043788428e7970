import { createTarget } from "../../conformance/targets/acp.js";
import { describeProviderConformance } from "../../conformance/vitest.js";

describeProviderConformance("acp", createTarget);
