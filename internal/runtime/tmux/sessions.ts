/**
 * Reading tmux's view of sessions: the one `list-panes` format the provider uses for every
 * lookup and listing, its strict parser, the ownership tag, and tmux error classification.
 * Pure; used by the tmux provider.
 */
import { nameProblem } from "../../base/names.js";
import { TmuxCommandError, TmuxConnectionError, TmuxGenerationError, TmuxNoServerError } from "./errors.js";
import { fromHex, tmuxSessionName, toHex } from "./quote.js";

/** One pane of a session. */
export interface PaneInfo {
  readonly id: string;
  readonly pid: number;
  readonly dead: boolean;
  /** Exit status of a dead pane, when tmux knows it. */
  readonly exitStatus?: number | undefined;
  /** Signal number that killed a dead pane, when tmux reports it (tmux ≥ 3.4). */
  readonly exitSignal?: number | undefined;
  /** When the pane died (epoch seconds), when tmux reports it. */
  readonly deadAt?: number | undefined;
}

/** One tmux session as seen in a single observation. */
export interface SessionInfo {
  /** Session id (`$N`), stable for the server's lifetime and never reused. */
  readonly id: string;
  readonly tmuxName: string;
  /** The gc name when this city owns the session; `undefined` for foreign sessions. */
  readonly name: string | undefined;
  readonly panes: readonly PaneInfo[];
  /** Number of attached clients. */
  readonly attached: number;
  /** Last output (epoch seconds, max over windows). */
  readonly activity: number;
  readonly workDir?: string | undefined;
  readonly readyPrefix?: string | undefined;
}

const FIELDS = [
  "session_id",
  "session_name",
  "@gc_city",
  "@gc_name",
  "@gc_workdir",
  "@gc_prefix",
  "pane_id",
  "pane_pid",
  "pane_dead",
  "pane_dead_status",
  "pane_dead_signal",
  "pane_dead_time",
  "session_attached",
  "window_activity",
] as const;

/** The `-F` format of every session lookup: one line per pane, `|`-separated. */
export const PANE_FORMAT = FIELDS.map((f) => `#{${f}}`).join("|");

/**
 * The fields of a look at the running sessions (`gc status`: the provider's
 * `snapshotWithLooks`): {@link FIELDS} without the work dir, the pane pid and the exit
 * details, which tmux expands at ~1.5 ms of server CPU per field per 1,000 panes.
 */
const LOOK_FIELDS = [
  "session_id",
  "session_name",
  "@gc_city",
  "@gc_name",
  "@gc_prefix",
  "pane_id",
  "pane_dead",
  "session_attached",
  "window_activity",
] as const;

/**
 * The `-F` format of a look at the running sessions ({@link LOOK_FIELDS}); parsed by
 * {@link parseSessions} with `"look"`, its sessions carry no work dir, pane pid (0) or exit
 * details.
 */
export const LOOK_FORMAT = LOOK_FIELDS.map((f) => `#{${f}}`).join("|");

/** Which format a listing was made with. */
export type ListingFormat = "pane" | "look";

/**
 * The value of `@gc_city` for `city`: the name itself when it is a plain word (readable in
 * `tmux show`), else a hex form, so the value never contains the field separator.
 */
export function ownerTag(city: string): string {
  return /^[A-Za-z0-9._-]+$/.test(city) ? city : `hex-${toHex(city)}`;
}

/** True when a session is running: some pane's program is alive. */
export function isLive(s: SessionInfo): boolean {
  return s.panes.some((p) => !p.dead);
}

const DIGITS = /^\d+$/;
const SESSION_ID = /^\$\d+$/;
const PANE_ID = /^%\d+$/;
const optInt = (s: string): number | undefined => (DIGITS.test(s) ? Number(s) : undefined);

/** One `PANE_FORMAT` line, parsed; `null`: not a line of that format. */
interface PaneLine {
  readonly sid: string;
  readonly sname: string;
  readonly city: string;
  /** The gc name, when `@gc_name` is a valid one whose tmux mapping is the session's name. */
  readonly gcName: string | undefined;
  readonly workDir: string | undefined;
  readonly readyPrefix: string | undefined;
  readonly attached: number;
  readonly activity: number;
  readonly pane: PaneInfo;
}

/**
 * Lines parsed lately, in two generations (bounded: the older one is dropped when the newer
 * fills): a steady city's `list-panes -a` repeats nearly every line, each second.
 */
const LINE_MEMO_CAP = 8192;
const memos: Record<ListingFormat, { new: Map<string, PaneLine | null>; old: Map<string, PaneLine | null> }> =
  {
    pane: { new: new Map(), old: new Map() },
    look: { new: new Map(), old: new Map() },
  };

/** One text per field of a format's field list (a tuple of the same length). */
type FieldTexts<T extends readonly string[]> = { -readonly [K in keyof T]: string };

/** `@gc_name` when it is a valid gc name that the tmux session name `sname` spells. Pure. */
function ownedName(gcName: string, sname: string): string | undefined {
  return nameProblem(gcName) === undefined && tmuxSessionName(gcName) === sname ? gcName : undefined;
}
function parseLine(line: string): PaneLine | null {
  const f = line.split("|");
  if (f.length !== FIELDS.length) return null;
  const [
    sid,
    sname,
    city,
    gcName,
    wd,
    prefix,
    paneId,
    pid,
    dead,
    status,
    signal,
    deadTime,
    attached,
    activity,
  ] = f as FieldTexts<typeof FIELDS>;
  if (!SESSION_ID.test(sid) || !PANE_ID.test(paneId)) return null;
  return {
    sid,
    sname,
    city,
    gcName: ownedName(gcName, sname),
    workDir: wd ? fromHex(wd) : undefined,
    readyPrefix: prefix ? fromHex(prefix) : undefined,
    attached: optInt(attached) ?? 0,
    activity: optInt(activity) ?? 0,
    pane: Object.freeze({
      id: paneId,
      pid: optInt(pid) ?? 0,
      dead: dead === "1",
      exitStatus: optInt(status),
      exitSignal: optInt(signal),
      deadAt: optInt(deadTime),
    }),
  };
}

function parseLookLine(line: string): PaneLine | null {
  const f = line.split("|");
  if (f.length !== LOOK_FIELDS.length) return null;
  const [sid, sname, city, gcName, prefix, paneId, dead, attached, activity] = f as FieldTexts<
    typeof LOOK_FIELDS
  >;
  if (!SESSION_ID.test(sid) || !PANE_ID.test(paneId)) return null;
  return {
    sid,
    sname,
    city,
    gcName: ownedName(gcName, sname),
    workDir: undefined,
    readyPrefix: prefix ? fromHex(prefix) : undefined,
    attached: optInt(attached) ?? 0,
    activity: optInt(activity) ?? 0,
    pane: Object.freeze({ id: paneId, pid: 0, dead: dead === "1" }),
  };
}

function parseLineMemo(line: string, format: ListingFormat): PaneLine | null {
  const memo = memos[format];
  let parsed = memo.new.get(line);
  if (parsed !== undefined) return parsed;
  parsed = memo.old.get(line);
  if (parsed === undefined) parsed = format === "look" ? parseLookLine(line) : parseLine(line);
  if (memo.new.size >= LINE_MEMO_CAP) {
    memo.old = memo.new;
    memo.new = new Map();
  }
  memo.new.set(line, parsed);
  return parsed;
}

/**
 * Parses `list-panes … -F PANE_FORMAT` output (or, with `"look"`, `-F LOOK_FORMAT`) into
 * sessions (in first-seen order). A line with any other number of fields is skipped, so a foreign session whose name contains
 * the separator can never be mistaken for another. `name` is set only for sessions tagged
 * with `tag` whose tmux name is the mapping of their recorded gc name. Pure (a line seen
 * lately is not parsed again).
 */
export function parseSessions(
  lines: readonly string[],
  tag: string,
  format: ListingFormat = "pane",
): SessionInfo[] {
  const byId = new Map<
    string,
    { -readonly [K in keyof SessionInfo]: SessionInfo[K] } & { panes: PaneInfo[] }
  >();
  for (const line of lines) {
    const l = parseLineMemo(line, format);
    if (l === null) continue;
    let entry = byId.get(l.sid);
    if (!entry) {
      entry = {
        id: l.sid,
        tmuxName: l.sname,
        name: l.city === tag ? l.gcName : undefined,
        panes: [],
        attached: l.attached,
        activity: 0,
        workDir: l.workDir,
        readyPrefix: l.readyPrefix,
      };
      byId.set(l.sid, entry);
    }
    if (l.activity > entry.activity) entry.activity = l.activity;
    entry.panes.push(l.pane);
  }
  return [...byId.values()];
}

const NOT_FOUND_RE =
  /can't find (?:session|window|pane)|no such (?:session|window|pane)|session not found|no current target/i;

/** True when tmux said the target does not exist. */
export function isNotFound(e: unknown): boolean {
  return e instanceof TmuxCommandError && NOT_FOUND_RE.test(e.output.join(" "));
}

/** True when the target does not exist, including because no server runs at all. */
export function isAbsent(e: unknown): boolean {
  return isNotFound(e) || e instanceof TmuxNoServerError;
}

/** True when a command aimed at a remembered session id no longer reaches that session. */
export function isStaleTarget(e: unknown): boolean {
  return isAbsent(e) || e instanceof TmuxGenerationError;
}

/** True when tmux refused to create a session because the name is taken. */
export function isDuplicate(e: unknown): boolean {
  return e instanceof TmuxCommandError && /duplicate session/i.test(e.output.join(" "));
}

/** True when the control connection (not the command) failed. */
export function isConnectionLost(e: unknown): boolean {
  return e instanceof TmuxConnectionError;
}
