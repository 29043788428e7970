/**
 * Conformance targets of the routing providers (`auto`, `hybrid`): a {@link RoutingProvider}
 * over the real targets of its backends (each with its private tmux server, state dir and
 * temp dirs). Sessions are spread over the backends — `auto` by giving each new config the
 * next backend in turn (as config resolution does per agent), `hybrid` by its name pattern —
 * so every case runs on a real backend through the router. Cleanup cleans every backend.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "../internal/base/errors.js";
import { pidAlive } from "../internal/proc/kill.js";
import { type RouteRules, RoutingProvider, routeSession } from "../internal/runtime/auto/index.js";
import type { ConformanceTarget } from "./harness.js";

/** One backend of a routing target: its spec (the target's label) and its own target. */
interface Part {
  readonly spec: string;
  readonly target: ConformanceTarget;
}

/** The reference exec script, found upward from this module (source tree or dist/). */
export function referenceScript(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "contrib", "session-scripts", "gc-session-tmux");
    if (existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir)
      throw new UsageError("contrib/session-scripts/gc-session-tmux not found above the conformance suite");
    dir = up;
  }
}

/** Builds the parts one by one; on a failure cleans the ones already made. */
async function buildParts(makers: readonly (() => Promise<ConformanceTarget>)[]): Promise<Part[]> {
  const parts: Part[] = [];
  try {
    for (const make of makers) {
      const target = await make();
      parts.push({ spec: target.label, target });
    }
    return parts;
  } catch (e) {
    await cleanParts(parts);
    throw e;
  }
}

async function cleanParts(parts: readonly Part[]): Promise<void> {
  for (const { target } of parts) {
    await target.provider.close().catch(() => undefined);
    await target.cleanup?.().catch(() => undefined);
  }
}

/**
 * A routing target of `kind` over the targets `makers` build. `rulesOf` gets the backends'
 * specs in order. Under `auto` each config names the next backend in turn.
 */
export async function createRoutingTarget(
  kind: "auto" | "hybrid",
  makers: readonly (() => Promise<ConformanceTarget>)[],
  rulesOf: (specs: readonly string[]) => RouteRules,
  namePrefix: string,
): Promise<ConformanceTarget> {
  const parts = await buildParts(makers);
  const specs = parts.map((p) => p.spec);
  const rules = rulesOf(specs);
  const root = await mkdtemp(join(tmpdir(), `gc-${kind}-conf-`));
  const provider = new RoutingProvider({
    name: kind,
    rules,
    backends: new Map(parts.map((p) => [p.spec, p.target.provider])),
    open: async (spec) => {
      throw new UsageError(`backend ${spec} is not part of this target`);
    },
    stateDir: root,
    ownsBackends: false,
  });
  const partOf = (spec: string | undefined): Part => parts.find((p) => p.spec === spec) ?? (parts[0] as Part);
  let turn = 0;
  const foreignPart = parts.find((p) => p.target.createForeign);
  return {
    label: `${kind} (${specs.map((s) => s.split("/").pop()).join(" + ")})`,
    provider,
    namePrefix,
    timeScale: Math.max(...parts.map((p) => p.target.timeScale ?? 1)),
    async makeConfig(command, extra) {
      if (kind === "hybrid") return (parts[0] as Part).target.makeConfig(command, extra);
      const part = parts[turn++ % parts.length] as Part;
      return { ...(await part.target.makeConfig(command, extra)), backend: part.spec, ...extra };
    },
    async readFile(name, config, rel) {
      const spec = (await provider.backendOf(name)) ?? config.backend ?? routeSession(rules, name).backend;
      const read = partOf(spec).target.readFile;
      return read ? read(name, config, rel) : undefined;
    },
    // Every backend here runs its sessions on this machine.
    pidAlive: async (_name, pid) => pidAlive(pid),
    ...(foreignPart?.target.createForeign
      ? {
          createForeign: (name: string) =>
            (foreignPart.target.createForeign as (n: string) => Promise<() => Promise<void>>)(name),
        }
      : {}),
    async cleanup() {
      await provider.close();
      await cleanParts(parts);
      await rm(root, { recursive: true, force: true });
    },
  };
}
