/**
 * What a session store conformance case is: the store target under test
 * ({@link StoreTarget}), what each case receives ({@link StoreCaseContext}: stores on one
 * fresh database, a fake clock) and the case itself ({@link StoreCase}). The cases of this
 * folder depend on this alone; the runner and the targets are ../store.ts.
 */
import type { LockHolder, SessionStore, StoreOpenOptions } from "../../internal/session/store.js";

/** A store implementation under test: one fresh database per case. */
export interface StoreTarget {
  /** Opens a store on this target's database; every call in one case shares the database. */
  open(opts: StoreOpenOptions): Promise<SessionStore>;
  /** Writes a raw lock row as if `holder` held `name` (simulates other processes and hosts). */
  plantLock?(actorKey: string, name: string, holder: LockHolder): Promise<void>;
  /** Removes the database. */
  cleanup(): Promise<void>;
}

/** Makes a fresh {@link StoreTarget}. */
export type StoreTargetFactory = () => Promise<StoreTarget>;

/** A controllable clock shared by every store a case opens. */
export interface FakeClock {
  now(): number;
  advance(ms: number): void;
}

/** Handed to every case. */
export interface StoreCaseContext {
  /** Opens a store for `actor` (default `"actor-a"`) on the case's database, using the fake clock. */
  open(actor?: string, extra?: Omit<StoreOpenOptions, "actor" | "now">): Promise<SessionStore>;
  /** Opens a single-tenant store on the case's database. */
  openSingle(): Promise<SessionStore>;
  readonly clock: FakeClock;
  readonly target: StoreTarget;
}

/** One conformance case. */
export interface StoreCase {
  /** Stable id (`group.behaviour`). */
  readonly id: string;
  /** `"<method>: <behaviour>"`. */
  readonly title: string;
  /** Target extras the case needs; it is skipped without them. */
  readonly requires?: readonly "plantLock"[];
  run(ctx: StoreCaseContext): Promise<void>;
}

/** The fake clock's start: 2023-11-14T22:13:20Z. */
export const CLOCK_START = 1_700_000_000_000;
