/**
 * One start per session name at a time within one provider instance: the guard every
 * provider's `start` goes through, so a second start of a name whose first start has not
 * finished fails at once instead of racing it.
 */
import { SessionExistsError } from "../../base/errors.js";

/** The names whose start is in progress in this process. */
export class StartsInProgress {
  private readonly names = new Set<string>();

  /** True while a start of `name` runs. */
  has(name: string): boolean {
    return this.names.has(name);
  }

  /**
   * Runs `start` as the only start of `name`; the name is free again when it settles.
   * @throws SessionExistsError (cause "a start is already in progress") when another start
   * of `name` has not finished; `start` is not called then.
   */
  async run<T>(name: string, start: () => Promise<T>): Promise<T> {
    if (this.names.has(name)) throw new SessionExistsError(name, { cause: "a start is already in progress" });
    this.names.add(name);
    try {
      return await start();
    } finally {
      this.names.delete(name);
    }
  }
}
