/**
 * What gc's loader starts before it compiles and runs the CLI bundle: for `gc status`, its
 * question to the city's running controller, so the controller builds its snapshot while this
 * process loads the bundle; for a plain `gc start`, the launch of the background controller
 * (launch.ts), so the controller boots while this process loads the bundle
 * (scripts/bundle-cli.mjs bundles this module on its own, as dist/cmd/gc/early.cjs, and the
 * loader calls {@link startEarly} first). `gc start` takes that launch only when it was made
 * for exactly its own flags (launch.ts `takeEarlyLaunch`), else abandons it and launches itself.
 *
 * The arguments are only guessed at here, without commander: {@link commandArgs} accepts the
 * plain forms alone. Status then asks its own question ({@link statusQuestion}, the one
 * function both use) and takes the early answer only when it is the answer to exactly that
 * question, on that socket ({@link takeEarlyAnswer}); otherwise it asks anew, as without the
 * loader. An early question nobody takes costs the controller one snapshot, and nothing else.
 */
import { join, resolve } from "node:path";
import { CITY_FILE_NAME, findCityDir } from "../../internal/config/locate.js";
import {
  type ControlMessage,
  type ControlRequest,
  controlSocketPath,
  requestControl,
} from "../../internal/controller/control.js";
import { launchEarlyFromLoader } from "./launch.js";

/** How long status waits for the running controller's snapshot before building its own. */
export const CONTROLLER_ANSWER_MS = 2_000;

/** A question to a controller: the request and the socket it goes to. */
export interface ControlQuestion {
  readonly socket: string;
  readonly request: ControlRequest;
}

/** The question `gc status` asks the controller of the city in `cityDir`. Pure. */
export function statusQuestion(cityDir: string): ControlQuestion {
  return {
    socket: controlSocketPath(join(cityDir, ".gc")),
    request: { op: "snapshot", file: join(cityDir, CITY_FILE_NAME) },
  };
}

/**
 * The `--city` of an invocation of command `name` (`status`, `start`) whose arguments (`argv`,
 * after the script) are only the command, `--json` and `--city DIR`/`--city=DIR`, in any order
 * (the city `GC_CITY` names when no `--city`; `undefined` for the nearest one upward); `null`
 * for anything else, `--config` and `--help` included (nothing is done early then). Pure.
 */
export function commandArgs(
  name: string,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { city: string | undefined } | null {
  let command: string | undefined;
  let city: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--json") continue;
    if (a === "--city" && i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) city = argv[++i];
    else if (a.startsWith("--city=") && a.length > "--city=".length) city = a.slice("--city=".length);
    else if (a === name && command === undefined) command = a;
    else return null;
  }
  if (command === undefined) return null;
  return { city: city ?? (env.GC_CITY || undefined) };
}

/** The early question and how it went: `asked` when no question could be put (no city). */
type Early =
  | { readonly key: string; readonly answer: PromiseSettledResult<ControlMessage[]> }
  | { readonly asked: false };

/** Where the loader's early question waits for the bundle (two bundles share no module state). */
const SLOT = Symbol.for("gc.early-status-question");

/** A question's identity: its socket and request. Pure. */
function keyOf(q: ControlQuestion): string {
  return JSON.stringify([q.socket, q.request]);
}

/**
 * Asks the city's controller for the status snapshot when `argv` is a `gc status` invocation
 * ({@link commandArgs}), leaving the answer for {@link takeEarlyAnswer}. Never throws, never
 * rejects: a failure is kept as the answer.
 */
export function startEarly(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  gcDir?: string,
): void {
  // A plain `gc start`: its background controller is launched now (launch.ts).
  const start = gcDir === undefined ? null : commandArgs("start", argv, env);
  if (start !== null) {
    launchEarlyFromLoader({ cwd, cityFlag: start.city, configFlag: undefined }, gcDir!);
    return;
  }
  const args = commandArgs("status", argv, env);
  if (args === null) return;
  const early = (async (): Promise<Early> => {
    const cityDir = args.city !== undefined ? resolve(cwd, args.city) : await findCityDir(cwd);
    if (cityDir === undefined) return { asked: false };
    const q = statusQuestion(cityDir);
    const [answer] = await Promise.allSettled([
      requestControl(q.socket, q.request, { timeoutMs: CONTROLLER_ANSWER_MS }),
    ]);
    return { key: keyOf(q), answer: answer! };
  })().catch((): Early => ({ asked: false }));
  (globalThis as Record<symbol, unknown>)[SLOT] = early;
}

/**
 * The controller's answer to `q` when the loader asked exactly `q` early (once: it is then
 * forgotten); `undefined` when it did not, so the caller asks itself. Rejects as the early
 * request did (no controller, no answer in time), or with `signal`'s reason when it aborts
 * first.
 */
export async function takeEarlyAnswer(
  q: ControlQuestion,
  signal: AbortSignal,
): Promise<ControlMessage[] | undefined> {
  const slot = globalThis as Record<symbol, Promise<Early> | undefined>;
  const pending = slot[SLOT];
  if (pending === undefined) return undefined;
  delete slot[SLOT];
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    const early = await Promise.race([pending, aborted]);
    if (!("key" in early) || early.key !== keyOf(q)) return undefined;
    if (early.answer.status === "rejected") throw early.answer.reason;
    return early.answer.value;
  } finally {
    signal.removeEventListener("abort", onAbort!);
  }
}
