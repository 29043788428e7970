/**
 * The approval policy for pending interactions (approval prompts, questions a session is
 * blocked on): a pure decision from the city file's `session.approval` and the interaction,
 * and the controller step that answers them automatically and records each decision as an
 * event. Sessions the policy leaves to a human show `waiting-for-input` in `gc status`.
 */

import { describeError, isGcError } from "../base/errors.js";
import { groupBy } from "../base/group.js";
import {
  isApprovalQuestion,
  type PendingInteraction,
  type Provider,
  sessionCapabilities,
  supportsInteraction,
  supportsPendingAll,
} from "../runtime/provider.js";
import type { SessionStore } from "../session/store.js";

/** What the policy does with an interaction: answer it (`approve`/`deny`) or leave it (`ask`). */
export type ApprovalAction = "approve" | "deny" | "ask";

/** The actions a rule may name, in documentation order. */
export const APPROVAL_ACTIONS: readonly ApprovalAction[] = ["approve", "deny", "ask"];

/** One rule: matches by interaction kind and/or a regular expression on the prompt. */
export interface ApprovalRule {
  /** Interaction kind (`approval`, `question`, …); absent = any kind. */
  readonly kind?: string | undefined;
  /** Regular expression searched in the prompt text; absent = any prompt. */
  readonly match?: string | undefined;
  readonly action: ApprovalAction;
}

/**
 * The policy: `allow-all` approves everything (the default), `ask` leaves everything to a
 * human, or rules checked in order (first match wins) with a fallback action.
 */
export type ApprovalPolicy =
  | "allow-all"
  | "ask"
  | { readonly rules: readonly ApprovalRule[]; readonly default: ApprovalAction };

/** A decision and why. */
export interface ApprovalDecision {
  readonly action: ApprovalAction;
  /** `allow-all`, `ask`, `rules[2]`, `default`, or `not-an-approval`. */
  readonly by: string;
}

/** Why `pattern` is not a usable regular expression, or `undefined`. Pure. */
export function approvalPatternProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (e) {
    return `invalid regular expression: ${describeError(e)}`;
  }
}

/**
 * The policy from the decoded `session.approval` value (already validated by the config
 * schema); anything unrecognised — including an absent key — is the default `allow-all`. Pure.
 */
export function approvalPolicyOf(value: unknown): ApprovalPolicy {
  if (value === "ask" || value === "allow-all") return value;
  if (!value || typeof value !== "object") return "allow-all";
  const v = value as { rules?: unknown; default?: unknown };
  const isAction = (a: unknown): a is ApprovalAction => APPROVAL_ACTIONS.includes(a as ApprovalAction);
  const rules: ApprovalRule[] = [];
  for (const r of Array.isArray(v.rules) ? (v.rules as unknown[]) : []) {
    if (!r || typeof r !== "object") continue;
    const { kind, match, action } = r as Record<string, unknown>;
    if (!isAction(action)) continue;
    if (typeof match === "string" && approvalPatternProblem(match)) continue;
    rules.push({
      action,
      ...(typeof kind === "string" ? { kind } : {}),
      ...(typeof match === "string" ? { match } : {}),
    });
  }
  return { rules, default: isAction(v.default) ? v.default : "ask" };
}

/**
 * Decides what to do with `interaction` under `policy`. Only approve/deny questions about a
 * tool, command or edit ({@link isApprovalQuestion}: kinds `approval` and `permission`) are
 * the policy's to answer; anything else — a sign-in or authentication choice, an API-key
 * field, a model choice, any other dialog or menu — is always left to a human
 * (`by: "not-an-approval"`), whatever the policy or its rules say. Pure.
 */
export function decideApproval(policy: ApprovalPolicy, interaction: PendingInteraction): ApprovalDecision {
  if (!isApprovalQuestion(interaction)) return { action: "ask", by: "not-an-approval" };
  if (policy === "allow-all") return { action: "approve", by: "allow-all" };
  if (policy === "ask") return { action: "ask", by: "ask" };
  for (const [i, r] of policy.rules.entries()) {
    if (r.kind !== undefined && r.kind !== interaction.kind) continue;
    if (r.match !== undefined && !new RegExp(r.match).test(interaction.prompt ?? "")) continue;
    return { action: r.action, by: `rules[${i}]` };
  }
  return { action: policy.default, by: "default" };
}

/** A session the approval step looks at. */
export interface ApprovalTarget {
  readonly name: string;
  readonly provider: string;
}

/** What {@link applyApprovalPolicy} needs. */
export interface ApprovalDeps {
  readonly store: SessionStore;
  providerFor(provider: string): Promise<Provider>;
  readonly policy: ApprovalPolicy;
  /** Sessions to check (running ones; missing sessions are skipped quietly). */
  readonly sessions: readonly ApprovalTarget[];
  /**
   * What was last recorded per session ({@link recordKey}: the interaction's request id and
   * the action decided), kept by the caller across passes: an interaction left to a human is
   * recorded as `interaction.pending` once, and an answer that failed is recorded once and not
   * tried again while the same interaction stays on screen with the same decision (a new
   * interaction, or a policy edit that changes the decision, is tried once more).
   */
  readonly announced: Map<string, string>;
  /**
   * Interactions already read this pass (provider → session → interaction; a session absent
   * from its provider's map waits on none): those providers are not asked again.
   */
  readonly observed?: ReadonlyMap<string, ReadonlyMap<string, PendingInteraction>> | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

/** One handled interaction. */
export interface ApprovalOutcome {
  readonly session: string;
  readonly interaction: PendingInteraction;
  readonly decision: ApprovalDecision;
  /** Set when answering failed. */
  readonly error?: string | undefined;
  /**
   * Nothing was done or recorded: this decision on this interaction was recorded on an
   * earlier pass (left to a human, or an answer that failed).
   */
  readonly unchanged?: true | undefined;
}

/** The key {@link ApprovalDeps.announced} keeps for a decision on an interaction. Pure. */
export function recordKey(interaction: PendingInteraction, decision: ApprovalDecision): string {
  return `${decision.action}:${interaction.requestId}`;
}

/**
 * Checks each session for a pending interaction and applies the policy: `approve`/`deny`
 * answers through the provider and records `interaction.responded` (`by: "policy"`), or
 * `interaction.respond-failed` once (not again while the same interaction stays); `ask`
 * records `interaction.pending` once and leaves it for `gc session respond`. Providers
 * without interaction support are skipped. Never rejects for one session's failure.
 */
export async function applyApprovalPolicy(deps: ApprovalDeps): Promise<ApprovalOutcome[]> {
  const log = deps.log ?? (() => undefined);
  const outcomes: ApprovalOutcome[] = [];
  const seen = new Set<string>();
  const batched = await pendingByProvider(deps, log);
  for (const t of deps.sessions) {
    deps.signal?.throwIfAborted();
    seen.add(t.name);
    let interaction: PendingInteraction | undefined;
    let provider: Provider;
    try {
      provider = await deps.providerFor(t.provider);
      if (!supportsInteraction(provider) || !(await sessionCapabilities(provider, t.name)).interaction)
        continue;
      const batch = batched.get(t.provider);
      interaction = batch ? batch.get(t.name) : await provider.pending(t.name, { signal: deps.signal });
    } catch (e) {
      if (deps.signal?.aborted) throw e;
      if (!isGcError(e, "GC_SESSION_NOT_FOUND")) log(`approval: cannot check ${t.name}: ${describeError(e)}`);
      continue;
    }
    if (!interaction) {
      deps.announced.delete(t.name);
      continue;
    }
    const decision = decideApproval(deps.policy, interaction);
    const base = {
      requestId: interaction.requestId,
      kind: interaction.kind,
      prompt: interaction.prompt ?? "",
      by: "policy",
      rule: decision.by,
    };
    const key = recordKey(interaction, decision);
    if (deps.announced.get(t.name) === key) {
      // Recorded already: still waiting for a human, or an answer that failed — trying the
      // same answer on the same screen every pass would only fail and log again.
      outcomes.push({ session: t.name, interaction, decision, unchanged: true });
      continue;
    }
    if (decision.action === "ask") {
      deps.announced.set(t.name, key);
      log(`${t.name} is waiting for input: ${interaction.prompt || interaction.kind}`);
      await deps.store.appendEvent({ session: t.name, type: "interaction.pending", payload: base });
      outcomes.push({ session: t.name, interaction, decision });
      continue;
    }
    let error: string | undefined;
    try {
      if (!supportsInteraction(provider)) continue;
      await provider.respond(
        t.name,
        { requestId: interaction.requestId, action: decision.action },
        { signal: deps.signal },
      );
    } catch (e) {
      if (deps.signal?.aborted) throw e;
      error = describeError(e);
    }
    if (error) deps.announced.set(t.name, key);
    else deps.announced.delete(t.name);
    log(
      error
        ? `approval: could not ${decision.action} ${t.name} (${interaction.kind}): ${error}; not tried again until the prompt changes`
        : `approval: ${decision.action === "approve" ? "approved" : "denied"} ${t.name} (${interaction.kind}, ${decision.by})`,
    );
    await deps.store.appendEvent({
      session: t.name,
      type: error ? "interaction.respond-failed" : "interaction.responded",
      payload: { ...base, action: decision.action, ...(error ? { error } : {}) },
    });
    outcomes.push({ session: t.name, interaction, decision, error });
  }
  for (const name of [...deps.announced.keys()]) if (!seen.has(name)) deps.announced.delete(name);
  return outcomes;
}

/**
 * Pending interactions of `deps.sessions`, per provider that can answer for all of them in
 * one observation ({@link supportsPendingAll}); other providers are asked per session.
 */
async function pendingByProvider(
  deps: ApprovalDeps,
  log: (line: string) => void,
): Promise<Map<string, ReadonlyMap<string, PendingInteraction>>> {
  const byProvider = groupBy(
    deps.sessions,
    (t) => t.provider,
    (t) => t.name,
  );
  const out = new Map<string, ReadonlyMap<string, PendingInteraction>>();
  for (const [name, sessions] of byProvider) {
    const seen = deps.observed?.get(name);
    if (seen) {
      out.set(name, seen);
      continue;
    }
    try {
      const p = await deps.providerFor(name);
      if (!supportsPendingAll(p) || !p.capabilities().interaction) continue;
      out.set(name, await p.pendingAll(sessions, { signal: deps.signal }));
    } catch (e) {
      if (deps.signal?.aborted) throw e;
      log(`approval: cannot check the sessions of ${name}: ${describeError(e)}`);
      out.set(name, new Map());
    }
  }
  return out;
}
