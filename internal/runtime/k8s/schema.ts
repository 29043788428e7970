/**
 * The `session.k8s` section of the city file, declared by the k8s provider itself and placed
 * in the city schema by the provider registry (registry.ts). Pure, and light: loading the
 * config never loads the Kubernetes client.
 */
import { nameField, pathField } from "../../base/fields.js";
import { s } from "../../base/schema-builder.js";

/** `session.k8s`. */
export const K8S_SETTINGS_SCHEMA = s.object({
  namespace: nameField().default("default").describe("Namespace of the session pods and Secrets."),
  image: s
    .string({ nonEmpty: true })
    .optional()
    .describe("Container image (required when k8s is used); it needs sh, tmux ≥ 3.2 and tar."),
  context: s.string({ nonEmpty: true }).optional().describe("kubeconfig context."),
  kubeconfig: pathField()
    .optional()
    .describe(
      "kubeconfig file (relative to the city directory); default: $KUBECONFIG, ~/.kube/config, in-cluster.",
    ),
  service_account: s.string({ nonEmpty: true }).optional().describe("Service account of the pods."),
  image_pull_policy: s
    .enum(["Always", "IfNotPresent", "Never"] as const)
    .optional()
    .describe("Image pull policy of the session container."),
  node_selector: s
    .record(s.string({ nonEmpty: true }))
    .optional()
    .describe("Node labels a session pod must be scheduled on."),
  resources: s
    .object({
      requests: s
        .record(s.string({ nonEmpty: true }))
        .optional()
        .describe("cpu / memory / ephemeral-storage requests (Kubernetes quantities)."),
      limits: s
        .record(s.string({ nonEmpty: true }))
        .optional()
        .describe("cpu / memory / ephemeral-storage limits (Kubernetes quantities)."),
    })
    .optional()
    .describe("Resources of the session container."),
  work_root: s
    .string({ nonEmpty: true })
    .default("/workspace")
    .describe(
      "Directory in the pod under which work dirs live (<work_root>/<work dir relative to the city>).",
    ),
  start_timeout: s
    .duration({ min: "1s" })
    .default("120s")
    .describe("How long a pod may stay Pending; then the start fails with the pod's reason."),
});
