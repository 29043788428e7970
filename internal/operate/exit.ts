/**
 * Every exit code any `gc` command uses (architecture §7, README "Exit codes"). `gc exec`
 * passes the command's own code through, so its own failures use {@link EXIT.execFailed}
 * instead of 1/2/3, the way `docker run`/`env` do. Here, not in cmd/, because the operator
 * actions shared by the CLI and the dashboard (pass.ts) resolve them too.
 */
export const EXIT = {
  /** Success (for `start`/`reconcile`: the pass succeeded, every session started). */
  ok: 0,
  /** The operation failed (a session failed to start, the provider refused, …). */
  failed: 1,
  /** Usage error or invalid city file (nothing was changed). */
  usage: 2,
  /** The named session does not exist. */
  notFound: 3,
  /** `wait`/`run`: the timeout passed while the session was still working. */
  stillWorking: 4,
  /** `wait`/`run`: the session ended (exited, stopped or crashed) before the condition held. */
  terminated: 5,
  /** `gc exec`: gc itself failed before or while running the command (any other code is the command's). */
  execFailed: 125,
  /** Interrupted by SIGINT/SIGTERM (128 + 2). */
  cancelled: 130,
} as const;
