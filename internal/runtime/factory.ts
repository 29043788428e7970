/**
 * The uniform shape every provider module's factory takes, so the composition root
 * (cmd/gc/deps.ts) and `gc conformance` can build any provider by name with a lazy import.
 */
import type { Provider } from "./provider.js";

/** What every provider factory receives. */
export interface ProviderFactoryOptions {
  /**
   * The city's name as stored in its identity (its name when first loaded: identity.ts), so a
   * renamed workspace keeps its ownership tag.
   */
  readonly city: string;
  /**
   * The city's stable id (`cityIdentity` in identity.ts); with the name it forms the ownership tag of
   * every runtime object and the default tmux socket (identity.ts). Absent only where the
   * name alone is unique (unit tests, `gc conformance`).
   */
  readonly cityId?: string | undefined;
  /** Absolute city directory. */
  readonly cityDir: string;
  /** Absolute state directory for this city (`<city>/.gc`), created 0700 by the caller. */
  readonly stateDir: string;
  /** Provider-specific settings from the city file (`session.<provider>`), already validated. */
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
  /** The part after `:` in specs like `exec:<script>`. */
  readonly arg?: string | undefined;
  /**
   * Routing providers only: opens (or reuses) the city's provider for a concrete backend spec,
   * with that backend's own settings. Absent: the routing provider builds its backends itself.
   */
  readonly openBackend?: ((spec: string) => Promise<Provider>) | undefined;
  /**
   * This process only reads the city (`gc status`): housekeeping that only matters to
   * processes that change it is left to them and to the controller (the tmux provider's
   * connect then does not look for orphaned control clients to remove).
   */
  readonly readOnly?: boolean | undefined;
}
