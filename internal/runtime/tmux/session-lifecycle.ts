/**
 * A tmux session's life on the city's server: start (through the shared start lifecycle,
 * lifecycle/start.ts: `new-session` with the ownership tags in one command list, readiness,
 * hooks, the initial nudge), stop (the pane's process tree, then the session), and the exit
 * of a program that ended (kept on its dead pane until stop or the next start), including
 * why a start died. Used by the tmux provider (provider.ts).
 */
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  HookFailedError,
  ProviderError,
  SessionDiedDuringStartupError,
  SessionExistsError,
} from "../../base/errors.js";
import { validateSessionName } from "../../base/names.js";
import { killTree, signalName } from "../../proc/kill.js";
import { readStat } from "../../proc/process-table.js";
import { commandViaEnv, hookDirOf, SHELL } from "../launch.js";
import {
  limitsFor,
  planStart,
  runLocalCommand,
  runStart,
  type StartBackend,
  type StartPlan,
  StartsInProgress,
  stageLocal,
} from "../lifecycle/index.js";
import { outputTail } from "../pane-text.js";
import type { ExitStatus, OpOptions, StartConfig, StartReport } from "../provider.js";
import type { CityServer } from "./city-server.js";
import { captureText, STATE_POLL_MS, screen, sendKeys } from "./pane.js";
import { sessionTarget, tmuxSessionName, toHex } from "./quote.js";
import type { SessionInput } from "./session-input.js";
import { isAbsent, isDuplicate, isLive, type SessionInfo } from "./sessions.js";

/** Runs the program in its work dir without tmux's `-c`, which expands `#{}` and `#()`. */
const CD_WRAPPER = 'cd "$1" || exit 127; shift; exec "$@"';
/** How long a dead pane may lack an exit status before it counts as killed by a signal. */
const EXIT_STATUS_GRACE_MS = 2_000;
/** Death detail when the dead pane shows nothing: tmux may have dropped the program's output. */
const LOST_OUTPUT = "no output captured (tmux can discard what a program prints just before it exits)";

/** Starts, stops and exits of the city's tmux sessions. */
export class SessionLifecycle {
  private readonly srv: CityServer;
  /** The provider's nudges: a start's nudge takes its turn with the others. */
  private readonly input: SessionInput;
  private readonly starts = new StartsInProgress();
  /** When a dead pane without an exit status was first seen (`<generation>:<session id>`). */
  private readonly deadWithoutStatus = new Map<string, number>();

  constructor(srv: CityServer, input: SessionInput) {
    this.srv = srv;
    this.input = input;
  }

  /**
   * Creates the session: pre_start (failure → {@link HookFailedError}, nothing created),
   * overlay/copy files, `new-session` (env via `-e`, work dir via argv, the prompt as an
   * argument), readiness (`readyPromptPrefix`, else `readyDelayMs`) with startup dialogs
   * answered, session_setup, session_setup_script, the initial nudge, session_live.
   * A dead session of ours with this name is cleaned up first.
   * @throws SessionExistsError when the name is live, taken by a foreign session, or
   * another start of it is in progress in this process.
   * @throws SessionDiedDuringStartupError when the program exits before start finishes.
   * @throws DialogRefusedError when a startup dialog's layout is unfamiliar.
   * Any rejection (including an abort) kills what was created.
   */
  async start(name: string, config: StartConfig, opts: OpOptions = {}): Promise<StartReport> {
    validateSessionName(name);
    opts.signal?.throwIfAborted();
    return this.starts.run(name, () => this.doStart(name, config, opts.signal));
  }

  private async doStart(
    name: string,
    cfg: StartConfig,
    signal: AbortSignal | undefined,
  ): Promise<StartReport> {
    // A start that changes anything before it creates the session (pre_start hooks, files
    // staged into the work dir) first makes sure the name is free, so that none of it runs
    // beside a live session of that name. Any other start just creates: the name is looked
    // at only when it turns out to be taken (one round trip less per start).
    const preStart = (cfg.preStart?.length ?? 0) > 0;
    const lookFirst = preStart || !!cfg.overlayDir || (cfg.copyFiles?.length ?? 0) > 0;
    if (lookFirst) await this.freeName(name, signal);
    const config = {
      ...cfg,
      workDir: resolve(this.srv.cityDir, cfg.workDir),
      hookDir: resolve(this.srv.cityDir, hookDirOf(cfg)),
    };
    const plan = planStart(name, this.srv.envCity, config, { sourceDir: this.srv.cityDir });
    // Hooks run in the hook dir; staging makes the work dir before any hook but pre_start.
    if (plan.hookDir !== plan.workDir || preStart) await mkdir(plan.hookDir, { recursive: true });
    let id: string | undefined;
    const live = async (sig: AbortSignal) => {
      const s = id === undefined ? undefined : await this.srv.lookup(id, sig);
      return s && isLive(s) ? s : undefined;
    };
    const backend: StartBackend = {
      provider: "tmux",
      hookEnv: { GC_TMUX_SOCKET: this.srv.settings.socketLabel },
      runCommand: runLocalCommand,
      stage: (p) => stageLocal("tmux", p),
      create: async (p, sig) => {
        id = await this.create(p, sig, !lookFirst);
      },
      alive: async (sig) => (await live(sig)) !== undefined,
      died: () => this.died(name, id ?? ""),
      screen: (sig) => screen(this.srv.pane(id ?? ""), sig),
      sendKeys: (keys, sig) => sendKeys(this.srv.pane(id ?? ""), keys, sig),
      nudge: async (text, sig) => {
        const s = await live(sig);
        if (!s) throw await this.died(name, id ?? "");
        await this.input.nudgeSession(name, s, text, true, sig, cfg.multiline);
      },
      destroy: async () => {
        if (id !== undefined) await this.destroy(id);
      },
    };
    const limits = limitsFor(cfg, {
      readyTimeoutMs: this.srv.settings.readyTimeoutMs,
      dialogTimeoutMs: this.srv.settings.dialogTimeoutMs,
    });
    return runStart(backend, plan, limits, signal);
  }

  /**
   * Makes the name `name` free for a new session: a dead session of ours holding it is
   * destroyed (its exit status has had its day).
   * @throws SessionExistsError when it is live, or held by a session that is not ours.
   */
  private async freeName(name: string, signal: AbortSignal | undefined): Promise<void> {
    const existing = await this.srv.lookup(sessionTarget(name), signal);
    if (!existing) return;
    if (existing.name !== name)
      throw new SessionExistsError(name, undefined, await this.srv.foreignHolder(name));
    if (isLive(existing)) throw new SessionExistsError(name);
    await this.destroy(existing.id);
  }

  /**
   * Creates the tmux session running `plan.argv` in `plan.workDir` with `plan.env`, tagged as
   * this city's. Resolves its session id; leaves nothing behind when it rejects. With
   * `freeIfTaken`, a name found taken is freed ({@link freeName}) and the create tried once more.
   */
  private async create(
    plan: StartPlan,
    signal: AbortSignal | undefined,
    freeIfTaken: boolean,
  ): Promise<string> {
    const { name, config: cfg, workDir } = plan;
    // The command text travels in the environment, never in argv (ps shows argv).
    const launch = commandViaEnv(plan.argv);
    const env = { ...plan.env, ...launch.env };
    const envArgs = Object.entries(env)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    const target = sessionTarget(name);
    const tag = (k: string, v: string) => ["set-option", "-t", target, k, v];
    // Ownership is part of creation: one command list, which the server runs as a whole, so
    // no controller death (or stop) between steps can leave an untagged session behind.
    // Declared env *names* only: values (secrets included) live in the session environment.
    const tags = [
      tag("@gc_city", this.srv.tag),
      tag("@gc_name", name),
      tag("@gc_workdir", toHex(workDir)),
      tag("@gc_envkeys", toHex(JSON.stringify(Object.keys(cfg.env).sort()))),
    ];
    if (cfg.readyPromptPrefix?.trim()) tags.push(tag("@gc_prefix", toHex(cfg.readyPromptPrefix)));
    let out: string[];
    try {
      [out = []] = await this.srv.client.commandList(
        [
          [
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{session_id}",
            "-s",
            tmuxSessionName(name),
            "-x",
            String(this.srv.settings.cols),
            "-y",
            String(this.srv.settings.rows),
            ...envArgs,
            "--",
            SHELL,
            "-c",
            CD_WRAPPER,
            "gc-session",
            workDir,
            ...launch.argv,
          ],
          ...tags,
        ],
        { signal, create: true },
      );
    } catch (e) {
      if (isDuplicate(e) && freeIfTaken) {
        await this.freeName(name, signal);
        return this.create(plan, signal, false);
      }
      if (isDuplicate(e))
        throw new SessionExistsError(name, { cause: e }, await this.srv.foreignHolder(name));
      // A failure after new-session (a tag) leaves a session this start created: remove it.
      const made = await this.srv.lookup(sessionTarget(name)).catch(() => undefined);
      if (made && made.name === undefined) await this.destroy(made.id).catch(() => undefined);
      throw e;
    }
    const id = out[0]?.trim() ?? "";
    if (!/^\$\d+$/.test(id))
      throw new ProviderError("tmux", `new-session printed ${JSON.stringify(out.join(" "))}`);
    // Read right after the reply, before any other turn: the connection that ran the list.
    // Metadata written after the start (fingerprints) then needs no lookup of the name.
    this.srv.ids.set(name, { id, generation: this.srv.client.generation });
    if (signal?.aborted) {
      await this.destroy(id).catch(() => undefined);
      throw signal.reason;
    }
    return id;
  }

  private async died(name: string, id: string): Promise<SessionDiedDuringStartupError> {
    let detail = "the session is gone";
    try {
      let s = await this.srv.lookup(id);
      if (s && !isLive(s) && !hasExitInfo(s.panes[0])) await this.srv.reapLostChildren();
      for (let i = 0; i < 10 && s && !isLive(s) && !hasExitInfo(s.panes[0]); i++) {
        await sleep(STATE_POLL_MS);
        s = await this.srv.lookup(id);
      }
      const pane = s?.panes[0];
      if (pane?.dead) {
        const how =
          pane.exitStatus !== undefined
            ? `exit status ${pane.exitStatus}`
            : pane.exitSignal !== undefined
              ? `signal ${pane.exitSignal}`
              : "killed";
        // A dead pane's pty is closed, so its screen and history are final. tmux 3.3 closes
        // it as soon as the exit reaches it, discarding output the kernel had not handed
        // over yet (a program that prints and exits at once can lose its last line so):
        // an empty screen is not proof of silence, and the detail says so.
        const tail = outputTail(await captureText(this.srv.pane(id), 0, false));
        detail = `${how}; ${tail ? `last output: ${tail}` : LOST_OUTPUT}`;
      }
    } catch {
      // keep the generic detail
    }
    return new SessionDiedDuringStartupError(name, detail);
  }

  /**
   * Kills the session's whole process tree (every live pane), then the session. Returns as
   * soon as the processes are gone. Idempotent; sessions of other cities are never touched.
   */
  async stop(name: string, opts: OpOptions = {}): Promise<void> {
    validateSessionName(name);
    const s = await this.srv.find(name, opts.signal);
    this.input.nudges.forget(name);
    this.srv.ids.delete(name);
    if (s) await this.destroy(s.id);
  }

  private async destroy(id: string): Promise<void> {
    this.deadWithoutStatus.delete(`${this.srv.client.generation}:${id}`);
    for (const [n, r] of this.srv.ids) if (r.id === id) this.srv.ids.delete(n);
    const s = await this.srv.lookup(id).catch(() => undefined);
    const pids = s?.panes.filter((p) => p.pid > 0).map((p) => p.pid) ?? [];
    if (s) await Promise.all(s.panes.filter((p) => !p.dead && p.pid > 0).map((p) => killTree(p.pid)));
    try {
      await this.srv.tmux(["kill-session", "-t", id]);
    } catch (e) {
      if (!isAbsent(e)) throw e;
    }
    // A program whose SIGCHLD tmux missed (see lastExit) would stay a zombie in the server.
    if (pids.some(isZombie)) await this.srv.reapLostChildren();
  }

  /** The exit of a session whose program ended (kept until stop or the next start). */
  async lastExit(name: string, opts: OpOptions = {}): Promise<ExitStatus | undefined> {
    validateSessionName(name);
    let s = await this.srv.find(name, opts.signal);
    if (!s || isLive(s)) return undefined;
    // tmux marks a pane dead when its pty closes and records the exit only once it reaps
    // the child. A tmux linked with libutempter can miss that SIGCHLD (the utempter helper
    // resets SIGCHLD while it runs, exactly when a pane closes) and then never reaps the
    // child until another one exits: make it fork a trivial job, whose SIGCHLD runs tmux's
    // waitpid(WAIT_ANY) loop. Until the exit is known the answer is "not known yet"; past a
    // grace period it is reported as a death by an unknown signal.
    if (s && !hasExitInfo(s.panes[0])) await this.srv.reapLostChildren();
    for (let i = 0; i < 10 && s && !hasExitInfo(s.panes[0]); i++) {
      await sleep(STATE_POLL_MS, undefined, { signal: opts.signal });
      s = await this.srv.find(name, opts.signal);
    }
    const pane = s?.panes[0];
    if (!s || !pane || isLive(s)) return undefined;
    if (!hasExitInfo(pane)) {
      const key = `${this.srv.client.generation}:${s.id}`;
      const first = this.deadWithoutStatus.get(key) ?? Date.now();
      this.deadWithoutStatus.set(key, first);
      if (Date.now() - first < EXIT_STATUS_GRACE_MS) return undefined;
    }
    // tmux 3.3 reports a status only for normal exits; a death time without one is a signal.
    const signal =
      pane.exitStatus === undefined
        ? pane.exitSignal !== undefined
          ? (signalName(pane.exitSignal) ?? String(pane.exitSignal))
          : "unknown"
        : null;
    const at = pane.deadAt ?? s.activity;
    return { code: pane.exitStatus ?? null, signal, at: at > 0 ? new Date(at * 1000) : new Date() };
  }
}

/** True when `pid` exists as a zombie (exited, not yet reaped by its parent). */
function isZombie(pid: number): boolean {
  return readStat(pid)?.state === "Z";
}

/** True when tmux has reaped the pane's program (it then records a death time, and a status for exits). */
function hasExitInfo(pane: SessionInfo["panes"][number] | undefined): boolean {
  return (
    pane !== undefined &&
    (pane.exitStatus !== undefined || pane.exitSignal !== undefined || pane.deadAt !== undefined)
  );
}
