/**
 * The status snapshot: what `gc status --json` prints and what the dashboard's `/api/status`
 * serves — one function, so both always show the same shape. One observation of the city
 * (internal/controller/sessions.ts) plus the controller's liveness ({@link ControllerStatus},
 * what the control op `status` answers). Built either by the caller (status-observe.ts
 * `observeStatus`) or, beside a running controller, by the controller itself (controller.ts,
 * control op `snapshot`) with its warm config, providers and store. Pure.
 */
import { controllerBuild } from "../build/build-id.js";
import type { MassStop } from "../reconcile/plan.js";
import type { TickSummary } from "../reconcile/summary.js";
import { massStopText } from "../reconcile/summary.js";
import { workJson } from "../reconcile/work.js";
import { isApprovalQuestion, type PendingInteraction } from "../runtime/provider.js";
import type { DesiredDigest } from "./digest-cache.js";
import type { CityView } from "./sessions.js";

/** What `status` answers. */
export interface ControllerStatus {
  readonly pid: number;
  readonly startedAt: number;
  readonly passes: number;
  readonly last: TickSummary | undefined;
  readonly lastError: string | undefined;
  readonly busy: boolean;
  /** Cost and result of the last completed pass (reconcile + operator step). */
  readonly lastPass?: PassStats | undefined;
  /**
   * The build id of the gc this controller was started from (internal/build/build-id.ts),
   * read when it started. Absent from controllers built before build ids, and from builds
   * without dist/build-id.
   */
  readonly build?: string | undefined;
}

/** What one controller pass cost and did (`gc status --json` shows it as `controller.lastPass`). */
export interface PassStats {
  /** When the pass ended, epoch ms. */
  readonly at: number;
  /** Wall time of the whole pass, ms. */
  readonly durationMs: number;
  /** Of which the reconcile step (config, observe, plan, execute), ms. */
  readonly reconcileMs: number;
  /** Of which the operator step (nudges, approvals, waits, exec state), ms. */
  readonly operatorMs: number;
  /** CPU time (user + system) this process spent during the pass, ms. */
  readonly cpuMs: number;
  /** Count of actions per kind (waits included). */
  readonly actions: Readonly<Record<string, number>>;
}

/** What is known about a city's controller. */
export interface ControllerInfo {
  readonly running: boolean;
  readonly pid: number | undefined;
  readonly status: ControllerStatus | undefined;
  /** What its last pass resolved, when asked for (`findController(…, { desired: true })`). */
  readonly desired?: DesiredDigest | undefined;
}

/** The city observed once, with the controller's liveness. */
export interface StatusObservation {
  readonly view: CityView;
  readonly ctl: ControllerInfo;
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
      work: workJson(s.work),
      ...(s.screen ? { screen: [...s.screen] } : {}),
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
