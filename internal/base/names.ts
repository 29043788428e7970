/**
 * Name validation shared by config, providers and the CLI. Session, agent and metadata
 * key names are checked before any backend sees them, so no hostile value ever reaches a
 * command line. Pure.
 */
import { InvalidNameError } from "./errors.js";

/** Longest session or agent name accepted. */
export const MAX_NAME_LENGTH = 128;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const META_KEY_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** Why `name` is not a valid session/agent name, or `undefined` when it is valid. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "must not be empty";
  if (name.length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters`;
  if (!NAME_RE.test(name)) return "must match [A-Za-z0-9][A-Za-z0-9._-]*";
  return undefined;
}

/** @throws InvalidNameError unless `name` is a valid session name. */
export function validateSessionName(name: string): void {
  const why = nameProblem(name);
  if (why) throw new InvalidNameError("session name", name, why);
}

/** @throws InvalidNameError unless `key` is a valid metadata key. */
export function validateMetaKey(key: string): void {
  if (key.length === 0 || key.length > MAX_NAME_LENGTH || !META_KEY_RE.test(key)) {
    throw new InvalidNameError("metadata key", key, "must match [A-Za-z0-9_][A-Za-z0-9_.-]* (≤ 128)");
  }
}
