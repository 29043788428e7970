/**
 * The status snapshot: what `gc status --json` prints and what the dashboard's `/api/status`
 * serves — one function, so both always show the same shape. One observation of the city
 * (internal/controller/sessions.ts) plus the controller's liveness.
 */
import type { PendingInteraction } from "../runtime/provider.js";
import type { City } from "./city.js";
import { MAX_REQUEST_BYTES, requestControl } from "./control.js";
import { type ControllerInfo, controllerPaths, findController } from "./controller.js";
import { type CityView, collectCity } from "./sessions.js";

/** The city observed once, with the controller's liveness. */
export interface StatusObservation {
  readonly view: CityView;
  readonly ctl: ControllerInfo;
}

/**
 * Observes the city and finds its controller, concurrently. A running controller's last
 * resolution stands in for resolving the city again while it is current.
 */
export async function observeStatus(city: City, signal?: AbortSignal): Promise<StatusObservation> {
  const found = findController(city.stateDir, { desired: true });
  const [view, ctl] = await Promise.all([
    collectCity(city, signal, {
      controllerDesired: found.then((c) => c.desired),
      controllerPending: async (byProvider) =>
        (await found).running ? askPending(city, byProvider) : undefined,
    }),
    found,
  ]);
  return { view, ctl };
}

/**
 * The running controller's pending interactions for `byProvider`'s sessions; `undefined`
 * when it does not answer (or the request would be too long): the caller looks itself.
 */
async function askPending(
  city: City,
  byProvider: ReadonlyMap<string, readonly string[]>,
): Promise<Map<string, PendingInteraction> | undefined> {
  const req = {
    op: "pending" as const,
    sessions: Object.fromEntries([...byProvider].map(([p, n]) => [p, [...n]])),
  };
  if (Buffer.byteLength(JSON.stringify(req)) > MAX_REQUEST_BYTES / 2) return undefined;
  try {
    const msgs = await requestControl(controllerPaths(city.stateDir).socket, req, { timeoutMs: 3_000 });
    const m = msgs.find((x) => x.type === "pending");
    return m?.type === "pending" ? new Map(Object.entries(m.pending)) : undefined;
  } catch {
    return undefined;
  }
}

/** The JSON document of `gc status --json` (and `/api/status`) for an observation. Pure. */
export function statusJson(cityName: string, { view, ctl }: StatusObservation) {
  return {
    city: cityName,
    controller: { running: ctl.running, pid: ctl.pid ?? null, lastPass: ctl.status?.lastPass ?? null },
    sessions: view.sessions.map((s) => ({
      name: s.name,
      agent: s.agent,
      provider: s.provider,
      backend: s.backend,
      state: s.state,
      running: s.running,
      drift: s.drift,
      restarts: s.restarts,
      infraLosses: s.infraLosses,
      lastActivity: s.lastActivity,
      attached: s.attached,
      reason: s.reason,
      ...(s.interaction ? { interaction: interactionJson(s.interaction) } : {}),
    })),
    configError: view.configError ?? ctl.status?.lastError ?? null,
    massStop: ctl.status?.last?.massStop ?? null,
    observeErrors: view.observeErrors,
  };
}

/** The shape of `gc status --json`. */
export type StatusJson = ReturnType<typeof statusJson>;

/** The interaction a session waits on, as `gc status --json` shows it: its question and options. Pure. */
export function interactionJson(p: PendingInteraction): Record<string, unknown> {
  return {
    requestId: p.requestId,
    kind: p.kind,
    question: p.prompt ?? "",
    options: p.options ?? [],
    ...(p.metadata?.dialog ? { dialog: p.metadata.dialog } : {}),
  };
}
