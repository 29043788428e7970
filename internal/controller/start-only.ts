/**
 * Daemon settings a controller reads once, when it starts (docs/decisions.md, "Controller"):
 * `daemon.interval`, `concurrency` and `drain_timeout`. An edit of them under a running
 * controller changes nothing until it restarts; this says so instead of staying silent.
 */
import { formatDuration } from "../base/duration.js";
import type { policyOf } from "./city.js";

type Policy = ReturnType<typeof policyOf>;

const START_ONLY: readonly {
  key: string;
  field: "intervalMs" | "concurrency" | "drainTimeoutMs";
  ms: boolean;
}[] = [
  { key: "daemon.interval", field: "intervalMs", ms: true },
  { key: "daemon.concurrency", field: "concurrency", ms: false },
  { key: "daemon.drain_timeout", field: "drainTimeoutMs", ms: true },
];

/**
 * The start-only settings whose value in the city file (`wanted`) differs from the one the
 * controller runs with (`running`), as `daemon.interval 1h → 2s`. Pure.
 */
export function startOnlyChanges(running: Policy, wanted: Policy): string[] {
  const show = (v: number, ms: boolean) => (ms ? formatDuration(v) : String(v));
  return START_ONLY.filter((s) => running[s.field] !== wanted[s.field]).map(
    (s) => `${s.key} ${show(running[s.field], s.ms)} → ${show(wanted[s.field], s.ms)}`,
  );
}

/** The controller log line for {@link startOnlyChanges}' result (`pid`: the controller's). Pure. */
export function startOnlyText(changes: readonly string[], pid: number): string {
  return changes.length === 0
    ? "daemon settings: the controller runs with what the city file says again"
    : `daemon settings changed (${changes.join(", ")}): they apply when the controller restarts — ` +
        `kill -TERM ${pid}, then gc start (sessions keep running)`;
}
