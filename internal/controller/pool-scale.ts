/**
 * The operator's pool sizes (`gc scale AGENT N`), kept in `<city>/.gc/scale.json` (0600)
 * so they survive controller restarts. The city file bounds them: a pool runs
 * clamp(N, min_active_sessions, max_active_sessions) instances; without an entry, `min`.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

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
