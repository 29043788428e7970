/**
 * `gc status [--json]`: one row per session (name, agent, provider, state, work, running, drift,
 * restarts, last activity, attached) plus the controller, from one observation per provider.
 *
 * Beside a running controller (no `--config`), the controller builds the snapshot (control op
 * `snapshot`, status-snapshot.ts controllerSnapshot) and this process only formats it: it
 * finds the city directory with a few `stat`s and loads neither the config, the store nor a
 * provider. gc's loader has usually asked already, while this bundle loaded (../early.ts). Without a controller, or when it refuses or does not answer within
 * {@link CONTROLLER_ANSWER_MS}, status opens the city and observes it itself (observeStatus).
 * Either way the same {@link printStatus} formats the same snapshot document.
 */
import { join, resolve } from "node:path";
import { UsageError } from "../../../internal/base/errors.js";
import { buildMismatchText, controllerBuild, gcBuildId } from "../../../internal/build/build-id.js";
import { findCityDir } from "../../../internal/config/locate.js";
import { requestControl } from "../../../internal/controller/control.js";
import type { StatusJson } from "../../../internal/controller/status-snapshot.js";
import { massStopText } from "../../../internal/reconcile/summary.js";
import { type CommandContext, defineCommand, EXIT } from "../context.js";
import { CONTROLLER_ANSWER_MS, statusQuestion, takeEarlyAnswer } from "../early.js";
import { announceRecovery } from "../recovery-note.js";
import { formatTable, runningCell } from "../table.js";

const USAGE = `Usage: gc status [--json]

One row per session of the city: name, agent, provider, state, work (what its agent is
doing — working, idle, needs-input, error, unknown — and for how long), running, drift,
restarts, last activity, attached — and whether the controller runs, and which build (a build other
than this gc's is pointed out, with how to restart the controller on this one).`;

/** States whose reason `gc status` prints under the table. */
const EXPLAINED_STATES: ReadonlySet<string> = new Set([
  "quarantined",
  "backoff",
  "crashed",
  "suspended",
  "waiting-for-input",
]);

/** An age in its largest unit: `5s`, `2m`, `3h`, `2d`. Pure. */
function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m`
      : s < 86400
        ? `${Math.floor(s / 3600)}h`
        : `${Math.floor(s / 86400)}d`;
}

/** The WORK cell: the work state and how long it has held (`working 2m`); `-` when not running. */
function workCell(s: StatusJson["sessions"][number]): string {
  if (s.running !== true) return "-";
  return `${s.work.state} ${age(Date.now() - Date.parse(s.work.since))}`;
}

function ago(iso: string | null): string {
  if (!iso) return "-";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

/**
 * The running controller's snapshot of this invocation's city, or `undefined` (no city dir
 * found, `--config` given, no controller, a refusal or no answer in time).
 */
async function askController(
  ctx: CommandContext,
): Promise<{ snap: StatusJson; cityDir: string } | undefined> {
  if (ctx.configFlag !== undefined) return undefined;
  const cityDir = ctx.cityFlag ? resolve(ctx.cwd, ctx.cityFlag) : await findCityDir(ctx.cwd);
  if (cityDir === undefined) return undefined;
  const stateDir = join(cityDir, ".gc");
  const q = statusQuestion(cityDir);
  try {
    // Asked already by gc's loader while this bundle loaded (early.ts), if it guessed this city.
    const msgs =
      (await takeEarlyAnswer(q, ctx.signal)) ??
      (await requestControl(q.socket, q.request, { timeoutMs: CONTROLLER_ANSWER_MS, signal: ctx.signal }));
    const m = msgs.find((x) => x.type === "snapshot");
    if (m?.type !== "snapshot") return undefined;
    announceRecovery(ctx, stateDir);
    return { snap: withBuildCheck(m.snapshot, gcBuildId()), cityDir };
  } catch {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    return undefined;
  }
}

/**
 * A snapshot the running controller built, checked against this gc's build: the controller
 * filled in its own. One from before build ids sends neither `build` field: its build reads
 * as null, a mismatch. Pure.
 */
function withBuildCheck(snap: StatusJson, gcBuild: string | undefined): StatusJson {
  return {
    ...snap,
    build: gcBuild ?? null,
    controller: {
      ...snap.controller,
      ...controllerBuild(snap.controller.running, snap.controller.build, gcBuild),
    },
  };
}

/**
 * Prints a status snapshot: the document itself with `--json`, else the table and notes.
 * `newConfigError`: a config error met while observing that opening the city did not report;
 * `openError`: the one opening the city reported (the banner does not repeat it).
 */
function printStatus(
  ctx: CommandContext,
  snap: StatusJson,
  cityDir: string,
  newConfigError?: string,
  openError?: string,
): void {
  if (ctx.json) {
    ctx.out(JSON.stringify(snap, null, 2));
    return;
  }
  const ctl = snap.controller;
  ctx.out(
    `city ${snap.city} (${cityDir}) — controller ${ctl.running ? `running (pid ${ctl.pid}, build ${ctl.build ?? "unknown"})` : "not running"}`,
  );
  const mismatch = ctl.buildMismatch
    ? buildMismatchText(ctl.build, snap.build ?? undefined, ctl.pid)
    : undefined;
  if (mismatch) ctx.out(mismatch);
  if (newConfigError)
    ctx.err(`gc: config error (sessions keep their last good config): ${newConfigError.split("\n")[0]}`);
  // The controller's own errors (and the providers it cannot observe), in a banner above the
  // table; a config error this command already reported in its own line is not said twice.
  const said = [openError, newConfigError].flatMap((e) =>
    e ? [`config error (the last good config is kept): ${e.split("\n")[0]}`] : [],
  );
  for (const e of snap.errors ?? []) if (!said.includes(e)) ctx.err(`ERROR: ${e}`);
  if (snap.massStop) ctx.out(massStopText(snap.massStop));
  const header = [
    "NAME",
    "AGENT",
    "PROVIDER",
    "STATE",
    "WORK",
    "RUNNING",
    "DRIFT",
    "RESTARTS",
    "ACTIVITY",
    "ATTACHED",
  ];
  const rows = snap.sessions.map((s) => [
    s.name,
    s.agent,
    s.backend === s.provider ? s.provider : `${s.provider}→${s.backend}`,
    s.state,
    workCell(s),
    runningCell(s.running),
    s.drift,
    String(s.restarts),
    ago(s.lastActivity),
    s.attached ? "yes" : "no",
  ]);
  // One write for the whole table: a line per write costs a syscall per session.
  ctx.out(formatTable(header, rows).join("\n"));
  for (const s of snap.sessions) {
    // A held session that is down is explained too: nothing starts it until the hold goes.
    const heldDown = s.held !== null && s.running === false && s.state !== "quarantined";
    if (EXPLAINED_STATES.has(s.state) || heldDown) {
      ctx.out(`  ${s.name}: ${s.state} — ${s.reason}`);
      if (heldDown)
        ctx.out(
          `    held: gc session restart ${s.name} starts it (gc session reset ${s.name} lets the controller)`,
        );
      if (s.state === "quarantined")
        ctx.out(
          `    once the cause is fixed: gc session reset ${s.name} (a changed start config in the city file lifts it by itself)`,
        );
      const opts = (s.interaction?.options ?? []) as readonly string[];
      if (opts.length > 0) {
        ctx.out(`    options: ${opts.map((o, i) => `${i + 1}. ${o}`).join(" · ")}`);
        ctx.out(`    answer: gc session respond ${s.name} <number|label>`);
      } else if (s.interaction?.input === true) {
        // A field a person types into (an API key): gc never types it.
        ctx.out(`    enter it: gc attach ${s.name}`);
      }
    }
  }
  for (const s of snap.sessions) {
    // A question is explained with its state (waiting-for-input) above.
    if (s.running === true && s.work.state === "error")
      ctx.out(`  ${s.name}: error — ${s.work.message ?? ""}`);
  }
  for (const s of snap.sessions) {
    if (!s.nextStart) continue;
    const what = s.nextStart.map((f) => (f === "workDir" ? "work_dir" : f)).join(", ");
    ctx.out(
      `  ${s.name}: ${what} changed — applies at its next start (gc drift ${s.name}; gc session restart ${s.name} applies it now)`,
    );
  }
  if (snap.sessions.length === 0) ctx.out("(no sessions)");
}

export const command = defineCommand({
  usage: USAGE,
  options: {},
  // Reads only, and awaits all it does (the city closes before run resolves).
  exitWhenDone: true,
  async run(ctx, { positionals }) {
    if (positionals.length > 0) throw new UsageError(`gc status takes no arguments\n\n${USAGE}`);
    const answered = await askController(ctx);
    if (answered) {
      printStatus(ctx, answered.snap, answered.cityDir);
      return EXIT.ok;
    }
    const [{ openCity }, { observeStatus }, { statusJson }] = await Promise.all([
      import("../deps.js"),
      import("../../../internal/controller/status-observe.js"),
      import("../../../internal/controller/status-snapshot.js"),
    ]);
    const city = await openCity(ctx, { readOnly: true });
    // Reported in one line by openCity; a failure to load seen later is new.
    const openError = city.configError;
    let closing: Promise<void> | undefined;
    try {
      const observed = await observeStatus(city, ctx.signal);
      // Observed: the connections wind down (a tmux client exits) while the table is made.
      closing = city.close();
      const { configError } = observed.view;
      printStatus(
        ctx,
        statusJson(city.name, observed, gcBuildId()),
        city.cityDir,
        configError !== openError ? configError : undefined,
        openError,
      );
      return EXIT.ok;
    } finally {
      await (closing ?? city.close());
    }
  },
});
