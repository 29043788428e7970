/**
 * The status snapshot: what `gc status --json` prints and what the dashboard's `/api/status`
 * serves — one function, so both always show the same shape. One observation of the city
 * (internal/controller/sessions.ts) plus the controller's liveness. Built either by the
 * caller ({@link observeStatus}) or, beside a running controller, by the controller itself
 * ({@link controllerSnapshot}, control op `snapshot`) with its warm config, providers and store.
 */
import { controllerBuild } from "../build/build-id.js";
import type { MassStop } from "../reconcile/plan.js";
import { massStopText } from "../reconcile/summary.js";
import { isApprovalQuestion, type PendingInteraction } from "../runtime/provider.js";
import type { City } from "./city.js";
import { type ControllerStatus, MAX_REQUEST_BYTES, requestControl } from "./control.js";
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
 * The snapshot as the running controller builds it for the `snapshot` control op: the city
 * observed now (not the last pass's observation) through the controller's own providers and
 * store. DRIFT follows the same rule as {@link observeStatus}: the last pass's resolution
 * while the file, scale and fingerprinted files on disk still match it, else the city file is
 * re-read (only if it changed) and resolved again.
 * @throws Error when the city file is invalid: the asker then builds the snapshot itself, on
 * the last good config, and says so (the read commands' rule).
 */
export async function controllerSnapshot(city: City, status: ControllerStatus, signal?: AbortSignal) {
  const view = await collectCity(city, signal, { controllerDesired: Promise.resolve(city.desiredDigest()) });
  if (view.configError !== undefined)
    throw new Error(`city file invalid: ${view.configError.split("\n")[0]}`);
  // Built by the controller for an asker of another build maybe: the asker checks the build
  // again with its own id (withBuildCheck).
  return statusJson(city.name, { view, ctl: { running: true, pid: status.pid, status } }, status.build);
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

/**
 * The JSON document of `gc status --json` (and `/api/status`) for an observation, made by the
 * gc of build `gcBuild` (internal/build/build-id.ts). Pure.
 */
export function statusJson(cityName: string, { view, ctl }: StatusObservation, gcBuild: string | undefined) {
  // A controller that did not answer says nothing of its build: no mismatch is claimed.
  const answered = ctl.running && ctl.status !== undefined;
  return {
    city: cityName,
    /** The build of the gc that made this document. */
    build: gcBuild ?? null,
    controller: {
      running: ctl.running,
      pid: ctl.pid ?? null,
      ...controllerBuild(answered, ctl.status?.build, gcBuild),
      lastPass: ctl.status?.lastPass ?? null,
    },
    sessions: view.sessions.map((s) => ({
      name: s.name,
      agent: s.agent,
      provider: s.provider,
      backend: s.backend,
      state: s.state,
      running: s.running,
      drift: s.drift,
      ...(s.nextStart ? { nextStart: s.nextStart } : {}),
      restarts: s.restarts,
      infraLosses: s.infraLosses,
      lastActivity: s.lastActivity,
      attached: s.attached,
      reason: s.reason,
      held: s.held,
      ...(s.interaction ? { interaction: interactionJson(s.interaction) } : {}),
    })),
    configError: view.configError ?? ctl.status?.lastError ?? null,
    massStop: massStopJson(ctl.status?.last?.massStop),
    observeErrors: view.observeErrors,
    errors: statusErrors({ view, ctl }),
  };
}

/**
 * The errors `gc status` shows in its banner (text and JSON alike), one sentence each: the
 * city file's error (the last good config kept), the controller's failing pass (a store
 * error, a full disk…), and each provider that could not be observed. Pure.
 */
export function statusErrors({ view, ctl }: StatusObservation): string[] {
  const out: string[] = [];
  const configError = view.configError ?? ctl.status?.last?.configError;
  if (configError !== undefined) {
    out.push(`config error (the last good config is kept): ${configError.split("\n")[0]}`);
  }
  const lastError = ctl.status?.lastError;
  if (lastError !== undefined && lastError !== ctl.status?.last?.configError && lastError !== configError) {
    out.push(`the controller's last pass failed: ${lastError.split("\n")[0]}`);
  }
  for (const o of view.observeErrors) out.push(`cannot observe provider ${o.provider}: ${o.error}`);
  return out;
}

/**
 * The mass-stop guard's refusal with the sentence operators read (`text`, the one `gc status`,
 * `gc drift`, controller.log and the dashboard's banner show), or null. Pure.
 */
function massStopJson(m: MassStop | undefined) {
  return m ? { stops: [...m.stops], running: m.running, percent: m.percent, text: massStopText(m) } : null;
}

/** The shape of `gc status --json`. */
export type StatusJson = ReturnType<typeof statusJson>;

/**
 * The interaction a session waits on, as `gc status --json` shows it: its question and
 * options; `approval` says whether it is an approve/deny question ({@link isApprovalQuestion}:
 * only then do `approve`/`deny` answer it), `input` that it is a field a person types into
 * (no options: `gc attach` answers it). Pure.
 */
export function interactionJson(p: PendingInteraction): Record<string, unknown> {
  return {
    requestId: p.requestId,
    kind: p.kind,
    question: p.prompt ?? "",
    options: p.options ?? [],
    approval: isApprovalQuestion(p),
    ...(p.metadata?.input ? { input: true } : {}),
    ...(p.metadata?.dialog ? { dialog: p.metadata.dialog } : {}),
  };
}
