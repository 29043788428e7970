/**
 * `gc exec SESSION -- CMD [ARGS...]`: runs a command in the session's environment through
 * its provider (local work dir today; a pod or container later). Commands run wrapped in a
 * small shell that restores and captures the working directory and exported variables, so
 * `cd` and `export` persist across calls of one session (exec-state.ts). The command's exit
 * code becomes gc's; stdout and stderr stay apart.
 */
import { existsSync, fstatSync } from "node:fs";
import { capturedOutputOf, UsageError } from "../../../internal/base/errors.js";
import {
  dropShellState,
  incarnationOf,
  loadShellState,
  needsShell,
  newNonce,
  nextShellState,
  saveShellState,
  shellStatePath,
  unwrapCutOutput,
  unwrapOutput,
  wrapArgv,
} from "../../../internal/controller/exec-state.js";
import { requireRunning } from "../../../internal/operate/target.js";
import { sessionCapabilities, supportsExecCommand } from "../../../internal/runtime/provider.js";
import { defineCommand, EXIT } from "../context.js";
import { durationFlag, printJson, readStdin, withTarget } from "../operate.js";

const USAGE = `Usage: gc exec SESSION [--raw] [--timeout DUR] [--json] [global flags] -- CMD [ARGS...]

Runs CMD with ARGS (no shell parsing: each argument is passed as is) in the session's
environment: its work dir and environment, on the machine or pod where it lives.

\`cd\`, \`export\`, \`unset\` and \`source\` persist across gc exec calls of the session: each
command runs wrapped as restore → run → capture, with the state in
.gc/exec-shell/SESSION.state; it is dropped when the session stops or restarts. A program
with no state to restore passes straight through (shell builtins such as exit never do);
--raw always runs CMD directly.

stdout and stderr are kept apart; stdin is passed on when it is a pipe or a file. The exit
code of CMD becomes gc's; when gc itself fails (usage error, unknown session, provider error)
it exits 125 with the reason on stderr. --timeout (default 5m) bounds the command.

A command cut short — past --timeout, or by Ctrl-C — is killed with everything it started;
what it printed until then is still printed (stdout to stdout, stderr to stderr), then the
reason on stderr, and gc exits 125 (timeout) or 130 (interrupted). Its cd/export are not
kept. With --json the report has "exitCode": null, "cut": "timeout" or "interrupted", and the
partial "stdout" and "stderr".`;

/** Default bound on one command. */
const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/** True when stdin is a pipe or a file (something that ends), not a terminal or socket. */
function stdinHasData(): boolean {
  try {
    const st = fstatSync(0);
    return st.isFIFO() || st.isFile();
  } catch {
    return false;
  }
}

/** What follows SESSION, read as gc exec's flags, the global flags and the command. */
export interface ExecArgs {
  readonly argv: string[];
  readonly raw: boolean;
  readonly timeout: string | undefined;
  readonly json: boolean;
  /** `--city DIR` / `--config FILE` written after SESSION (global flags go anywhere before `--`). */
  readonly city?: string;
  readonly config?: string;
}

/**
 * The command and the flags from what follows SESSION. When that starts with a flag,
 * everything up to `--` is flags — gc exec's own (`--raw`, `--timeout DUR`, `--json`) and the
 * global ones (`--city DIR`, `--config FILE`), each also as `--flag=value` — and the command
 * follows the `--`; otherwise the command starts right after SESSION (its own `--`s are its
 * arguments). Pure.
 * @throws UsageError for anything else among the flags, or flags with no `--` after them.
 */
export function splitExecArgs(
  rest: readonly string[],
  values: { raw?: string | boolean | undefined; timeout?: string | boolean | undefined },
): ExecArgs {
  let raw = values.raw === true;
  let timeout = typeof values.timeout === "string" ? values.timeout : undefined;
  let json = false;
  if (!rest[0]?.startsWith("--")) return { argv: [...rest], raw, timeout, json };
  const dash = rest.indexOf("--");
  if (dash < 0) throw new UsageError(`gc exec: put \`--\` between the flags and the command\n\n${USAGE}`);
  const flags = rest.slice(0, dash);
  const valued: Record<string, string> = {};
  for (let i = 0; i < flags.length; i++) {
    const f = flags[i]!;
    const eq = f.indexOf("=");
    const name = eq < 0 ? f : f.slice(0, eq);
    if (f === "--raw") raw = true;
    else if (f === "--json") json = true;
    else if (VALUE_FLAGS.has(name) && eq >= 0) valued[name] = f.slice(eq + 1);
    else if (VALUE_FLAGS.has(name) && i + 1 < flags.length) valued[name] = flags[++i]!;
    else throw new UsageError(`gc exec: unexpected ${JSON.stringify(f)} before \`--\`\n\n${USAGE}`);
  }
  if (valued["--timeout"] !== undefined) timeout = valued["--timeout"];
  return {
    argv: rest.slice(dash + 1),
    raw,
    timeout,
    json,
    ...(valued["--city"] !== undefined ? { city: valued["--city"] } : {}),
    ...(valued["--config"] !== undefined ? { config: valued["--config"] } : {}),
  };
}

/** Flags with a value accepted between SESSION and `--`. */
const VALUE_FLAGS = new Set(["--timeout", "--city", "--config"]);

export const command = defineCommand({
  usage: USAGE,
  options: { raw: { type: "boolean" }, timeout: { type: "string" } },
  passThrough: true,
  failureExit: EXIT.execFailed,
  async run(ctx, { positionals, values }) {
    const { argv, raw, timeout, json: jsonFlag, city, config } = splitExecArgs(positionals.slice(1), values);
    if (positionals.length < 1 || argv.length === 0) {
      throw new UsageError(`gc exec needs a session and a command\n\n${USAGE}`);
    }
    if (city !== undefined) ctx = { ...ctx, cityFlag: city };
    if (config !== undefined) ctx = { ...ctx, configFlag: config };
    if (argv[0] === "") throw new UsageError("the command is empty");
    const json = ctx.json || jsonFlag;
    const timeoutMs = durationFlag("timeout", timeout, DEFAULT_TIMEOUT_MS);
    const stdin = stdinHasData() ? await readStdin(ctx) : undefined;
    return withTarget(ctx, positionals[0]!, async (t) => {
      await requireRunning(t, ctx.signal);
      if (
        !supportsExecCommand(t.provider) ||
        !(await sessionCapabilities(t.provider, t.name, { signal: ctx.signal })).exec
      ) {
        ctx.err(`gc: provider ${t.provider.name} cannot run commands in a session's environment`);
        return EXIT.execFailed;
      }
      const stateDir = t.city.stateDir;
      const incarnation = incarnationOf(t.session.record);
      const state = await loadShellState(stateDir, t.name, incarnation);
      if (!state && existsSync(shellStatePath(stateDir, t.name))) await dropShellState(stateDir, t.name);
      const wrapped = !raw && (state !== undefined || needsShell(argv));
      const nonce = newNonce();
      let r: { exitCode: number; stdout: string; stderr: string };
      try {
        r = await t.provider.execCommand(t.name, wrapped ? wrapArgv(argv, state, nonce) : argv, {
          signal: ctx.signal,
          timeoutMs,
          ...(stdin !== undefined ? { stdin } : {}),
        });
      } catch (e) {
        // Cut short (timeout, Ctrl-C) once the command ran: print what it printed first (never
        // the wrapper's markers or snapshots) and keep no shell state from it.
        const partial = capturedOutputOf(e);
        const interrupted = ctx.signal.aborted;
        if (partial) {
          const stdout = wrapped ? unwrapCutOutput(partial.stdout, nonce) : partial.stdout;
          const cut = interrupted ? "interrupted" : "timeout";
          if (json) {
            printJson(ctx, { session: t.name, exitCode: null, cut, stdout, stderr: partial.stderr, wrapped });
          } else {
            ctx.stdout.write(stdout);
            // The reason follows on a line of its own.
            ctx.stderr.write(
              partial.stderr && !partial.stderr.endsWith("\n") ? `${partial.stderr}\n` : partial.stderr,
            );
          }
        }
        if (!interrupted) throw e;
        ctx.err("gc exec: interrupted");
        return EXIT.cancelled;
      }
      let stdout = r.stdout;
      if (wrapped) {
        const u = unwrapOutput(r.stdout, nonce);
        stdout = u.stdout;
        await saveShellState(stateDir, t.name, nextShellState(state, u, incarnation, Date.now()));
      }
      if (json) {
        printJson(ctx, { session: t.name, exitCode: r.exitCode, stdout, stderr: r.stderr, wrapped });
      } else {
        ctx.stdout.write(stdout);
        ctx.stderr.write(r.stderr);
      }
      return Math.max(0, Math.min(255, r.exitCode));
    });
  },
});
