import { createTarget } from "../../conformance/targets/tmux.js";
import { describeProviderConformance } from "../../conformance/vitest.js";
import { describeNeeding } from "../support/needs.js";

describeNeeding(["tmux"], "tmux", () => describeProviderConformance("tmux", createTarget));
