// @ts-ignore scratch: the other branch's uncommitted server
import { startApiServer } from "/work/wt/i18s/test/k8s/apiserver/index.ts";
import { createK8sTarget } from "../../../conformance/targets/k8s.js";
import { describeProviderConformance } from "../../../conformance/vitest.js";

describeProviderConformance("k8s", () => createK8sTarget(() => startApiServer({})));
