/**
 * Server-side printing for `kubectl get pods` (`Accept: …;as=Table;g=meta.k8s.io`): the columns
 * of the real pod printer (NAME READY STATUS RESTARTS AGE, wide: IP NODE). Pure.
 */
import type { KObject } from "./selectors.js";

/** True when the client asked for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? "").includes("as=Table");
}

/** Human duration as kubectl prints ages (`5s`, `3m2s`, `4h`, `2d`). */
export function humanAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ""}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

type ContainerStatus = {
  ready?: boolean;
  restartCount?: number;
  state?: Record<string, { reason?: string }>;
};

function podReason(pod: KObject): string {
  const status = (pod.status ?? {}) as {
    phase?: string;
    containerStatuses?: ContainerStatus[];
    conditions?: { type: string; reason?: string; status: string }[];
  };
  if (pod.metadata.deletionTimestamp) return "Terminating";
  let reason = status.phase ?? "Pending";
  for (const c of status.containerStatuses ?? []) {
    const waiting = c.state?.waiting?.reason;
    const terminated = c.state?.terminated?.reason;
    if (waiting && waiting !== "") reason = waiting;
    else if (terminated && reason !== "Running") reason = terminated;
  }
  return reason;
}

/** A meta.k8s.io/v1 Table of pods. */
export function podTable(list: { metadata: Record<string, unknown>; items: KObject[] } | KObject): object {
  const items = (list as { items: KObject[] }).items;
  const col = (name: string, priority = 0, format = "") => ({
    name,
    type: "string",
    format,
    description: name,
    priority,
  });
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion: String((list.metadata as Record<string, unknown>).resourceVersion ?? "") },
    columnDefinitions: [
      col("Name", 0, "name"),
      col("Ready"),
      col("Status"),
      col("Restarts"),
      col("Age"),
      col("IP", 1),
      col("Node", 1),
    ],
    rows: items.map((pod) => {
      const spec = pod.spec as { containers: unknown[]; nodeName?: string };
      const status = (pod.status ?? {}) as { podIP?: string; containerStatuses?: ContainerStatus[] };
      const cs = status.containerStatuses ?? [];
      const created = Date.parse(String(pod.metadata.creationTimestamp ?? ""));
      return {
        cells: [
          pod.metadata.name,
          `${cs.filter((c) => c.ready).length}/${spec.containers.length}`,
          podReason(pod),
          String(cs.reduce((n, c) => n + (c.restartCount ?? 0), 0)),
          Number.isFinite(created) ? humanAge(Date.now() - created) : "<unknown>",
          status.podIP ?? "<none>",
          spec.nodeName ?? "<none>",
        ],
        object: {
          kind: "PartialObjectMetadata",
          apiVersion: "meta.k8s.io/v1",
          metadata: pod.metadata,
        },
      };
    }),
  };
}
