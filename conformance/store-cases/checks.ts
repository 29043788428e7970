/**
 * The assertions and builders the store conformance cases share: a rejection by code or
 * class, a new session's fields, a dead pid, a planted lock holder, a compare-and-set
 * transition.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { describeError, type GcErrorCode, isGcError } from "../../internal/base/errors.js";
import type { LifecycleState } from "../../internal/session/lifecycle.js";
import { processStartTime } from "../../internal/session/lock.js";
import type { LockHolder, NewSession, SessionRecord, SessionStore } from "../../internal/session/store.js";
import { CLOCK_START } from "./case.js";

export async function rejectsCode(p: Promise<unknown>, code: GcErrorCode, what: string): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    if (isGcError(e, code)) return e;
    throw new assert.AssertionError({ message: `${what}: expected ${code}, got ${describeError(e)}` });
  }
  throw new assert.AssertionError({ message: `${what}: expected rejection with ${code}, but it resolved` });
}

export async function rejectsType(
  p: Promise<unknown>,
  type: new (...a: never[]) => Error,
  what: string,
): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (e instanceof type) return;
    throw new assert.AssertionError({ message: `${what}: expected ${type.name}, got ${describeError(e)}` });
  }
  throw new assert.AssertionError({
    message: `${what}: expected rejection with ${type.name}, but it resolved`,
  });
}

export function session(name: string, extra: Partial<NewSession> = {}): NewSession {
  return { name, agent: "worker", provider: "fake", ...extra };
}

export async function make(
  store: SessionStore,
  name = "s1",
  extra: Partial<NewSession> = {},
): Promise<SessionRecord> {
  return store.create(session(name, extra));
}

export function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", ""]);
  assert.ok(r.pid, "could not spawn a short-lived process");
  return r.pid;
}

export function holder(extra: Partial<LockHolder>): LockHolder {
  return {
    pid: process.pid,
    host: hostname(),
    startTime: processStartTime(process.pid),
    token: `planted-${Math.random()}`,
    purpose: "planted",
    acquiredAt: CLOCK_START,
    leaseUntil: CLOCK_START + 30_000,
    ...extra,
  };
}

/** Applies `to` with compare-and-set from whatever the record's state is now. */
export async function go(store: SessionStore, name: string, to: LifecycleState, reason = `to ${to}`) {
  const cur = await store.get(name);
  assert.ok(cur, `${name} must exist`);
  return store.update(name, cur.version, { transition: { to, reason } });
}
