/**
 * What a provider conformance case is: the target a provider under test supplies
 * ({@link ConformanceTarget}), what each case receives ({@link CaseContext}), the case itself
 * ({@link ConformanceCase}) and how a case ends as skipped ({@link CaseSkip}). The cases of
 * this folder depend on this alone; the runner is ../harness.ts.
 */
import type { Provider, ProviderCapabilities, StartConfig } from "../../internal/runtime/provider.js";

/** What a provider under test supplies to the suite. */
export interface ConformanceTarget {
  /** Provider label shown in reports (`tmux`, `exec:/path`, …). */
  readonly label: string;
  readonly provider: Provider;
  /** A prefix unique to this run; every session name the suite creates starts with it. */
  readonly namePrefix: string;
  /** Multiplies every wait (slow remote backends raise it). Default 1. */
  readonly timeScale?: number | undefined;
  /**
   * A start config that runs POSIX-sh `command` in a fresh, empty work dir (hooks run in
   * that work dir too). `extra` overrides fields.
   */
  makeConfig(command: string, extra?: Partial<StartConfig>): Promise<StartConfig>;
  /**
   * Reads a file the session wrote, relative to its work dir; `undefined` when absent.
   * Absent when the target cannot observe session files at all: cases that read one are
   * then skipped with {@link ConformanceTarget.noFilesReason}.
   */
  readFile?(name: string, config: StartConfig, rel: string): Promise<string | undefined>;
  /** Why session files cannot be read (shown as the skip reason when `readFile` is absent). */
  readonly noFilesReason?: string | undefined;
  /**
   * The exec protocol level the target speaks (exec targets only). Cases needing a higher
   * {@link ConformanceCase.protocol} are skipped. Absent: every level (native providers).
   */
  readonly protocol?: number | undefined;
  /** Whether a process id (as the session program sees it) is alive. Absent: those checks skip. */
  pidAlive?(name: string, pid: number): Promise<boolean>;
  /** Creates a session on the same backend that this city does not own; resolves to its cleanup. */
  createForeign?(name: string): Promise<() => Promise<void>>;
  /** Releases everything the target created (servers, temp dirs). */
  cleanup?(): Promise<void>;
}

/** What a case may require beyond the mandatory contract. */
export type Requirement = keyof ProviderCapabilities | "pidAlive" | "foreign";

/** Handed to every case. */
export interface CaseContext {
  readonly target: ConformanceTarget;
  readonly provider: Provider;
  /** A fresh session name, never a prefix of another (the stem, if given, is added before a unique suffix). */
  newName(stem?: string): string;
  /** `target.makeConfig`, with the session stopped after the case. */
  config(command: string, extra?: Partial<StartConfig>): Promise<StartConfig>;
  /** Starts `name` and registers its cleanup. */
  start(name: string, config: StartConfig): Promise<void>;
  /** A local temp dir removed after the case. */
  localDir(): Promise<string>;
  /** Registers cleanup run after the case, even on failure (last in, first out). */
  defer(fn: () => Promise<unknown> | unknown): void;
  /** Polls `fn` until it returns a value other than `undefined`/`false`, or throws the last failure. */
  eventually<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  /** Reads a session file. */
  read(name: string, config: StartConfig, rel: string): Promise<string | undefined>;
  /** Milliseconds scaled by the target's time scale. */
  ms(n: number): number;
}

/** One conformance case. */
export interface ConformanceCase {
  /** Stable id (`group.behaviour`), usable with `--only`. */
  readonly id: string;
  /** `"<method>: <behaviour>"`. */
  readonly title: string;
  readonly requires?: readonly Requirement[];
  /**
   * The exec protocol level the case needs: 1 (the default) = what a v1 script promises,
   * with what gc does for v1 (prompt in `command`, post-start check, framed metadata…);
   * 2 = behaviour only a v2 script can give. Native providers run every level.
   */
  readonly protocol?: 1 | 2;
  run(ctx: CaseContext): Promise<void>;
}

/**
 * Thrown (by `ctx.read` when the target cannot observe session files) to end a case as
 * skipped with a reason instead of failed.
 */
export class CaseSkip extends Error {
  override readonly name = "CaseSkip";
}
