/**
 * The city's containers on the Docker engine: each session's container found by its exact
 * name and acted on only when its labels say this city owns it, removed with everything in
 * it, reached by exec (the engine's API) and by its long-lived tmux control channel (the
 * shared implementation, tmux/channels.ts), and told apart from a session that ended under
 * an operation. The container labels and naming rule live here. Shared by the provider
 * (provider.ts) and its starts (start.ts).
 */

import { setTimeout as sleep } from "node:timers/promises";
import type Dockerode from "dockerode";
import { HookFailedError } from "../../base/errors.js";
import type { ProviderFactoryOptions } from "../factory.js";
import { ownerKey } from "../identity.js";
import { tarOfPath } from "../tar.js";
import { type Channel, ChannelPool } from "../tmux/channels.js";
import { TmuxConnectionError } from "../tmux/errors.js";
import { remoteGate } from "../tmux/gate.js";
import { isGone } from "../tmux/pane.js";
import { dockerTransport } from "./channel.js";
import { Engine, type ExecResult, statusOf } from "./engine.js";
import { HOOK_SCRIPT, TMUX_SESSION } from "./scripts.js";
import { type DockerSettings, resolveSettings } from "./settings.js";

/** Label holding the owning city's identity. */
export const LABEL_CITY = "gc.city";
/** Label holding the gc session name. */
export const LABEL_SESSION = "gc.session";
/** Label holding the work dir inside the container. */
export const LABEL_WORKDIR = "gc.work_dir";
/** Label holding the declared ready prompt prefix (for idle detection). */
export const LABEL_PREFIX = "gc.ready_prefix";

/** How long one Enter of a nudge may take to show its effect. */
export const CONFIRM_MS = 1_500;

/** Container name for session `name` of the city owning `owner` (exact; never a prefix match). */
export function containerName(owner: string, name: string): string {
  const slug = owner.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 48);
  return `gc-${slug}-${name}`;
}

/** A container as the engine's inspect describes it. */
export type Info = Dockerode.ContainerInspectInfo;

/** The containers of one city on its engine. */
export class CityContainers {
  readonly settings: DockerSettings;
  readonly engine: Engine;
  /** The city's ownership key (`<name>-<id>`, identity.ts): labels, container names, filters. */
  readonly owner: string;
  /** The city's name, for humans (`GC_CITY` in sessions). */
  readonly city: string;
  readonly cityDir: string;
  /** One long-lived tmux control stream per container (by container id). */
  readonly channels: ChannelPool;

  constructor(opts: ProviderFactoryOptions) {
    this.owner = ownerKey(opts.city, opts.cityId);
    this.city = opts.city;
    this.cityDir = opts.cityDir;
    this.settings = resolveSettings(opts.settings, process.env, opts.cityDir);
    this.engine = new Engine(this.settings.socketPath);
    this.channels = new ChannelPool((id) => ({
      transport: dockerTransport(this.engine, id, this.settings.user),
      attach: TMUX_SESSION,
      commandTimeoutMs: this.settings.hookTimeoutMs,
      gate: remoteGate(`docker:${id}`),
    }));
  }

  /** The control channel into container `id` (made on first use, kept until the container goes). */
  channel(id: string): Channel {
    return this.channels.get(id);
  }

  /** The ownership label value (`gc.city=<owner>`) every container of this city carries. */
  get ownerLabel(): string {
    return `${LABEL_CITY}=${this.owner}`;
  }

  /** The exact container name of session `name`. */
  containerName(name: string): string {
    return containerName(this.owner, name);
  }

  async remove(id: string): Promise<void> {
    await this.channels.drop(id);
    const d = await this.engine.docker();
    for (let i = 0; ; i++) {
      try {
        await d.getContainer(id).remove({ force: true, v: true });
        return;
      } catch (e) {
        const st = statusOf(e);
        if (st === 404) return;
        // 409: a removal already in progress (a concurrent stop); wait for it to finish.
        if (st !== 409 || i >= 100) throw this.engine.wrap(`removing container ${id.slice(0, 12)}`, e);
        await sleep(100);
      }
    }
  }

  /**
   * True when `e`, from an operation on container `id`'s channel, means the session ended:
   * its tmux session is gone, or the container stopped under the operation.
   */
  async endedUnder(id: string, e: unknown, signal?: AbortSignal): Promise<boolean> {
    if (isGone(e)) return true;
    if (!(e instanceof TmuxConnectionError) || signal?.aborted) return false;
    return !(await this.alive(id, signal).catch(() => true));
  }

  async upload(id: string, src: string, absDst: string): Promise<void> {
    const tar = await tarOfPath(src, absDst.replace(/^\/+/, ""), this.ownerIds());
    try {
      await this.engine.putArchive(id, tar, "/");
    } catch (e) {
      throw this.engine.wrap(`copying ${src}`, e);
    }
  }

  /** Runs one hook command in the container's work dir with the session env. @throws HookFailedError. */
  async hook(id: string, hook: string, cmd: string, workDir: string, signal: AbortSignal | undefined) {
    const r = await this.exec(id, { argv: ["/bin/sh", "-c", HOOK_SCRIPT, "gc-hook", workDir, cmd], signal });
    if (r.exitCode !== 0) {
      throw new HookFailedError(hook, `${JSON.stringify(cmd)}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
    }
  }

  /** Numeric uid/gid for uploaded files when `user` is numeric (`1000` or `1000:1000`). */
  ownerIds(): { uid?: number; gid?: number } {
    const m = /^(\d+)(?::(\d+))?$/.exec(this.settings.user ?? "");
    if (!m) return {};
    return { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
  }

  async exec(
    id: string,
    o: {
      argv: readonly string[];
      stdin?: string | undefined;
      signal?: AbortSignal | undefined;
      timeoutMs?: number | undefined;
      keepOutputOnCut?: boolean | undefined;
    },
  ): Promise<ExecResult> {
    try {
      return await this.engine.exec(id, {
        argv: o.argv,
        stdin: o.stdin,
        user: this.settings.user,
        timeoutMs: o.timeoutMs ?? this.settings.hookTimeoutMs,
        signal: o.signal,
        keepOutputOnCut: o.keepOutputOnCut,
      });
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason;
      throw this.engine.wrap(`exec in ${id.slice(0, 12)}`, e);
    }
  }

  /** An exec that yields `undefined` when the container is gone or not running (404/409, or a refusal once it stopped). */
  async execQuiet(
    id: string,
    argv: readonly string[],
    signal?: AbortSignal,
    stdin?: string,
  ): Promise<ExecResult | undefined> {
    try {
      return await this.engine.exec(id, {
        argv,
        stdin,
        user: this.settings.user,
        timeoutMs: this.settings.hookTimeoutMs,
        signal,
      });
    } catch (e) {
      const st = statusOf(e) ?? statusOf((e as { cause?: unknown }).cause);
      if (st === 404 || st === 409) return undefined;
      if (signal?.aborted) throw signal.reason;
      // A container that stopped between the exec's create and start is refused with a 500
      // ("container … is not running"): that is the container's end, not an engine failure.
      if (!(await this.alive(id, signal).catch(() => true))) return undefined;
      throw this.engine.wrap(`exec in ${id.slice(0, 12)}`, e);
    }
  }

  /**
   * True while the session's program runs: its tmux session exists (it ends with the
   * program). The container outlives a program that exits at once by a moment (its console
   * client has yet to notice), so a running container alone proves nothing during start.
   */
  async programAlive(id: string, signal?: AbortSignal): Promise<boolean> {
    if (!(await this.alive(id, signal))) return false;
    try {
      const st = await this.channel(id).read(signal);
      return st !== undefined && !st.dead;
    } catch (e) {
      if (await this.endedUnder(id, e, signal)) return false;
      throw e;
    }
  }

  async alive(id: string, signal?: AbortSignal): Promise<boolean> {
    const d = await this.engine.docker();
    try {
      const info = (await d.getContainer(id).inspect({ abortSignal: signal } as never)) as unknown as Info;
      return info.State.Running;
    } catch (e) {
      if (statusOf(e) === 404) return false;
      throw e;
    }
  }

  /** True when container `c` carries this city's labels for session `name`. */
  owns(c: Info, name: string): boolean {
    const l = c.Config.Labels ?? {};
    return l[LABEL_CITY] === this.owner && l[LABEL_SESSION] === name;
  }

  /** The container of session `name` when this city owns it. */
  async find(name: string, signal?: AbortSignal): Promise<Info | undefined> {
    const c = await this.engine.inspect(this.containerName(name), signal);
    return c && this.owns(c, name) ? c : undefined;
  }
}
