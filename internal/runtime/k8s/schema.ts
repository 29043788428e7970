/**
 * The `session.k8s` section of the city file, declared by the k8s provider itself and placed
 * in the city schema by the provider registry (registry.ts). Pure, and light: loading the
 * config never loads the Kubernetes client.
 */
import { nameField, pathField } from "../../base/fields.js";
import { s } from "../../base/schema-builder.js";

/** `session.k8s`. */
export const K8S_SETTINGS_SCHEMA = s.object({
  namespace: nameField()
    .optional()
    .describe(
      "Namespace of the session pods and Secrets; default: the kubeconfig context's namespace, else default.",
    ),
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
  grace_period: s
    .duration({ max: "3600s" })
    .default("10s")
    .describe(
      "terminationGracePeriodSeconds of the pods: a stopped session's program gets SIGHUP (via tmux) and this long before SIGKILL; a start of the same name waits until the old pod is gone.",
    ),
  run_as_non_root: s
    .bool()
    .default(true)
    .describe("securityContext.runAsNonRoot of the pods (PodSecurity restricted needs true)."),
  run_as_user: s
    .int({ min: 0 })
    .optional()
    .describe("securityContext.runAsUser of the pods (default: the image's user)."),
  run_as_group: s
    .int({ min: 0 })
    .optional()
    .describe("securityContext.runAsGroup of the pods (default: the image's group)."),
  fs_group: s
    .int({ min: 0 })
    .optional()
    .describe("securityContext.fsGroup of the pods: group owning the emptyDir volumes."),
  read_only_root_filesystem: s
    .bool()
    .default(false)
    .describe(
      "securityContext.readOnlyRootFilesystem of the session container; work_root and /tmp are emptyDir volumes, so tmux and the work dirs still work.",
    ),
});
