/**
 * The one routing rule of the routing providers (`auto`, `hybrid`): which backend a session
 * runs on, and why. Config resolution calls it to put the decision into each session's start
 * config (so a changed route is drift, and `gc config show` can explain it); the routing
 * provider calls it only for a start that comes without a decision (conformance, tools).
 * Pure.
 */

/** How a routing provider picks a backend. Backends are concrete provider specs (`tmux`, `exec:/abs`). */
export type RouteRules =
  | {
      readonly kind: "auto";
      /** Backend of sessions whose agent declares none (`session.auto.default`). */
      readonly default: string;
    }
  | {
      readonly kind: "hybrid";
      /** `session.hybrid.local`: sessions whose name does not match `remoteMatch`. */
      readonly local: string;
      /** `session.hybrid.remote`: sessions whose name matches `remoteMatch`. */
      readonly remote: string;
      /** `session.hybrid.remote_match`, a regular expression; absent = everything is local. */
      readonly remoteMatch?: string | undefined;
    };

/** A routing decision. */
export interface Route {
  /** The concrete backend spec. */
  readonly backend: string;
  /** Why, in words for `gc config show` (names the deciding key). */
  readonly why: string;
}

/**
 * The backend of session `name`. Under `auto`: the agent's declared session provider
 * (`declared`), else `session.auto.default`. Under `hybrid`: `remote` when `remoteMatch`
 * matches the session name, else `local` (hybrid has no per-agent declarations; validation
 * refuses them).
 */
export function routeSession(rules: RouteRules, name: string, declared?: string): Route {
  if (rules.kind === "auto") {
    if (declared !== undefined) return { backend: declared, why: "the agent's session provider" };
    return { backend: rules.default, why: "session.auto.default (the agent declares no session provider)" };
  }
  const m = rules.remoteMatch;
  if (m !== undefined && new RegExp(m).test(name)) {
    return { backend: rules.remote, why: `name matches session.hybrid.remote_match ${JSON.stringify(m)}` };
  }
  return {
    backend: rules.local,
    why:
      m === undefined
        ? "session.hybrid.local (no session.hybrid.remote_match)"
        : `name does not match session.hybrid.remote_match ${JSON.stringify(m)}`,
  };
}

/** Every backend `rules` can route to without a declaration, in a stable order. */
export function ruleBackends(rules: RouteRules): string[] {
  return rules.kind === "auto" ? [rules.default] : [...new Set([rules.local, rules.remote])];
}

/** Reads routing settings (`session.auto` / `session.hybrid`, parsed) into rules; `undefined` when incomplete. */
export function rulesFromSettings(
  kind: "auto" | "hybrid",
  s: Readonly<Record<string, unknown>> | undefined,
): RouteRules | undefined {
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  if (kind === "auto") {
    const d = str(s?.default);
    return d === undefined ? undefined : { kind, default: d };
  }
  const local = str(s?.local);
  const remote = str(s?.remote);
  if (local === undefined || remote === undefined) return undefined;
  return { kind, local, remote, remoteMatch: str(s?.remote_match) };
}
