/**
 * The Provider contract: the only way gc touches live sessions. Every backend (tmux,
 * subprocess, exec, k8s, docker, auto, hybrid, fake) implements {@link Provider}; the
 * reconciler and the CLI use nothing else. A provider never reads the city file and never
 * writes the session store. Optional extras are separate interfaces found by type guards.
 * One file over 700 lines on purpose: the contract with its capability interfaces and their
 * types is read as one.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { CensusEntry } from "../proc/census.js";
import { busyMarkersShown } from "./agent-screens.js";

/** Options accepted by every provider operation. */
export interface OpOptions {
  /** Cancels the operation. Aborting rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
}

/** A file or directory staged into the session's work dir before the program starts. */
export interface CopyEntry {
  /** Local source path (absolute). */
  readonly src: string;
  /** Destination relative to the work dir; empty = the work dir itself. */
  readonly relDst: string;
}

/**
 * Everything needed to start one session. Produced by config resolution; providers treat
 * it as read-only. Fields marked "core" or "live" are fingerprinted (see fingerprint.ts).
 */
export interface StartConfig {
  /** Shell command line the session runs (core). Empty = the provider's default shell. */
  readonly command: string;
  /** Current directory of the program. Providers create it if missing. */
  readonly workDir: string;
  /** Extra environment for the program and hooks (allow-listed keys are core). */
  readonly env: Readonly<Record<string, string>>;
  /**
   * Names (or `X_*` prefixes) of gc's own environment variables the session inherits on top
   * of the defaults (launch.ts `DEFAULT_INHERITED_ENV`); from `session.inherit_env`.
   */
  readonly inheritEnv?: readonly string[] | undefined;
  /**
   * Directory hook commands (`preStart`, `sessionSetup`, `sessionLive`) run in; the city
   * directory for local cities. Defaults to `workDir` when empty. Not fingerprinted.
   */
  readonly hookDir?: string | undefined;
  /** Readiness: a screen line starting with this prefix means the program is ready. */
  readonly readyPromptPrefix?: string | undefined;
  /** Readiness when no prefix is set: wait this long, then check the program is alive. */
  readonly readyDelayMs?: number | undefined;
  /** Process names that prove the agent is alive (for `processAlive`). */
  readonly processNames?: readonly string[] | undefined;
  /** The agent shows a bypass-permissions warning dialog at startup. */
  readonly emitsPermissionWarning?: boolean | undefined;
  /**
   * Keys that empty the program's input box; `gc run` sends them after interrupting a turn
   * (an agent may put the interrupted prompt back there). Not fingerprinted.
   */
  readonly clearInputKeys?: readonly string[] | undefined;
  /**
   * Keys that interrupt a running turn without quitting the program (`Escape` for agent CLIs
   * whose Ctrl-C quits); `gc run` sends them on timeout or cancel instead of the provider's
   * `interrupt` (Ctrl-C). Not fingerprinted.
   */
  readonly interruptKeys?: readonly string[] | undefined;
  /**
   * Regular expression sources (matched case-insensitively) shown only while the program works
   * on a turn; a screen matching one is never idle for `gc run`, `gc nudge` and queued nudges,
   * on top of the builtin markers (agent-screens.ts). Not fingerprinted.
   */
  readonly busyMarkers?: readonly string[] | undefined;
  /**
   * Regular expression sources (case-insensitive) shown when the program waits for input:
   * start counts it ready when one shows (as with `readyPromptPrefix`), and a screen showing
   * one and no busy marker is idle. Not fingerprinted.
   */
  readonly readyMarkers?: readonly string[] | undefined;
  /**
   * Regular expression sources (case-insensitive) of the program's error lines: a line at the
   * bottom of the screen matching one is the session's `work: error` (screen/work.ts), on top of
   * the builtin markers. Not fingerprinted.
   */
  readonly errorMarkers?: readonly string[] | undefined;
  /**
   * Regular expression sources (case-insensitive) of the line the program prints when a turn
   * ends: `gc run` counts a turn over only once the screen shows one it did not show before
   * the prompt (agent-screens.ts `showsNewMarker`). Not fingerprinted.
   */
  readonly turnEndMarkers?: readonly string[] | undefined;
  /**
   * The ready prompt (or a ready marker) must stay on screen this long before start counts
   * the program ready (a program that draws its input before it takes Enter). Not fingerprinted.
   */
  readonly readySettleMs?: number | undefined;
  /**
   * How a nudge of several lines is typed (`NudgeOptions.multiline`): one paste (default), or
   * each line typed and submitted on its own. Not fingerprinted.
   */
  readonly multiline?: "paste" | "lines" | undefined;
  /** Text delivered as a nudge once the program is ready. */
  readonly nudge?: string | undefined;
  /** Initial prompt passed on the command line (as an argument, never through a shell string). */
  readonly prompt?: string | undefined;
  /** Flag placed before `prompt` (e.g. `--prompt`); empty = positional argument. */
  readonly promptFlag?: string | undefined;
  /** Shell commands run before the session is created; any failure aborts `start` (core). */
  readonly preStart?: readonly string[] | undefined;
  /** Shell commands run once the program is ready (core). */
  readonly sessionSetup?: readonly string[] | undefined;
  /** Script run after `sessionSetup` with `GC_SESSION` in its env (core: its content). */
  readonly sessionSetupScript?: string | undefined;
  /** Idempotent shell commands run after start and re-applied on live drift (live). */
  readonly sessionLive?: readonly string[] | undefined;
  /** Directory whose contents are copied into the work dir before start (core). */
  readonly overlayDir?: string | undefined;
  /** Files staged into the work dir before start (core). */
  readonly copyFiles?: readonly CopyEntry[] | undefined;
  /**
   * Deadline of the whole start (`session.startup_timeout`); past it `start` rejects with
   * GC_TIMEOUT and leaves nothing. Not fingerprinted. Default 60 s.
   */
  readonly startupTimeoutMs?: number | undefined;
  /** Deadline of each hook command (`session.setup_timeout`). Not fingerprinted. Default 10 s. */
  readonly setupTimeoutMs?: number | undefined;
  /**
   * Routing providers only (`auto`, `hybrid`): the backend spec this session runs on, as
   * decided by config resolution (`routeSession`). Other providers ignore it. Core when set:
   * a changed route restarts the session on the new backend.
   */
  readonly backend?: string | undefined;
  /** Extra identity that is not part of the command, e.g. pool settings (core). */
  readonly fingerprintExtra?: Readonly<Record<string, string>> | undefined;
  /**
   * The settings of the session's concrete provider that shape each session it makes
   * (`session.docker.image`, `memory`, `session.k8s.resources`…; registry.ts
   * `sessionSettings`). Fingerprint only (core when set: an edit remakes the sessions on that
   * provider); providers take their settings from their factory, never from here.
   */
  readonly providerSettings?: Readonly<Record<string, unknown>> | undefined;
}

/** A piece of nudge content. Unknown block types are treated as text. */
export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "file_path"; readonly path: string };

/**
 * Options of `nudge`/`nudgeNow`. `raw`: type the text exactly as given; by default a
 * terminal provider neutralises terminal control in it first (screen/delivery.ts `terminalText`:
 * no escape sequence, no bracketed-paste end marker, no control key can be typed by a nudge).
 */
export interface NudgeOptions extends OpOptions {
  readonly raw?: boolean | undefined;
  /**
   * How text of several lines is typed by a terminal provider (screen/delivery.ts `deliverText`):
   * `paste` (default) as one paste submitted once; `lines` each line typed and submitted on
   * its own, each confirmed before the next. Others ignore it.
   */
  readonly multiline?: "paste" | "lines" | undefined;
}

/** What `nudge` accepts: plain text or content blocks. */
export type NudgeContent = string | readonly ContentBlock[];

/** A structured question the session is waiting on (e.g. an approval prompt). */
export interface PendingInteraction {
  readonly requestId: string;
  readonly kind: string;
  readonly prompt?: string | undefined;
  readonly options?: readonly string[] | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

/**
 * The interaction kinds that are approve/deny questions about a tool, a command or an edit:
 * an approval prompt read off the screen (`approval`) and an ACP agent's
 * `session/request_permission` (`permission`). An approval policy answers only these.
 * Everything else — a sign-in or authentication choice (`authentication` on acp), a
 * catalogued dialog (`dialog`: Codex's or Gemini's sign-in menu, an API-key field, a startup
 * dialog left on screen), any other menu (`menu`: a model choice, an unfamiliar layout) and
 * kinds a provider may invent — is an operator's interaction, left to `gc session respond`.
 */
export const APPROVAL_KINDS: readonly string[] = ["approval", "permission"];

/**
 * Whether `interaction` is a question an approval policy may answer with approve/deny
 * ({@link APPROVAL_KINDS}). Pure.
 */
export function isApprovalQuestion(interaction: PendingInteraction): boolean {
  return APPROVAL_KINDS.includes(interaction.kind);
}

/** An answer to a {@link PendingInteraction}. */
export interface InteractionResponse {
  readonly requestId?: string | undefined;
  /** e.g. `approve`, `deny`, `approve-always`, or an option label. */
  readonly action: string;
  readonly text?: string | undefined;
}

/** What a provider can really observe and do; everything else in {@link Provider} is mandatory. */
export interface ProviderCapabilities {
  /** Runs the declared program for real (false only for in-memory fakes). */
  readonly executes: boolean;
  /** `attach` hands a TTY to the session. */
  readonly attach: boolean;
  /** `isAttached` tells the truth. */
  readonly attachDetect: boolean;
  /** `getLastActivity` reports real output times. */
  readonly activity: boolean;
  /** `pending`/`respond` work ({@link InteractionProvider}). */
  readonly interaction: boolean;
  /** `waitForIdle` works ({@link IdleWaitProvider}). */
  readonly idleWait: boolean;
  /** `processAlive` inspects the session's real process tree. */
  readonly processNames: boolean;
  /** `copyTo` places files in the session's filesystem. */
  readonly copyTo: boolean;
  /** `runLive` executes `sessionLive` commands. */
  readonly runLive: boolean;
  /** `lastExit` reports how a session's program ended ({@link ExitStatusProvider}). */
  readonly exitStatus: boolean;
  /** `execCommand` runs commands in the session's environment ({@link CommandProvider}). */
  readonly exec: boolean;
}

/** What a start that succeeded did on the operator's behalf, and could not confirm. */
export interface StartReport {
  /** Startup dialogs gc answered (catalogue id and the option chosen), in order. */
  readonly answered?: readonly { readonly dialog: string; readonly chose: string }[] | undefined;
  /**
   * Why readiness went on without seeing `readyPromptPrefix` (its wait ran out), for
   * humans; absent when the prompt was seen or none was configured.
   */
  readonly unconfirmed?: string | undefined;
}

/**
 * A runtime backend. Implementations are safe for concurrent use on distinct names, and a
 * concurrent `start` of one name lets exactly one win. Names are exact: no method ever acts
 * on a session whose name merely starts with the given one. Every runtime object carries
 * the city's ownership tag; only tagged objects are listed or cleaned up.
 */
export interface Provider {
  /** Backend name (`tmux`, `subprocess`, `exec:/path`, …). */
  readonly name: string;

  /**
   * Creates session `name`: runs `preStart` (failure → {@link HookFailedError}, nothing
   * created), creates the session, waits for readiness, runs `sessionSetup` and
   * `sessionSetupScript`, delivers `nudge`, runs `sessionLive`.
   * @throws SessionExistsError when `name` is live.
   * @throws InvalidNameError when `name` is not a valid session name.
   * @throws SessionDiedDuringStartupError when the program exits before start completes.
   * Aborting `signal` rejects with its reason. Every rejection leaves nothing behind.
   * Resolves with what the start could not confirm ({@link StartReport}); a started session
   * runs whatever the report says.
   */
  start(name: string, config: StartConfig, opts?: OpOptions): Promise<StartReport>;

  /** Destroys the session and its whole process tree. Idempotent: resolves if missing. */
  stop(name: string, opts?: OpOptions): Promise<void>;

  /** Best-effort SIGINT / Ctrl-C to the foreground program. Resolves if missing. */
  interrupt(name: string, opts?: OpOptions): Promise<void>;

  /** True when the session exists and its program is alive. False for unknown names. */
  isRunning(name: string, opts?: OpOptions): Promise<boolean>;

  /**
   * Names of this city's running sessions that start with `prefix` ("" = all), from one
   * observation. Never lists a session without this city's ownership tag.
   * @throws when the backend cannot be observed (callers must not read that as "none").
   */
  listRunning(prefix: string, opts?: OpOptions): Promise<string[]>;

  /**
   * For a running session: true when `names` is empty, otherwise true when a live process
   * whose name is one of `names` is in the session's process tree. False for a missing or
   * stopped session, whatever `names` is.
   */
  processAlive(name: string, names: readonly string[], opts?: OpOptions): Promise<boolean>;

  /**
   * Delivers the exact text and submits it (Enter). Best-effort for a missing session
   * (resolves). @throws NudgeNotDeliveredError when the text could not be confirmed.
   */
  nudge(name: string, content: NudgeContent, opts?: NudgeOptions): Promise<void>;

  /** Raw key events (`Enter`, `C-c`, `Down`, `Escape`…); no implicit Enter. Resolves if missing. */
  sendKeys(name: string, keys: readonly string[], opts?: OpOptions): Promise<void>;

  /**
   * Recent screen/output text, at most `lines` lines, newest last; `lines <= 0` = all
   * scrollback. @throws SessionNotFoundError when the session does not exist.
   */
  peek(name: string, lines: number, opts?: OpOptions): Promise<string>;

  /**
   * Stores a per-session value (any UTF-8). It lives as long as the session and survives
   * controller restarts. @throws SessionNotFoundError when the session does not exist.
   */
  setMeta(name: string, key: string, value: string, opts?: OpOptions): Promise<void>;

  /** The stored value, or `undefined` when unset. @throws SessionNotFoundError when missing. */
  getMeta(name: string, key: string, opts?: OpOptions): Promise<string | undefined>;

  /** Removes a key; resolves when it was not set. @throws SessionNotFoundError when missing. */
  removeMeta(name: string, key: string, opts?: OpOptions): Promise<void>;

  /** Time of the last output, or `undefined` when unknown, unsupported or missing. */
  getLastActivity(name: string, opts?: OpOptions): Promise<Date | undefined>;

  /** Best-effort wipe of scrollback. Resolves if missing. */
  clearScrollback(name: string, opts?: OpOptions): Promise<void>;

  /**
   * Copies local `src` (file or directory) to `relDst` under the session's work dir.
   * Best-effort: resolves when the session or `src` is missing.
   */
  copyTo(name: string, src: string, relDst: string, opts?: OpOptions): Promise<void>;

  /** Runs `config.sessionLive` against the running session without restarting it. */
  runLive(name: string, config: StartConfig, opts?: OpOptions): Promise<void>;

  /**
   * Hands the caller's TTY to the session; resolves on detach.
   * @throws UnsupportedError when `capabilities().attach` is false.
   */
  attach(name: string, opts?: OpOptions): Promise<void>;

  /** True when a human terminal is attached. False when missing or unsupported. */
  isAttached(name: string, opts?: OpOptions): Promise<boolean>;

  /** What this provider can really observe. Constant for the provider's lifetime. */
  capabilities(): ProviderCapabilities;

  /** Releases connections and timers held by the provider (not the sessions). Idempotent. */
  close(): Promise<void>;
}

/** Result of {@link IdleWaitProvider.waitForIdle}. */
export type IdleResult = "idle" | "timeout" | "gone";

/** Optional: wait until the session's program is idle (e.g. back at its prompt). */
export interface IdleWaitProvider {
  /** Resolves within `timeoutMs` (a hard bound): `idle`, `timeout`, or `gone` (missing / exited). */
  waitForIdle(name: string, timeoutMs: number, opts?: OpOptions): Promise<IdleResult>;
}

/** Options of {@link SessionOutputWatch.settle}. */
export interface SettleOptions {
  /** Quiet is measured from the later of this time (ms since the epoch) and the last output. */
  readonly from: number;
  /** Only once some output later than `from` arrived (the screen cannot change otherwise). */
  readonly afterOutput: boolean;
  readonly quietMs: number;
  /** Hard bound. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** How {@link SessionOutputWatch.settle} ended; after any of them the caller reads the screen. */
export type SettleResult = "quiet" | "timeout" | "changed";

/** A session's output as it happens ({@link OutputWatchProvider.watchOutput}). */
export interface SessionOutputWatch {
  /**
   * Resolves `quiet` once the session printed nothing for `quietMs` (see {@link SettleOptions});
   * `timeout` at `timeoutMs`; `changed` when the session may have ended. Aborting rejects.
   */
  settle(o: SettleOptions): Promise<SettleResult>;
  /** Releases what the watch holds (never the session). Idempotent. */
  close(): Promise<void>;
}

/**
 * Optional: a session's output can be watched as it happens (tmux control-mode `%output`
 * notifications), so idle probes read the screen only to confirm, not on a timer.
 */
export interface OutputWatchProvider {
  /** A watch on the session's output; `undefined` when missing, not running, or not watchable. */
  watchOutput(name: string, opts?: OpOptions): Promise<SessionOutputWatch | undefined>;
}

/** Optional: structured interactions (approval prompts and the like). */
export interface InteractionProvider {
  /** The pending interaction, or `undefined` when none. */
  pending(name: string, opts?: OpOptions): Promise<PendingInteraction | undefined>;
  /** Answers the pending interaction. @throws when nothing is pending or ids differ. */
  respond(name: string, response: InteractionResponse, opts?: OpOptions): Promise<void>;
}

/**
 * Optional: the pending interactions of many sessions from one observation (a fixed number
 * of backend round trips, whatever the number of sessions; screens that printed nothing since
 * the provider last looked are not read again).
 */
export interface BatchInteractionProvider {
  /**
   * Pending interactions of those of `names` that run and wait on one; sessions that are
   * missing, stopped or waiting on nothing are absent from the map.
   * @throws when the backend cannot be observed.
   */
  pendingAll(names: readonly string[], opts?: OpOptions): Promise<Map<string, PendingInteraction>>;
}

/**
 * One look at a running session for the work classifier (internal/runtime/screen/work.ts): the
 * screen and the interaction read from the same capture, or the turn state its protocol
 * reports. Fields a provider cannot observe are absent.
 */
export interface SessionLook {
  /** The visible screen (the capture its interaction was read from). */
  readonly screen?: string | undefined;
  /** The interaction waiting on that screen (or on the protocol). */
  readonly interaction?: PendingInteraction | undefined;
  /** Time of the last output. */
  readonly lastActivity?: Date | undefined;
  /** The ready prompt the session declared, when the provider keeps it (tmux does). */
  readonly readyPromptPrefix?: string | undefined;
  /**
   * The turn state a protocol reports (ACP): `busy` while a turn runs; `error`, the agent's
   * own message when its last turn (or the session) failed. Overrides screen reading.
   */
  readonly turn?: { readonly busy: boolean; readonly error?: string | undefined } | undefined;
}

/**
 * Optional: {@link SessionLook}s of many running sessions from one observation (the one
 * {@link BatchInteractionProvider.pendingAll} takes: screens that printed nothing since the
 * provider last looked are not read again).
 */
export interface LookProvider {
  /** Looks of those of `names` that run; missing or stopped sessions are absent. @throws when the backend cannot be observed. */
  look(names: readonly string[], opts?: OpOptions): Promise<Map<string, SessionLook>>;
}

/** Optional: deliver a nudge without any idle heuristic. */
export interface ImmediateNudgeProvider {
  nudgeNow(name: string, content: NudgeContent, opts?: NudgeOptions): Promise<void>;
}

/** How a session's program ended. */
export interface ExitStatus {
  /** Exit code, or `null` when killed by a signal. */
  readonly code: number | null;
  readonly signal: string | null;
  readonly at: Date;
}

/** Optional: remembers how a session's program ended until `stop` (or a new `start`). */
export interface ExitStatusProvider {
  /** The exit of a session that is no longer running, or `undefined` (running, unknown, missing). */
  lastExit(name: string, opts?: OpOptions): Promise<ExitStatus | undefined>;
}

/** How a session that stopped running ended, as its provider saw it ({@link SessionEndProvider}). */
export type SessionEnd = "program" | "infrastructure";

/**
 * Optional: tells how a session that is no longer running ended, for a provider that cannot
 * report its program's exit status but can tell the program's own end from a kill from
 * outside the session (docker: the container's exit code is its console client's, not the
 * program's). The reconciler restarts a recorded-running session that ended with
 * `infrastructure` at once — no crash counted, no backoff, never quarantined — exactly like
 * one whose tmux server, holder or pod went away; `program` and `undefined` are crashes.
 */
export interface SessionEndProvider {
  /**
   * `program` when the session's own program ended (any exit code, a signal, the OOM
   * killer); `infrastructure` when the session was ended from outside it (its engine or
   * backend stopped or restarted, its container killed or removed); `undefined` while it
   * runs, or when the provider cannot tell. Answer `infrastructure` only when sure: a
   * program that ends itself must never escape the crash loop's backoff and quarantine.
   */
  sessionEnd(name: string, opts?: OpOptions): Promise<SessionEnd | undefined>;
}

/** Options for {@link CommandProvider.execCommand}. */
export interface ExecCommandOptions extends OpOptions {
  readonly stdin?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  readonly timeoutMs?: number | undefined;
}

/** Result of running a command in a session's environment. */
export interface ExecCommandResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Optional: run a command in the session's environment (its dir, pod or container). */
export interface CommandProvider {
  /** Runs `argv` (no shell) beside the session. @throws SessionNotFoundError when missing. */
  execCommand(name: string, argv: readonly string[], opts?: ExecCommandOptions): Promise<ExecCommandResult>;
}

/** One session as seen by a single backend observation. */
export interface SessionSnapshot {
  readonly name: string;
  readonly running: boolean;
  readonly attached?: boolean | undefined;
  readonly lastActivity?: Date | undefined;
}

/** Optional: one observation of every session of this city, with status details. */
export interface SnapshotProvider {
  /** Like `listRunning` but with details. @throws when the backend cannot be observed. */
  snapshot(prefix: string, opts?: OpOptions): Promise<SessionSnapshot[]>;
}

/**
 * Optional: {@link SnapshotProvider.snapshot} and the {@link LookProvider.look} of every
 * running session it lists, from ONE observation (tmux: one `list-panes`, where the two
 * calls take one each). `gc status` observes a city this way.
 */
export interface SnapshotLookProvider {
  /** The snapshot of `prefix`'s sessions and a look at each running one. @throws when the backend cannot be observed. */
  snapshotWithLooks(
    prefix: string,
    opts?: OpOptions,
  ): Promise<{ readonly sessions: SessionSnapshot[]; readonly looks: Map<string, SessionLook> }>;
}

/**
 * Optional: tears down backend infrastructure this city owns once its sessions are gone (the
 * city's tmux server and socket, idle holders, state files), so `gc stop` leaves nothing.
 */
export interface BackendShutdownProvider {
  /** Stops every session of this city and then the city's backend. Idempotent. */
  shutdown(opts?: OpOptions): Promise<void>;
}

/**
 * Optional: brings up the backend this city's sessions run on (the city's tmux server) ahead
 * of the first start, so a controller can do it while it opens its store and plans. Creates
 * no session; idempotent; a failure is the first start's to report.
 */
export interface BackendPrepareProvider {
  prepare(opts?: OpOptions): Promise<void>;
}

/**
 * Optional: lists every live process of this city's backend — tagged sessions or not, the
 * backend's own processes (a tmux server, holders) and all their descendants — from the
 * process table, without talking to the backend. `gc stop` proves with it that nothing of the
 * city is left.
 */
export interface CensusProvider {
  census(): Promise<CensusEntry[]>;
}

/**
 * Optional, for providers whose sessions are local processes: kills the orphans of sessions
 * `names` — processes of a previous incarnation still carrying this city's owner tag and one
 * of those session names, outside every live backend tree (re-parented to init when their
 * tmux server or holder was lost) — found by one census however many names. Never touches a
 * live session's processes, another city's, a controller or gc itself. Resolves what was
 * killed, each entry with its `session` (empty when nothing was found).
 */
export interface OrphanKillProvider {
  killOrphans(names: readonly string[]): Promise<CensusEntry[]>;
}

/**
 * Optional: tells when the backend under this city's sessions went away (the tmux server
 * exited), so the controller can recover at once instead of at its next interval.
 */
export interface BackendWatchProvider {
  /** Calls `fn` on each loss; returns the unsubscribe. */
  onBackendLost(fn: () => void): () => void;
}

function hasMethods(p: object, ...names: string[]): boolean {
  const rec = p as Record<string, unknown>;
  return names.every((n) => typeof rec[n] === "function");
}

/** Type guard for {@link IdleWaitProvider}. */
/** A provider that shows a session's screen with its colours (for the dashboard). */
export interface StyledPeekProvider {
  /** Like `peek`, with colours and attributes kept as SGR escape sequences. */
  peekStyled(name: string, lines: number, opts?: OpOptions): Promise<string>;
}

/** A piece of a session's raw output stream ({@link OutputStreamProvider.output}). */
export interface OutputChunk {
  readonly data: string;
  readonly next: number;
  readonly truncated: boolean;
  readonly cols: number;
  readonly rows: number;
}

/** A provider that exposes a session's raw output stream (offsets into a bounded ring). */
export interface OutputStreamProvider {
  /**
   * Raw output since byte offset `since`, with the next offset; `truncated` when older
   * output was already dropped; `cols`×`rows`, the terminal size the output is laid out for
   * (its cursor movements assume it). `undefined` when the session is missing.
   */
  output(name: string, since: number, opts?: OpOptions): Promise<OutputChunk | undefined>;
}

/** One tool call of a turn. */
export interface TurnToolCall {
  readonly id: string;
  title: string;
  readonly kind: string;
  status: string;
}

/**
 * One prompt turn as gc reports it (and as the ACP holder records it: acp/wire.ts). Times are
 * epoch milliseconds.
 */
export interface TurnRecord {
  readonly id: number;
  readonly prompt: string;
  state: "queued" | "running" | "done";
  readonly queuedAt: number;
  startedAt?: number;
  endedAt?: number;
  /** `end_turn`, `cancelled`, `max_tokens`, `max_turn_requests`, `refusal`. */
  stopReason?: string;
  /** Why the turn failed (the prompt was refused, the agent died). */
  error?: string;
  /** The agent's message chunks, joined. */
  reply: string;
  readonly toolCalls: TurnToolCall[];
}

/**
 * Optional capability: structured turns (providers whose sessions report exactly when a
 * prompt's turn ends and what the agent answered).
 */
export interface TurnProvider {
  /** Queues `content` as a prompt. @returns the turn's id. @throws NudgeNotDeliveredError. */
  prompt(name: string, content: NudgeContent, opts?: OpOptions): Promise<number>;
  /** The finished turn, or `undefined` when it did not end within `timeoutMs`. */
  waitTurn(name: string, turn: number, timeoutMs: number, opts?: OpOptions): Promise<TurnRecord | undefined>;
  /** Turns after `since`, oldest first (running ones included). @throws SessionNotFoundError. */
  turns(name: string, since: number, opts?: OpOptions): Promise<TurnRecord[]>;
}

/** Type guard for {@link TurnProvider}. */
export function supportsTurns(p: object): p is TurnProvider {
  const r = p as Record<string, unknown>;
  return typeof r.prompt === "function" && typeof r.waitTurn === "function" && typeof r.turns === "function";
}

export const supportsIdleWait = (p: Provider): p is Provider & IdleWaitProvider =>
  hasMethods(p, "waitForIdle");
/** Type guard for {@link OutputWatchProvider}. */
export const supportsOutputWatch = (p: Provider): p is Provider & OutputWatchProvider =>
  hasMethods(p, "watchOutput");
/** Type guard for {@link InteractionProvider}. */
export const supportsInteraction = (p: Provider): p is Provider & InteractionProvider =>
  hasMethods(p, "pending", "respond");
/** Type guard for {@link BatchInteractionProvider}. */
export const supportsPendingAll = (p: Provider): p is Provider & BatchInteractionProvider =>
  hasMethods(p, "pendingAll");
/** Type guard for {@link LookProvider}. */
export const supportsLook = (p: Provider): p is Provider & LookProvider => hasMethods(p, "look");
/** Type guard for {@link ImmediateNudgeProvider}. */
export const supportsNudgeNow = (p: Provider): p is Provider & ImmediateNudgeProvider =>
  hasMethods(p, "nudgeNow");
/** Type guard for {@link ExitStatusProvider}. */
export const supportsExitStatus = (p: Provider): p is Provider & ExitStatusProvider =>
  hasMethods(p, "lastExit");
/** Type guard for {@link SessionEndProvider}. */
export const supportsSessionEnd = (p: Provider): p is Provider & SessionEndProvider =>
  hasMethods(p, "sessionEnd");
/** Type guard for {@link CommandProvider}. */
export const supportsExecCommand = (p: Provider): p is Provider & CommandProvider =>
  hasMethods(p, "execCommand");
/** Type guard for {@link SnapshotProvider}. */
export const supportsStyledPeek = (p: Provider): p is Provider & StyledPeekProvider =>
  hasMethods(p, "peekStyled");

export const supportsOutputStream = (p: Provider): p is Provider & OutputStreamProvider =>
  hasMethods(p, "output");

export const supportsSnapshot = (p: Provider): p is Provider & SnapshotProvider => hasMethods(p, "snapshot");
/** Type guard for {@link SnapshotLookProvider}. */
export const supportsSnapshotWithLooks = (p: Provider): p is Provider & SnapshotLookProvider =>
  hasMethods(p, "snapshotWithLooks");

/**
 * Optional: a provider that routes each session to one of several backends (`auto`,
 * `hybrid`). Lets callers see, and act on, the backend behind one session.
 */
export interface RouterProvider {
  /** The backend spec session `name` is routed to (route record or last listing), or `undefined`. */
  backendOf(name: string, opts?: OpOptions): Promise<string | undefined>;
  /** The capabilities of the backend `name` is routed to; the whole's (the intersection) when unknown. */
  capabilitiesOf(name: string, opts?: OpOptions): Promise<ProviderCapabilities>;
  /** Every remembered route (recorded, or learnt from the last listing), sorted by name. */
  routedSessions(opts?: OpOptions): Promise<{ readonly name: string; readonly backend: string }[]>;
}

/** Type guard for {@link RouterProvider}. */
export const isRouter = (p: Provider): p is Provider & RouterProvider =>
  hasMethods(p, "backendOf", "capabilitiesOf", "routedSessions");

/**
 * What `p` can do for session `name`: the routed backend's capabilities under a routing
 * provider, else the provider's own.
 */
export function sessionCapabilities(
  p: Provider,
  name: string,
  opts?: OpOptions,
): Promise<ProviderCapabilities> {
  return isRouter(p) ? p.capabilitiesOf(name, opts) : Promise.resolve(p.capabilities());
}

/** Type guard for {@link BackendShutdownProvider}. */
export const supportsShutdown = (p: Provider): p is Provider & BackendShutdownProvider =>
  hasMethods(p, "shutdown");

/** Type guard for {@link BackendPrepareProvider}. */
export const supportsPrepare = (p: Provider): p is Provider & BackendPrepareProvider =>
  hasMethods(p, "prepare");

/** Type guard for {@link BackendWatchProvider}. */
export const supportsBackendWatch = (p: Provider): p is Provider & BackendWatchProvider =>
  hasMethods(p, "onBackendLost");

/** Type guard for {@link CensusProvider}. */
export const supportsCensus = (p: Provider): p is Provider & CensusProvider => hasMethods(p, "census");

/** Type guard for {@link OrphanKillProvider}. */
export const supportsOrphanKill = (p: Provider): p is Provider & OrphanKillProvider =>
  hasMethods(p, "killOrphans");

/** Options of {@link interruptTurn}. */
export interface InterruptOptions extends OpOptions {
  /** The session's own busy markers (preset `busy_markers`), beside the builtin ones. */
  readonly busyMarkers?: readonly string[] | undefined;
  /** How long a key may take to show on screen before the next one is pressed anyway. Default 2 000 ms. */
  readonly keyAnswerMs?: number | undefined;
  /** Screen poll interval between keys. Default 50 ms. */
  readonly pollMs?: number | undefined;
}

/**
 * Interrupts the running turn of `name` the way its program wants: the session's declared
 * `interruptKeys` (`Escape` for agent CLIs whose Ctrl-C quits), else the provider's
 * `interrupt` (Ctrl-C; session/cancel on acp, whose keys op maps Escape to a cancel too).
 * Several keys (opencode takes a second Escape: "esc again to interrupt") are pressed one
 * at a time, never in one write (two ESC bytes read together are one Alt-Escape): the next
 * key once the screen shows the previous one was taken — its busy markers changed (at most
 * `keyAnswerMs` later; a spinner's frames are no evidence) — and none once the screen shows
 * no busy marker (the turn has ended, or never visibly ran: then only the first key goes).
 */
export async function interruptTurn(
  provider: Provider,
  name: string,
  interruptKeys: readonly string[] | undefined,
  opts: InterruptOptions = {},
): Promise<void> {
  if (!interruptKeys || interruptKeys.length === 0) return provider.interrupt(name, opts);
  const { signal } = opts;
  const pollMs = opts.pollMs ?? 50;
  const shown = async () =>
    busyMarkersShown(await provider.peek(name, 50, opts), opts.busyMarkers).join("\n");
  for (const [i, key] of interruptKeys.entries()) {
    const before = i + 1 < interruptKeys.length ? await shown() : undefined;
    await provider.sendKeys(name, [key], opts);
    // The last key, or no turn visibly running (a drain of an idle session): done.
    if (before === undefined || before === "") break;
    const by = Date.now() + (opts.keyAnswerMs ?? 2_000);
    let now = before;
    while (now === before && Date.now() < by) {
      await sleep(pollMs, undefined, { signal });
      now = await shown();
    }
    if (now === "") break;
  }
}

/**
 * Joins content blocks into the text a session receives: text blocks verbatim, file
 * blocks as `[File: <basename>]`, separated by newlines. Pure.
 */
export function flattenContent(content: NudgeContent): string {
  if (typeof content === "string") return content;
  const parts: string[] = [];
  for (const b of content) {
    if (b.type === "file_path") {
      if (b.path) parts.push(`[File: ${b.path.split("/").pop() ?? b.path}]`);
    } else if (b.text) {
      parts.push(b.text);
    }
  }
  return parts.join("\n");
}
