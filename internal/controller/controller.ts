/**
 * The controller process: one per city, found through `<city>/.gc/controller.pid` and the
 * control socket beside it. Runs the reconcile loop (interval, config-file changes debounced,
 * pokes, backoff requeues), serves status/watch/poke/shutdown, and logs every pass.
 */

import { setMaxListeners } from "node:events";
import { type FSWatcher, watch as watchFs } from "node:fs";
import { open, readFile, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../base/errors.js";
import { gcBuildId } from "../build/build-id.js";
import { daemonSettings } from "../config/resolve.js";
import { pidAlive } from "../proc/kill.js";
import type { ProgressEvent } from "../reconcile/execute.js";
import { startLoop } from "../reconcile/loop.js";
import type { TickReport } from "../reconcile/reconciler.js";
import { massStopText, progressLine, summarizeTick, type TickSummary } from "../reconcile/summary.js";
import { supportsBackendWatch, supportsPrepare } from "../runtime/provider.js";
import { isDamage } from "../session/recovery.js";
import type { SessionStore } from "../session/store.js";
import { type City, newReconciler, policyOf } from "./city.js";
import { type ControlMessage, requestControl, serveControl } from "./control.js";
import {
  controllerPaths,
  findController,
  isControllerProcess,
  STOPPED_BEFORE_START,
  StopWonError,
} from "./controller-find.js";
import { capLog } from "./log-cap.js";
import { createOperatorPass } from "./operator-pass.js";
import { collectCity, ScreenMemo, screenRulesBySession, seeSessions } from "./sessions.js";
import { startOnlyChanges, startOnlyText } from "./start-only.js";
import { type ControllerStatus, type PassStats, type StatusJson, statusJson } from "./status-snapshot.js";
import { startOriginMs, stopWins } from "./stop-intent.js";
import { WorkWatcher } from "./work-watch.js";

export { controllerPaths, findController, STOPPED_BEFORE_START, StopWonError };

/** Quiet time after a city-file event before it is read (and again before it is applied). */
const WATCH_DEBOUNCE_MS = 300;

/** Brings provider `name`'s backend up when it can ({@link supportsPrepare}); never throws. */
async function prepareBackend(city: City, name: string, signal: AbortSignal): Promise<void> {
  try {
    const p = await city.providerFor(name);
    if (supportsPrepare(p)) await p.prepare({ signal });
  } catch {
    // the first start meets it and says so
  }
}

/**
 * Runs the controller in this process until `signal` aborts or a `shutdown` request comes.
 * Takes the city's pid file exclusively (a live other controller → rejects).
 */
export async function runController(
  city: City,
  opts: {
    signal: AbortSignal;
    log: (line: string) => void;
    /** Debug lines (each pass's duration); dropped when absent. */
    debug?: ((line: string) => void) | undefined;
  },
): Promise<void> {
  const paths = controllerPaths(city.stateDir);
  // Read now: an `npm run build` in place later changes the file, not the code running here.
  const build = gcBuildId();
  await claimPidFile(paths.pid);
  // Claimed first, checked second: a `gc stop` writes its intent before looking for the pid
  // file, so either it finds this controller or this controller finds its intent.
  const origin = startOriginMs();
  if (stopWins(city.stateDir, origin)) {
    await rm(paths.pid, { force: true });
    opts.log(STOPPED_BEFORE_START);
    return;
  }
  const stop = new AbortController();
  const signal = AbortSignal.any([opts.signal, stop.signal]);
  // Every concurrent provider operation of a pass listens on this one signal (a 50-session
  // start on subprocess passed 10), which is by design, not a leak.
  setMaxListeners(0, signal);
  // A city with agents gets its backends (a new city's tmux server) up while the store opens
  // and the first pass plans, not on the way of its first start.
  if (city.loaded.config.agents.length > 0)
    for (const name of new Set([city.defaultProvider, ...city.loaded.identity.providers]))
      void prepareBackend(city, name, signal);
  // The controller applies the file: its passes are keyed. The key's file steps run while
  // the store opens (neither needs the other; both are done before the first pass).
  const keyed = city.ensureFingerprintKey();
  let store: SessionStore;
  try {
    store = await city.store();
  } finally {
    await keyed.catch(() => undefined); // its failure is thrown below, once it has settled
  }
  await keyed;
  let reconciler = newReconciler(city, store);
  // Records work each pass and looks again between passes (turn ends within ~0.5 s).
  const work = new WorkWatcher(city, opts.log);
  const operatorPass = createOperatorPass(city, opts.log, work);
  const startedAt = Date.now();
  let passes = 0;
  let last: TickSummary | undefined;
  let lastError: string | undefined;
  let lastPass: PassStats | undefined;
  type Pass = {
    events: ProgressEvent[];
    listeners: Set<(m: ControlMessage) => void>;
    done: Promise<void>;
    allowMassStop?: boolean;
  };
  let current: Pass | undefined;
  let queued: Pass | undefined;

  const newPass = (): Pass => ({ events: [], listeners: new Set(), done: Promise.resolve() });
  queued = newPass(); // the first pass: watchers that connect early see it from the start

  // A lost backend (the tmux server exited) is recovered at once, not at the next interval.
  const watched = new WeakSet<object>();
  const watchBackends = async (report: TickReport) => {
    for (const name of new Set([city.defaultProvider, ...report.desired.map((d) => d.provider)])) {
      const p = await city.providerFor(name).catch(() => undefined);
      if (!p || watched.has(p) || !supportsBackendWatch(p)) continue;
      watched.add(p);
      p.onBackendLost(() => {
        if (signal.aborted) return;
        // Also after the last session of a backend stopped (a subprocess holder then exits).
        opts.log(`${name}: its backend process exited (tmux server or session holder): reconciling now`);
        loop.poke();
      });
    }
  };

  let loggedConfigError: string | undefined;
  /** A pass met a damaged database: the next one checks it as damaged whatever its header says. */
  let damaged = false;
  // What this controller runs with of the settings it reads only at its start.
  const runningWith = policyOf(city.loaded);
  let loggedStartOnly = "";
  const runPass = async () => {
    if (stopWins(city.stateDir, origin)) {
      // A stop is under way: start nothing more; it shuts this controller down.
      opts.log(STOPPED_BEFORE_START);
      stop.abort(new Error(STOPPED_BEFORE_START));
      return { report: last, requeueAt: undefined };
    }
    // An `rm .gc/state.db` or garbage over it while this controller runs: its open copy is
    // written back (not a fresh empty file that every other command would read and write
    // from then on); when that copy cannot be read either, the store's recovery starts anew.
    const checked = await city.checkStore({ damaged }).catch((e: unknown) => {
      opts.log(`state database check failed: ${describeError(e)}`);
      return undefined;
    });
    if (checked) {
      damaged = false;
      opts.log(storeCheckText(join(city.stateDir, "state.db"), checked));
      store = await city.store();
      reconciler = newReconciler(city, store);
    }
    current = queued ?? newPass();
    queued = undefined;
    const pass = current;
    const emit = (m: ControlMessage) => {
      for (const l of pass.listeners) l(m);
    };
    let report: TickReport | undefined;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    try {
      report = await reconciler.tick({
        signal,
        allowMassStop: pass.allowMassStop === true,
        onProgress: (e) => {
          pass.events.push(e);
          if (e.phase !== "begin") opts.log(progressLine(e));
          else opts.debug?.(`begin ${e.action} ${e.name}: ${e.detail}`);
          emit({ type: "progress", event: e });
        },
      });
      passes++;
      last = summarizeTick(report);
      lastError = last.configError;
      // Said when it appears or changes and when it is fixed, not again on every pass.
      if (last.configError !== loggedConfigError) {
        if (last.configError) opts.log(`config error (keeping the last good config): ${last.configError}`);
        else opts.log("the city file is valid again");
        loggedConfigError = last.configError;
      }
      // An edit of interval, concurrency or drain_timeout applies at the next controller
      // start: said once when it appears or changes (and when the file matches again).
      const startOnly = startOnlyChanges(runningWith, policyOf(city.current()));
      if (startOnly.join("\n") !== loggedStartOnly) {
        opts.log(startOnlyText(startOnly, process.pid));
        loggedStartOnly = startOnly.join("\n");
      }
      if (last.massStop) opts.log(massStopText(last.massStop));
      for (const o of last.observeErrors) opts.log(`cannot observe ${o.provider}: ${o.error}`);
      emit({ type: "done", summary: last });
      // The pass is reported: a watcher connecting from now on must wait for the next one.
      current = undefined;
      // Queued nudges, approvals, wait expiry, exec-state cleanup (operator-pass.ts).
      const t1 = performance.now();
      const op = await operatorPass(report, signal);
      await watchBackends(report);
      // Event retention (daemon.events), re-read every pass so edits apply.
      const keep = daemonSettings(city.current().config);
      const trimmed = await store
        .trimEvents({ before: Date.now() - keep.eventMaxAgeMs, keep: keep.eventMaxCount })
        .catch((e: unknown) => {
          opts.log(`event retention failed: ${describeError(e)}`);
          return 0;
        });
      if (trimmed > 0) opts.log(`event retention: deleted ${trimmed} old event${trimmed === 1 ? "" : "s"}`);
      lastPass = passStats(t0, t1, cpu0, last.actions);
      opts.debug?.(passStatsLine(lastPass));
      if (await capLog(paths.log)) opts.log(`log: the earlier lines are in ${paths.log}.1`);
      const due = Math.min(
        report.requeueAt ?? Number.POSITIVE_INFINITY,
        op.nextDueAt ?? Number.POSITIVE_INFINITY,
      );
      return { report: last, requeueAt: Number.isFinite(due) ? due : undefined };
    } catch (e) {
      lastError = describeError(e);
      opts.log(`pass failed: ${lastError}`);
      // A database that is no longer one: the next pass (now) writes it back or recovers it.
      if (isStoreDamage(e)) {
        damaged = true;
        loop.poke();
      }
      emit({ type: "done", summary: last, error: lastError });
      throw e;
    } finally {
      current = undefined;
    }
  };

  const loop = startLoop({ pass: runPass, intervalMs: policyOf(city.loaded).intervalMs, signal });
  work.start(signal);
  // If the socket or the watcher cannot be set up, no controller may keep running unreachable.
  const setupFailed = async (e: unknown): Promise<never> => {
    stop.abort(e);
    await loop.done;
    await rm(paths.pid, { force: true });
    throw e;
  };
  const statusNow = (): ControllerStatus => ({
    pid: process.pid,
    startedAt,
    passes,
    last,
    lastError,
    busy: current !== undefined,
    lastPass,
    build,
  });
  /** The screens the snapshot and pending ops classified (an unchanged one is not read again). */
  const screens = new ScreenMemo();
  const server = await serveControl(paths.socket, {
    status: statusNow,
    desired: () => city.desiredDigest(),
    pending: (sessions) => {
      screens.next(); // an observation too: the memo keeps what the last two read
      return seeSessions(
        city,
        sessions,
        signal,
        screenRulesBySession(city, city.desiredDigest()?.sessions ?? []),
        undefined,
        screens,
      );
    },
    snapshot: async (file) => {
      if (file !== city.loaded.file) throw new Error(`this controller runs ${city.loaded.file}, not ${file}`);
      return controllerSnapshot(city, statusNow(), screens, signal);
    },
    watch: (send, poke, wopts) =>
      new Promise<void>((resolve) => {
        let pass: Pass | undefined;
        if (poke) {
          queued ??= newPass();
          pass = queued;
          if (wopts?.allowMassStop) pass.allowMassStop = true;
          loop.poke();
        } else {
          pass = current ?? queued;
        }
        if (!pass) {
          send({ type: "done", summary: last });
          resolve();
          return;
        }
        for (const e of pass.events) send({ type: "progress", event: e });
        const onAbort = () => resolve();
        const listener = (m: ControlMessage) => {
          send(m);
          if (m.type === "done") {
            pass?.listeners.delete(listener);
            signal.removeEventListener("abort", onAbort);
            resolve();
          }
        };
        pass.listeners.add(listener);
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    shutdown: () => stop.abort(new Error("shutdown requested")),
  }).catch(setupFailed);

  // Config file changes trigger a pass (debounced); editors replace files, so watch the dir.
  // A file is applied only once it is stable: the same bytes on two reads a debounce apart
  // (an editor that truncates first, or a slow writer, is not caught half way).
  let debounce: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  const readCity = () => readFile(city.loaded.file).catch(() => undefined);
  const settle = (previous: Buffer | undefined) => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      void readCity().then((now) => {
        if (signal.aborted) return;
        const stable = previous === undefined ? now === undefined : now !== undefined && previous.equals(now);
        if (stable) {
          opts.log("city file changed: reconciling");
          loop.poke();
        } else settle(now); // still changing (or unreadable): look again after another debounce
      });
    }, WATCH_DEBOUNCE_MS);
  };
  try {
    watcher = watchFs(dirname(city.loaded.file), (_ev, file) => {
      if (file !== null && file !== basename(city.loaded.file)) return;
      clearTimeout(debounce);
      debounce = setTimeout(() => void readCity().then(settle), WATCH_DEBOUNCE_MS);
    });
    watcher.on("error", (e) =>
      opts.log(`watching the city file failed (interval passes go on): ${describeError(e)}`),
    );
  } catch (e) {
    opts.log(`cannot watch the city file (interval passes go on): ${describeError(e)}`);
  }
  opts.log(
    `controller ${process.pid} running for city ${city.name} (${city.cityDir}), build ${build ?? "unknown"}`,
  );
  try {
    await loop.done;
  } finally {
    clearTimeout(debounce);
    watcher?.close();
    await work.settled();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(paths.socket, { force: true });
    await rm(paths.pid, { force: true });
    opts.log("controller stopped");
  }
}

/** The stats of a pass that began at `t0` (reconcile step until `t1`) with CPU usage `cpu0`. */
function passStats(
  t0: number,
  t1: number,
  cpu0: NodeJS.CpuUsage,
  actions: Readonly<Record<string, number>>,
): PassStats {
  const end = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const ms = (x: number) => Math.round(x * 100) / 100;
  return {
    at: Date.now(),
    durationMs: ms(end - t0),
    reconcileMs: ms(t1 - t0),
    operatorMs: ms(end - t1),
    cpuMs: ms((cpu.user + cpu.system) / 1000),
    actions,
  };
}

/** `pass 12.3 ms (reconcile 8.1, operator 4.2; cpu 9.0 ms): 3 start, 17 wait` — the debug line. */
export function passStatsLine(s: PassStats): string {
  const acts = Object.entries(s.actions).map(([k, n]) => `${n} ${k}`);
  return (
    `pass ${s.durationMs} ms (reconcile ${s.reconcileMs}, operator ${s.operatorMs}; cpu ${s.cpuMs} ms): ` +
    (acts.length > 0 ? acts.join(", ") : "in sync")
  );
}

/** Creates the pid file exclusively; replaces a stale one. @throws when a live controller owns it. */
async function claimPidFile(path: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    try {
      const fh = await open(path, "wx", 0o600);
      await fh.writeFile(`${process.pid}\n`);
      await fh.close();
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const pid = Number((await readFile(path, "utf8").catch(() => "")).trim());
      if (pid && pid !== process.pid && (await pidAlive(pid)) && (await isControllerProcess(pid))) {
        throw new Error(`a controller is already running for this city (pid ${pid})`);
      }
      await rm(path, { force: true });
    }
  }
  throw new Error(`cannot claim ${path}`);
}

/**
 * Asks a running controller for a pass now (fire and wait for its end, quietly).
 * Resolves whether a controller was reached.
 */
export async function pokeController(stateDir: string): Promise<boolean> {
  const info = await findController(stateDir);
  if (!info.running) return false;
  try {
    await requestControl(controllerPaths(stateDir).socket, { op: "poke" }, { timeoutMs: 60_000 });
    return true;
  } catch {
    return false;
  }
}

/** Asks the controller to stop and waits for its process to end (SIGTERM, then SIGKILL). */
export async function stopController(stateDir: string, pid: number): Promise<void> {
  await requestControl(controllerPaths(stateDir).socket, { op: "shutdown" }, { timeoutMs: 5_000 }).catch(
    () => undefined,
  );
  const waitGone = async (ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (!(await pidAlive(pid))) return true;
      await sleep(50);
    }
    return !(await pidAlive(pid));
  };
  if (await waitGone(15_000)) return;
  process.kill(pid, "SIGTERM");
  if (await waitGone(5_000)) return;
  process.kill(pid, "SIGKILL");
  await waitGone(5_000);
}

/** Whether `e` (or an error it was caused by) says the database file is damaged. Pure. */
function isStoreDamage(e: unknown): boolean {
  for (let c: unknown = e, i = 0; c instanceof Error && i < 8; c = c.cause, i++) if (isDamage(c)) return true;
  return false;
}

/** The log line for a state database that was deleted, replaced or damaged under the controller. Pure. */
export function storeCheckText(path: string, r: { found: string; movedAside?: string }): string {
  if (r.found === "salvaged")
    return (
      `${path} was damaged while the controller ran: moved to ${r.movedAside ?? "(already moved)"} and ` +
      "written back from its open copy (records, holds, queued nudges and events kept); reopened"
    );
  if (r.found === "damaged")
    return (
      `${path} is damaged and the controller's open copy cannot be read either: reopened with ` +
      "recovery (see state-recovered.json)"
    );
  if (r.found !== "restored") return `${path} was replaced under the controller: reopened it`;
  return (
    `${path} was deleted while the controller ran: written back from its open copy (records, ` +
    `holds, queued nudges and events kept) and reopened` +
    (r.movedAside ? `; the file a command had created in its place is now ${r.movedAside}` : "")
  );
}

/**
 * The snapshot as the running controller builds it for the `snapshot` control op: the city
 * observed now (not the last pass's observation) through the controller's own providers and
 * store. DRIFT follows the same rule as status-observe.ts `observeStatus`: the last pass's resolution
 * while the file, scale and fingerprinted files on disk still match it, else the city file is
 * re-read (only if it changed) and resolved again.
 * @throws Error when the city file is invalid: the asker then builds the snapshot itself, on
 * the last good config, and says so (the read commands' rule).
 */
async function controllerSnapshot(
  city: City,
  status: ControllerStatus,
  screens: ScreenMemo,
  signal?: AbortSignal,
): Promise<StatusJson> {
  const view = await collectCity(city, signal, {
    controllerDesired: Promise.resolve(city.desiredDigest()),
    // The controller looks itself, with its providers' screen caches and its own memory of
    // the screens it classified.
    looksItself: Promise.resolve(true),
    screens,
  });
  if (view.configError !== undefined)
    throw new Error(`city file invalid: ${view.configError.split("\n")[0]}`);
  // Built by the controller for an asker of another build maybe: the asker checks the build
  // again with its own id (withBuildCheck).
  return statusJson(city.name, { view, ctl: { running: true, pid: status.pid, status } }, status.build);
}
