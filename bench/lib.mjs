// bench/lib: what every bench shares — the machine load it ran at, and the rule that a target
// verdict ("met" / "NOT met") is only given on an idle machine. A ratio against a baseline
// measured in the same run is still printed under load (both sides see the same machine), but
// whether it meets a target is decided only when the 1-minute load average stayed below
// IDLE_LOAD: targets are judged on an idle machine, where baselines are fastest.
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/**
 * The built `gc` the benches run: the package's `bin` (what `gc` on PATH runs: npm link, npx),
 * not dist/cmd/gc/main.js (an ES module entry that adds Node's ES module loader to every start).
 */
export const GC_BIN = fileURLToPath(
  new URL(
    `../${JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).bin.gc}`,
    import.meta.url,
  ),
);

/** Above this 1-minute load average no target verdict is printed. */
export const IDLE_LOAD = 1;

const loadNow = () => loadavg()[0];
const fmt = (x) => x.toFixed(2);

let startLoad;
let peakLoad = 0;
let out = (line) => console.log(line);

/**
 * Starts a bench: prints the load average at start (and, at process exit, at end). With
 * `json`, the load lines go to stderr so stdout stays one JSON document. Call once, first.
 */
export function benchStart(name, { json = false } = {}) {
  if (startLoad !== undefined) throw new Error("benchStart called twice");
  if (json) out = (line) => console.error(line);
  startLoad = loadNow();
  peakLoad = startLoad;
  out(`${name}: load average (1 min) at start ${fmt(startLoad)} on ${cores()} cores`);
  process.once("exit", () => {
    const end = loadNow();
    const judged = phaseLoads
      ? idle()
        ? ` — every measured phase started idle (highest ${fmt(Math.max(...phaseLoads))}), verdicts valid`
        : ` — a measured phase started at load ${fmt(Math.max(...phaseLoads))} ≥ ${IDLE_LOAD}, no target verdicts`
      : idle()
        ? " — idle machine, verdicts valid"
        : ` — NOT idle (≥ ${IDLE_LOAD}), no target verdicts`;
    out(`${name}: load average (1 min) at end ${fmt(end)}${judged}`);
  });
}

function cores() {
  return availableParallelism();
}

/** The load at the start of each measured phase, once a bench judges by phases ({@link idlePhase}). */
let phaseLoads;

/**
 * True while the load stayed below {@link IDLE_LOAD} at start and at every check so far; in
 * a bench judged by phases, while every measured phase began below it.
 */
export function idle() {
  if (startLoad === undefined) throw new Error("benchStart was not called");
  if (phaseLoads) return phaseLoads.length > 0 && Math.max(...phaseLoads) < IDLE_LOAD;
  peakLoad = Math.max(peakLoad, loadNow());
  return peakLoad < IDLE_LOAD;
}

/**
 * For a bench whose measured work is itself enough to lift the 1-minute load above
 * {@link IDLE_LOAD} (1,000 parallel starts, raw or gc's): waits (at most `maxS` seconds) until
 * the load has fallen below it, then returns it as the load this phase starts at. Once a bench
 * calls this, its verdicts judge the load at the start of each measured phase — every one must
 * start on an idle machine — and not the load the phases raise themselves (the load average
 * trails the work that raised it by a minute: a phase right after a busy one would otherwise
 * be judged by its predecessor's work).
 */
export async function idlePhase(maxS = 240) {
  if (startLoad === undefined) throw new Error("benchStart was not called");
  phaseLoads ??= [];
  const t0 = Date.now();
  while (loadNow() >= IDLE_LOAD && Date.now() - t0 < maxS * 1000) await sleep(2000);
  const load = loadNow();
  phaseLoads.push(load);
  return { load, waitedS: (Date.now() - t0) / 1000 };
}

/**
 * Waits (at most `maxS` seconds) for the load a bench's own set-up raised — a city of 1,000
 * sessions started — to fall below {@link IDLE_LOAD}, then starts the verdict's watch over:
 * the verdicts printed after it cover what is measured after it (a steady state), and say
 * "no verdict" if the load never settled or rises again. Prints what it saw.
 */
export async function settle(what, maxS = 240) {
  if (startLoad === undefined) throw new Error("benchStart was not called");
  const t0 = Date.now();
  while (loadNow() >= IDLE_LOAD && Date.now() - t0 < maxS * 1000) await sleep(5000);
  peakLoad = loadNow();
  out(
    `${what}: load average (1 min) ${fmt(peakLoad)} after ${((Date.now() - t0) / 1000).toFixed(0)} s of settling; verdicts below cover what follows`,
  );
}

/** The loads seen so far, for JSON reports. */
export function loadReport() {
  idle();
  return { start: startLoad, now: loadNow(), peak: peakLoad, idle: peakLoad < IDLE_LOAD };
}

/**
 * The verdict text for a target: "met" / "NOT met" on an idle machine, otherwise
 * "no verdict, load X ≥ 1". `ok` is whether the measured value meets the target.
 */
export function verdict(ok) {
  if (!idle())
    return phaseLoads
      ? `no verdict, a phase started at load ${fmt(Math.max(...phaseLoads, 0))} ≥ ${IDLE_LOAD}`
      : `no verdict, load ${fmt(peakLoad)} ≥ ${IDLE_LOAD}`;
  return ok ? "met" : "NOT met";
}

/** `(target ≤ {limit}{unit}: verdict)` for a value that must not exceed `limit`. */
export function target(value, limit, unit = "×") {
  return `(target ≤ ${limit}${unit}: ${verdict(value <= limit)})`;
}
