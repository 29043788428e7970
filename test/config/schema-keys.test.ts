/**
 * Every key of the city file's JSON Schema is accounted for: either a test file that
 * exercises it (the file must exist and mention the key's name), or a listed gap with the
 * reason. A new key without a test, or a gap that got its test, fails here — so the table
 * stays the truth about which settings are proven. Entries of {@link KEY_EVIDENCE} are held
 * to more: the file must have a test whose title names the full key (`daemon.drain_timeout`),
 * the test that shows the key taking effect.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { citySchemaJson } from "../../internal/config/schema.js";

/** key → a test that exercises it. */
const KEY_TESTS: readonly (readonly [string, string])[] = [
  ["workspace", "test/config/resolve.test.ts"],
  ["workspace.name", "test/config/resolve.test.ts"],
  ["workspace.provider", "test/config/resolve.test.ts"],
  ["workspace.suspended", "test/config/resolve.test.ts"],
  ["session", "test/config/resolve.test.ts"],
  ["session.provider", "test/config/resolve.test.ts"],
  ["session.approval", "test/reconcile/nudge-delivery.test.ts"],
  ["session.approval.rules", "test/cli/operate.e2e.test.ts"],
  ["session.approval.rules[].kind", "test/config/load.test.ts"],
  ["session.approval.rules[].match", "test/config/resolve.test.ts"],
  ["session.approval.rules[].action", "test/cli/start-timeouts.e2e.test.ts"],
  ["session.approval.default", "test/config/resolve.test.ts"],
  ["session.tmux", "test/config/resolve.test.ts"],
  ["session.tmux.socket", "test/config/units.test.ts"],
  ["session.subprocess", "test/runtime/subprocess/settings.test.ts"],
  ["session.subprocess.cols", "test/runtime/subprocess/settings.test.ts"],
  ["session.subprocess.rows", "test/runtime/subprocess/settings.test.ts"],
  ["session.subprocess.scrollback", "test/runtime/subprocess/settings.test.ts"],
  ["session.subprocess.ready_timeout_ms", "test/runtime/subprocess/settings.test.ts"],
  ["session.subprocess.log_max_bytes", "test/runtime/subprocess/holder-protocol.test.ts"],
  ["session.subprocess.ring_bytes", "test/runtime/subprocess/holder-protocol.test.ts"],
  ["session.subprocess.detach_keys", "test/runtime/subprocess/attach.test.ts"],
  ["session.exec", "test/config/resolve.test.ts"],
  ["session.exec.timeout", "test/config/units.test.ts"],
  ["session.exec.start_timeout", "test/config/units.test.ts"],
  ["session.acp", "test/runtime/acp/acp.test.ts"],
  ["session.acp.mcp_servers", "test/runtime/acp/acp.test.ts"],
  ["session.acp.mcp_servers[].name", "test/runtime/acp/acp.test.ts"],
  ["session.acp.mcp_servers[].command", "test/runtime/acp/acp.test.ts"],
  ["session.acp.mcp_servers[].args", "test/runtime/acp/acp.test.ts"],
  ["session.acp.mcp_servers[].env", "test/runtime/acp/acp.test.ts"],
  ["session.k8s", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.namespace", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.image", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.context", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.kubeconfig", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.service_account", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.image_pull_policy", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.node_selector", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.resources", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.resources.limits", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.resources.requests", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.work_root", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.start_timeout", "test/runtime/k8s/config.test.ts"],
  ["session.k8s.run_as_non_root", "test/runtime/k8s/security.test.ts"],
  ["session.k8s.run_as_user", "test/runtime/k8s/security.test.ts"],
  ["session.k8s.run_as_group", "test/runtime/k8s/security.test.ts"],
  ["session.k8s.fs_group", "test/runtime/k8s/security.test.ts"],
  ["session.k8s.read_only_root_filesystem", "test/runtime/k8s/security.test.ts"],
  ["session.k8s.grace_period", "test/runtime/k8s/security.test.ts"],
  ["session.docker", "test/runtime/docker/provider.test.ts"],
  ["session.docker.host", "test/runtime/docker/provider.test.ts"],
  ["session.docker.image", "test/runtime/docker/provider.test.ts"],
  ["session.docker.network", "test/runtime/docker/provider.test.ts"],
  ["session.docker.memory", "test/runtime/docker/provider.test.ts"],
  ["session.docker.cpus", "test/runtime/docker/provider.test.ts"],
  ["session.docker.pids_limit", "test/runtime/docker/provider.test.ts"],
  ["session.docker.user", "test/runtime/docker/provider.test.ts"],
  ["session.docker.mounts", "test/runtime/docker/provider.test.ts"],
  ["session.docker.mounts[].source", "test/runtime/docker/provider.test.ts"],
  ["session.docker.mounts[].target", "test/runtime/docker/provider.test.ts"],
  ["session.docker.mounts[].read_only", "test/runtime/docker/provider.test.ts"],
  ["session.docker.work_dir", "test/runtime/docker/provider.test.ts"],
  ["session.inherit_env", "test/runtime/launch.test.ts"],
  ["session.auto", "test/config/resolve.test.ts"],
  ["session.auto.default", "test/config/resolve.test.ts"],
  ["session.hybrid", "test/config/resolve.test.ts"],
  ["session.hybrid.local", "test/config/resolve.test.ts"],
  ["session.hybrid.remote", "test/config/resolve.test.ts"],
  ["session.hybrid.remote_match", "test/config/resolve.test.ts"],
  ["providers", "test/config/resolve.test.ts"],
  ["providers.*.command", "test/config/resolve.test.ts"],
  ["providers.*.args", "test/config/resolve.test.ts"],
  ["providers.*.prompt_mode", "test/config/resolve.test.ts"],
  ["providers.*.prompt_flag", "test/config/resolve.test.ts"],
  ["providers.*.ready_prompt_prefix", "test/config/resolve.test.ts"],
  ["providers.*.ready_delay_ms", "test/config/resolve.test.ts"],
  ["providers.*.process_names", "test/config/resolve.test.ts"],
  ["providers.*.emits_permission_warning", "test/config/resolve.test.ts"],
  ["providers.*.clear_input_keys", "test/config/resolve.test.ts"],
  ["providers.*.interrupt_keys", "test/cli/preset-knowledge.e2e.test.ts"],
  ["providers.*.busy_markers", "test/cli/preset-knowledge.e2e.test.ts"],
  ["providers.*.ready_markers", "test/cli/preset-knowledge.e2e.test.ts"],
  ["providers.*.error_markers", "test/cli/preset-knowledge.e2e.test.ts"],
  ["providers.*.ready_settle_ms", "test/cli/preset-knowledge.e2e.test.ts"],
  ["providers.*.turn_end_markers", "test/config/resolve.test.ts"],
  ["providers.*.multiline", "test/cli/preset-knowledge.e2e.test.ts"],
  ["providers.*.env", "test/config/resolve.test.ts"],
  ["agents", "test/config/resolve.test.ts"],
  ["agents[].name", "test/config/resolve.test.ts"],
  ["agents[].provider", "test/config/resolve.test.ts"],
  ["agents[].start_command", "test/config/resolve.test.ts"],
  ["agents[].args", "test/config/resolve.test.ts"],
  ["agents[].prompt_mode", "test/config/resolve.test.ts"],
  ["agents[].prompt_flag", "test/config/resolve.test.ts"],
  ["agents[].ready_prompt_prefix", "test/config/resolve.test.ts"],
  ["agents[].ready_delay_ms", "test/config/resolve.test.ts"],
  ["agents[].process_names", "test/config/resolve.test.ts"],
  ["agents[].emits_permission_warning", "test/config/resolve.test.ts"],
  ["agents[].clear_input_keys", "test/cli/operate.e2e.test.ts"],
  ["agents[].interrupt_keys", "test/config/resolve.test.ts"],
  ["agents[].busy_markers", "test/config/resolve.test.ts"],
  ["agents[].ready_markers", "test/config/resolve.test.ts"],
  ["agents[].error_markers", "test/config/resolve.test.ts"],
  ["agents[].ready_settle_ms", "test/config/resolve.test.ts"],
  ["agents[].turn_end_markers", "test/config/resolve.test.ts"],
  ["agents[].multiline", "test/config/resolve.test.ts"],
  ["agents[].env", "test/config/resolve.test.ts"],
  ["agents[].prompt", "test/config/resolve.test.ts"],
  ["agents[].prompt_template", "test/config/resolve.test.ts"],
  ["agents[].work_dir", "test/config/resolve.test.ts"],
  ["agents[].create_work_dir", "test/cli/operator.e2e.test.ts"],
  ["agents[].dir", "test/config/resolve.test.ts"],
  ["agents[].pre_start", "test/config/resolve.test.ts"],
  ["agents[].session_setup", "test/config/resolve.test.ts"],
  ["agents[].session_setup_script", "test/config/resolve.test.ts"],
  ["agents[].session_live", "test/config/resolve.test.ts"],
  ["agents[].overlay_dir", "test/config/resolve.test.ts"],
  ["agents[].copy_files", "test/config/resolve.test.ts"],
  ["agents[].copy_files[].src", "test/config/resolve.test.ts"],
  ["agents[].copy_files[].dst", "test/config/resolve.test.ts"],
  ["agents[].nudge", "test/config/resolve.test.ts"],
  ["agents[].min_active_sessions", "test/config/resolve.test.ts"],
  ["agents[].max_active_sessions", "test/config/resolve.test.ts"],
  ["agents[].depends_on", "test/config/resolve.test.ts"],
  ["agents[].session", "test/config/resolve.test.ts"],
  ["agents[].suspended", "test/config/resolve.test.ts"],
  ["daemon", "test/config/resolve.test.ts"],
  ["daemon.interval", "test/config/resolve.test.ts"],
  ["daemon.mass_stop_percent", "test/reconcile/plan.test.ts"],
  ["daemon.events", "test/cli/retention.e2e.test.ts"],
  ["daemon.events.max_age", "test/cli/retention.e2e.test.ts"],
  ["daemon.events.max_count", "test/cli/retention.e2e.test.ts"],
  ["daemon.concurrency", "test/config/resolve.test.ts"],
  ["daemon.backoff", "test/config/resolve.test.ts"],
  ["daemon.backoff.min", "test/config/resolve.test.ts"],
  ["daemon.backoff.max", "test/config/resolve.test.ts"],
  ["daemon.quarantine", "test/cli/reconcile.e2e.test.ts"],
  ["daemon.quarantine.window", "test/reconcile/plan.test.ts"],
];

/** key → the test file whose test, titled with the full key, shows the key taking effect. */
const KEY_EVIDENCE: readonly (readonly [string, string])[] = [
  ["daemon.quarantine.threshold", "test/cli/reconcile.e2e.test.ts"],
  ["daemon.min_healthy_uptime", "test/cli/reconcile.e2e.test.ts"],
  ["daemon.drain_timeout", "test/controller/daemon-settings.test.ts"],
  ["daemon.start_budget", "test/cli/reconcile.e2e.test.ts"],
  ["session.startup_timeout", "test/cli/start-timeouts.e2e.test.ts"],
  ["session.setup_timeout", "test/cli/start-timeouts.e2e.test.ts"],
];

/** Keys no test exercises yet, with why. */
const GAPS: Readonly<Record<string, string>> = {
  "session.subprocess.dialog_timeout_ms":
    "accepted by the schema (test/runtime/subprocess/settings.test.ts) and passed to the provider by createProvider; no subprocess test shows the dialog window ending yet",
};

type Node = {
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
  anyOf?: Node[];
  oneOf?: Node[];
};

/** Every key path of the schema (`agents[].name`, `providers.*.args`). */
function schemaKeys(node: Node, prefix = "", out: string[] = []): string[] {
  for (const [k, v] of Object.entries(node.properties ?? {})) {
    const path = prefix ? `${prefix}.${k}` : k;
    out.push(path);
    schemaKeys(v, path, out);
  }
  if (node.items) schemaKeys(node.items, `${prefix}[]`, out);
  if (node.additionalProperties && typeof node.additionalProperties === "object") {
    schemaKeys(node.additionalProperties, `${prefix}.*`, out);
  }
  for (const alt of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) schemaKeys(alt, prefix, out);
  return out;
}

describe("every JSON Schema key is accounted for", () => {
  const keys = [...new Set(schemaKeys(citySchemaJson() as unknown as Node))].sort();

  it("the table and the gaps together list exactly the schema's keys", () => {
    const listed = [...KEY_TESTS, ...KEY_EVIDENCE]
      .map(([k]) => k)
      .concat(Object.keys(GAPS))
      .sort();
    expect(listed).toEqual(keys);
  });

  it.each(KEY_TESTS)("%s is exercised by %s", (key, file) => {
    expect(existsSync(file)).toBe(true);
    const leaf = key.split(".").pop()?.replace("[]", "") ?? key;
    expect(readFileSync(file, "utf8")).toMatch(new RegExp(`\\b${leaf}\\b`));
  });

  it.each(KEY_EVIDENCE)("%s takes effect in a test of %s titled with the key", (key, file) => {
    expect(existsSync(file)).toBe(true);
    const text = readFileSync(file, "utf8");
    const titles = [...text.matchAll(/\bit(?:\.each\([^)]*\))?\(\s*(["'`])(.*?)\1/gs)].map((m) => m[2] ?? "");
    expect(titles.some((t) => t.includes(key))).toBe(true);
  });
});
