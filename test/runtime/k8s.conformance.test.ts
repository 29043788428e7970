/**
 * The provider conformance suite on the k8s provider: against the loopback API server, or a
 * real cluster when GC_TEST_KUBECONFIG is set (see docs/k8s.md).
 */
import { createTarget } from "../../conformance/targets/k8s.js";
import { describeProviderConformance } from "../../conformance/vitest.js";

describeProviderConformance("k8s", createTarget, { timeoutMs: 180_000 });
