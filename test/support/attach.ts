/**
 * The one attach child for every provider's attach test: `node` runs test/support/attach-child.mjs,
 * which calls the built provider's `attach` with its own terminal (the test's pty), as
 * `gc attach` does, and prints `GC-ATTACH-RETURNED` or `GC-ATTACH-FAILED <message>`.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ATTACH_CHILD = fileURLToPath(new URL("./attach-child.mjs", import.meta.url));

/** What the child needs to build the provider and attach. */
export interface AttachChild {
  /** Directory under dist/internal/runtime (`tmux`, `docker`, `k8s`). */
  readonly provider: string;
  readonly city: string;
  /** The city dir (also the provider's state dir). */
  readonly cityDir: string;
  readonly session: string;
  /** The provider's `session.<provider>` settings. */
  readonly settings: Readonly<Record<string, unknown>>;
}

/**
 * The argv (after the node binary) that runs the attach child for `c`.
 * @throws when the provider is not built (`npm run build` first).
 */
export function attachChildArgs(c: AttachChild): string[] {
  const dist = fileURLToPath(new URL(`../../dist/internal/runtime/${c.provider}/index.js`, import.meta.url));
  if (!existsSync(dist)) throw new Error(`${dist} is missing: run \`npm run build\` first`);
  return [ATTACH_CHILD, dist, c.city, c.cityDir, c.session, JSON.stringify(c.settings)];
}
