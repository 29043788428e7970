/**
 * Observing a city for `gc status` and the dashboard's `/api/status`: one observation of the
 * city (sessions.ts) plus the controller's liveness, asking a running controller for what it
 * already knows (its last resolution, its pending interactions). The document built from it
 * is status-snapshot.ts.
 */
import type { City } from "./city.js";
import { MAX_REQUEST_BYTES, requestControl } from "./control.js";
import { controllerPaths, findController } from "./controller.js";
import { collectCity, type Seen } from "./sessions.js";
import type { StatusObservation } from "./status-snapshot.js";

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
      looksItself: found.then((c) => !c.running),
    }),
    found,
  ]);
  return { view, ctl };
}

/**
 * The running controller's look at `byProvider`'s sessions (interactions, work, screens);
 * `undefined` when it does not answer (or the request would be too long): the caller looks
 * itself.
 */
async function askPending(
  city: City,
  byProvider: ReadonlyMap<string, readonly string[]>,
): Promise<Map<string, Seen> | undefined> {
  const req = {
    op: "pending" as const,
    sessions: Object.fromEntries([...byProvider].map(([p, n]) => [p, [...n]])),
  };
  if (Buffer.byteLength(JSON.stringify(req)) > MAX_REQUEST_BYTES / 2) return undefined;
  try {
    const msgs = await requestControl(controllerPaths(city.stateDir).socket, req, { timeoutMs: 3_000 });
    const m = msgs.find((x) => x.type === "pending");
    if (m?.type !== "pending") return undefined;
    // A controller of an older build sends interactions only: this process looks itself.
    return m.seen ? new Map(Object.entries(m.seen)) : undefined;
  } catch {
    return undefined;
  }
}
