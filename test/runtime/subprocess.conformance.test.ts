import { createTarget } from "../../conformance/targets/subprocess.js";
import { describeProviderConformance } from "../../conformance/vitest.js";

describeProviderConformance("subprocess", createTarget);
