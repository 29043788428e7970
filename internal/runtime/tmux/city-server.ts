/**
 * The city's tmux server as the tmux provider sees it: its one control connection (started
 * with the options every session relies on, orphaned clients removed at each connect of a
 * process that may change the city, a wedged server killed), and the city's sessions on it —
 * looked up by exact target with ownership checked (`@gc_city`), their ids remembered per
 * connection generation, their panes, and who holds a name that is not ours. Shared by the provider's parts
 * (session-lifecycle.ts, session-input.ts, session-screens.ts, session-meta.ts,
 * session-commands.ts) and the provider itself.
 */
import type { ProviderFactoryOptions } from "../factory.js";
import { ownerKey } from "../identity.js";
import type { ScreenIO } from "../screen/keys.js";
import { type CommandOptions, ControlClient } from "./control-client.js";
import { attachedClients, type Pane, sendKeys, styledScreen } from "./pane.js";
import { sessionTarget } from "./quote.js";
import { killServer, removeOrphanClients, serverListening, socketArgs, socketPath } from "./server.js";
import { isAbsent, ownerTag, PANE_FORMAT, parseSessions, type SessionInfo } from "./sessions.js";
import { type ResolvedTmuxSettings, resolveSettings } from "./settings.js";

/** What the tmux client (and a server it starts) gets from gc's environment. */
const CLIENT_ENV = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TMUX_TMPDIR"];

/** The city's tmux server, its control connection and the city's sessions on it. */
export class CityServer {
  /** Resolved settings (socket, timeouts, window size). */
  readonly settings: ResolvedTmuxSettings;
  readonly cityDir: string;
  /** The city's `@gc_city` value ({@link ownerTag}). */
  readonly tag: string;
  /** The city as session env tags it: name and owner key (`GC_OWNER`). */
  readonly envCity: { readonly name: string; readonly owner: string };
  readonly client: ControlClient;
  /** Environment of every control client process the provider starts. */
  readonly clientEnv: NodeJS.ProcessEnv;
  /** Session ids of our sessions by gc name, with the connection generation they belong to. */
  readonly ids = new Map<string, { readonly id: string; readonly generation: number }>();

  constructor(opts: ProviderFactoryOptions) {
    this.cityDir = opts.cityDir;
    this.tag = ownerTag(ownerKey(opts.city, opts.cityId));
    this.envCity = { name: opts.city, owner: ownerKey(opts.city, opts.cityId) };
    this.settings = resolveSettings(opts.city, opts.settings, opts.cityId);
    const env: NodeJS.ProcessEnv = {};
    for (const k of CLIENT_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
    this.clientEnv = env;
    this.client = new ControlClient({
      socket: this.settings.socket,
      tmuxPath: this.settings.tmuxPath,
      commandTimeoutMs: this.settings.commandTimeoutMs,
      env,
      // Every (re)connect of a process that may change the city (the controller, writers)
      // also removes control clients a dead gc process left on this socket; a read-only one
      // (`gc status`) leaves them to those: its /proc scan costs ~30 ms of CPU at 1,000
      // sessions, on the path of every status.
      beforeConnect: opts.readOnly
        ? undefined
        : async () => {
            // A server not up yet (this connect starts it: a new city, or one whose server
            // was lost) has no clients, orphaned or not.
            if (!(await serverListening(socketPath(this.settings.socket, env)))) return;
            await removeOrphanClients(socketArgs(this.settings.socket), this.client);
          },
      // A server silent for a minute (every command and reconnect timing out) is wedged: it
      // is killed, and its sessions are recovered as an infrastructure loss.
      onWedged: async () => (await killServer(socketArgs(this.settings.socket))).length > 0,
      setup: [
        ["refresh-client", "-f", "no-output"],
        ["set-option", "-s", "exit-empty", "off"],
        ["set-option", "-g", "destroy-unattached", "off"],
        ["set-option", "-gw", "remain-on-exit", "on"],
        ["set-option", "-g", "history-limit", String(this.settings.historyLimit)],
      ],
    });
  }

  /** argv prefix that reaches this provider's server with a plain `tmux` (for tests and `gc attach`). */
  tmuxArgv(): string[] {
    return [this.settings.tmuxPath, "-u", ...socketArgs(this.settings.socket)];
  }

  /** One tmux command. Never starts a server unless `create` is set (only `new-session` does). */
  tmux(argv: readonly string[], opts: CommandOptions = {}): Promise<string[]> {
    return this.client.command(argv, { ...opts, create: opts.create ?? false });
  }

  /** One session by target (`=name` or `$id`), owned or not; `undefined` when missing. */
  async lookup(target: string, signal?: AbortSignal): Promise<SessionInfo | undefined> {
    try {
      const lines = await this.tmux(["list-panes", "-s", "-t", target, "-F", PANE_FORMAT], {
        signal,
        retry: true,
      });
      return parseSessions(lines, this.tag)[0];
    } catch (e) {
      if (isAbsent(e)) return undefined;
      throw e;
    }
  }

  /** The session named `name` when this city owns it. */
  async find(name: string, signal?: AbortSignal): Promise<SessionInfo | undefined> {
    const s = await this.lookup(sessionTarget(name), signal);
    if (s?.name !== name) return undefined;
    this.ids.set(name, { id: s.id, generation: this.client.generation });
    return s;
  }

  /**
   * The session id last seen for `name` on the current connection. Ids are never reused
   * within a server's life and ownership does not change, so a command on a remembered id
   * either reaches this very session or fails (then the caller looks it up again).
   */
  remembered(name: string): { readonly id: string; readonly generation: number } | undefined {
    const r = this.ids.get(name);
    return r && r.generation === this.client.generation ? r : undefined;
  }

  /** The pane of session `id` (`$N`, or a `=name` target), on connection `generation` when given. */
  pane(id: string, generation?: number): Pane {
    return { client: this.client, target: id.endsWith(":") ? id : `${id}:`, generation };
  }

  /** The pane's keyboard and its screen as a styled capture (SGR kept), for answering menus. */
  screenIO(id: string, signal: AbortSignal | undefined): ScreenIO {
    return {
      screen: () => styledScreen(this.pane(id), signal),
      sendKeys: (keys) => sendKeys(this.pane(id), keys, signal),
    };
  }

  /**
   * Terminals attached to `s`: tmux's `session_attached` also counts control clients (an
   * idle wait's watcher, see {@link idleWait}), so a non-zero count is checked client by
   * client. No round trip while nothing is attached. 0 when the session went away meanwhile.
   */
  async terminals(s: SessionInfo, signal: AbortSignal | undefined): Promise<number> {
    if (s.attached === 0) return 0;
    return attachedClients(this.client, s.id, signal).catch((e: unknown) => {
      if (isAbsent(e)) return 0;
      throw e;
    });
  }

  /**
   * Makes the server fork and reap a trivial job (a constant command, no user text): its
   * SIGCHLD makes tmux reap every exited child, including a pane whose SIGCHLD it missed.
   */
  async reapLostChildren(): Promise<void> {
    await this.tmux(["run-shell", "-b", "true"]).catch(() => undefined);
  }

  /**
   * Who holds session `name` when it is not this city's: another city sharing the tmux socket
   * (its `@gc_city` tag differs) or something gc did not start; with the fix. `undefined` when
   * it is this city's own or cannot be read.
   */
  async foreignHolder(name: string): Promise<string | undefined> {
    const owner = await this.tmux(["show-options", "-qv", "-t", sessionTarget(name), "@gc_city"]).then(
      (lines) => lines[0] ?? "",
      () => undefined,
    );
    if (owner === undefined || owner === this.tag) return undefined;
    const sock = this.settings.socketLabel;
    const who = owner ? `it belongs to another city (owner ${owner})` : "it was not started by gc";
    return `${who} on the shared tmux socket ${sock}; give this city its own socket (remove session.tmux.socket from the city file: each city then gets one of its own) or rename the session`;
  }
}
