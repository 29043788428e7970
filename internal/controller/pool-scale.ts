/**
 * The operator's pool sizes (`gc scale AGENT N`), kept in `<city>/.gc/scale.json` (0600)
 * so they survive controller restarts. The city file bounds them: a pool runs
 * clamp(N, min_active_sessions, max_active_sessions) instances; without an entry, `min`.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { AgentConfig } from "../config/schema.js";
import { poolBounds, poolInstanceName } from "../config/validate.js";

const SCALE_FILE = "scale.json";

/** Requested instance counts by agent name. Missing or unreadable file → none. */
export async function readPoolScale(stateDir: string): Promise<Record<string, number>> {
  try {
    const raw: unknown = JSON.parse(await readFile(join(stateDir, SCALE_FILE), "utf8"));
    if (typeof raw !== "object" || raw === null) return {};
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(raw))
      if (Number.isSafeInteger(v) && (v as number) >= 0) out[k] = v as number;
    return out;
  } catch {
    return {};
  }
}

/** Records that `agent` should run `count` instances (atomic replace). */
export async function writePoolScale(stateDir: string, agent: string, count: number): Promise<void> {
  const scale = await readPoolScale(stateDir);
  scale[agent] = count;
  const tmp = join(stateDir, `${SCALE_FILE}.${process.pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(scale, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, join(stateDir, SCALE_FILE));
}

/** Instance numbers beyond `min` that `requested` asks for, within `max`. Pure. */
export function extraInstances(
  bounds: { min: number; max: number },
  requested: number | undefined,
): number[] {
  const want = Math.min(bounds.max, Math.max(bounds.min, requested ?? bounds.min));
  return Array.from({ length: want - bounds.min }, (_, i) => bounds.min + 1 + i);
}

/**
 * Pool instances the city file allows (number ≤ `max_active_sessions`) but the operator's
 * recorded scale keeps down (number > clamp(requested, min, max)). Stopping one is what
 * `gc scale` asked for, not an effect of a file edit: the mass-stop guard never counts it. A
 * pool without a recorded scale has none (its instances above `min` go only by a file edit).
 * Pure.
 */
export function scaledAwayInstances(
  agents: readonly AgentConfig[],
  scale: Readonly<Record<string, number>>,
): Set<string> {
  const out = new Set<string>();
  for (const agent of agents) {
    const bounds = poolBounds(agent);
    const requested = scale[agent.name];
    if (!bounds || requested === undefined) continue;
    const kept = bounds.min + extraInstances(bounds, requested).length;
    for (let n = kept + 1; n <= bounds.max; n++) out.add(poolInstanceName(agent.name, n));
  }
  return out;
}
