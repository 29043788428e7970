/**
 * The provider conformance suite against the routing providers: `auto` over tmux, subprocess
 * and the exec reference script (every case, each on the next backend in turn), and `hybrid`
 * with tmux local and subprocess remote (split by `remote_match`) on the cases that exercise
 * routing — lifecycle, listing, liveness, metadata; hybrid is the same router as auto, and
 * `gc conformance hybrid` runs every case. `auto` over tmux and the k8s provider on the
 * loopback API server runs the same routing cases with pods as one backend. Needs tmux and
 * jq on PATH.
 */
import { PROVIDER_CASES } from "../../conformance/provider-cases.js";
import { createRoutingTarget } from "../../conformance/routing-target.js";
import { createTarget as autoTarget } from "../../conformance/targets/auto.js";
import { createTarget as hybridTarget } from "../../conformance/targets/hybrid.js";
import { createK8sTarget } from "../../conformance/targets/k8s.js";
import { createTarget as tmuxTarget } from "../../conformance/targets/tmux.js";
import { describeProviderConformance } from "../../conformance/vitest.js";
import { describeNeeding } from "../support/needs.js";

const ROUTING_CASES = PROVIDER_CASES.filter((c) => /^(start|stop|listRunning|isRunning|meta)\./.test(c.id));

describeNeeding(["tmux", "jq"], "routing providers", () => {
  describeProviderConformance("auto", autoTarget);
  describeProviderConformance("hybrid", hybridTarget, { cases: ROUTING_CASES });
  describeProviderConformance(
    "auto (tmux + k8s loopback)",
    () =>
      createRoutingTarget(
        "auto",
        [tmuxTarget, () => createK8sTarget({ kubeconfig: undefined })],
        (specs) => ({ kind: "auto", default: specs[0] as string }),
        `ak.${process.pid}.`,
      ),
    { cases: ROUTING_CASES, timeoutMs: 180_000 },
  );
});
