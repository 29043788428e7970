/**
 * Real turns under gc: Claude Code, Codex, Gemini CLI and opencode (pinned in
 * scripts/agent-clis.mjs) on tmux and on subprocess, each in its own city with a private HOME,
 * talking to the model-API double (test/agents/model-api/) on 127.0.0.1:
 *
 * a. `gc run AGENT "…"` completes with the model's reply;
 * b. a tool call: the CLI's permission prompt is a pending interaction (question + options) in
 *    `gc status --json`, `gc session respond` answers it (and the approval policy answers
 *    another), the tool's file exists, `gc run` completes;
 * c. a when-idle nudge and a queued nudge sent during a paced turn (with a silence mid-stream)
 *    are typed by gc and reach the model after the turn's last chunk, each exactly once,
 *    verbatim; `gc status` says working while the reply streams;
 * d. 429 and 529/503 answers: the CLI retries, the session is not restarted, the next run works;
 * e. `gc run --timeout` on a long turn interrupts it: the stream is dropped, the agent survives,
 *    the output has what it printed, the next run works.
 *
 * Skips (with the reason) only when npm cannot be reached and nothing is cached.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, type TestContext } from "vitest";
import { agentCliCacheDir, installAgentCli, npmUnreachable } from "../../scripts/agent-clis.mjs";
import { GC_BIN, type GcResult, makeCity, type TestCity, until } from "../support/city.js";
import { TURN_CLIS, type TurnCli, turnCityYaml } from "./model-api/clis.js";
import { type ModelApi, type RequestRecord, Script, startModelApi } from "./model-api/index.js";

const bins: Partial<Record<TurnCli, string>> = {};
let skipReason: string | undefined;

beforeAll(async () => {
  const t0 = Date.now();
  try {
    for (const name of TURN_CLIS) bins[name] = (await installAgentCli(name)).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
  }
  console.log(`agent CLIs ready in ${Date.now() - t0} ms (cache ${agentCliCacheDir()})`);
}, 900_000);

interface Row {
  name: string;
  state: string;
  running: boolean;
  restarts: number;
  interaction?: { question: string; options: string[] };
  work?: { state: string };
}

async function row(city: TestCity, name: string): Promise<Row | undefined> {
  const r = await city.gc(["status", "--json"]);
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.stdout) as { sessions: Row[] }).sessions.find((s) => s.name === name);
}

interface RunReport {
  status: string;
  output: string;
  reason?: string;
}

/** Starts `gc --city DIR ...args` in the background; resolves when it exits. */
function gcBackground(city: TestCity, args: string[]): Promise<GcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [GC_BIN, "--city", city.dir, ...args], {
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function run(
  city: TestCity,
  name: string,
  prompt: string,
  extra: string[] = [],
): Promise<RunReport & { code: number | null; stderr: string }> {
  const r = await city.gc(["run", name, prompt, "--json", "--idle-wait", "120s", ...extra], {
    timeoutMs: 300_000,
  });
  try {
    return { ...(JSON.parse(r.stdout) as RunReport), code: r.code, stderr: r.stderr };
  } catch {
    throw new Error(`gc run ${name} printed no report (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
}

/** The agent-turn requests whose new user message holds `text`. */
const carrying = (api: ModelApi, text: string): RequestRecord[] =>
  api.turns().filter((t) => !t.toolResult && t.userTexts.some((u) => u.includes(text)));

/** Kills what an agent left behind outside its session under `dir`. */
function killStrays(dir: string): void {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone already
    }
  }
}

/** The reply texts and the scripted turns of one city. */
function script(work: string): Script {
  return new Script("Done.")
    .on("Say hello", { text: "Hello from the model double." })
    .on("make respond-file", { shell: `touch ${join(work, "respond-file")}`, after: "respond-file is made." })
    .on("make policy-file", { shell: `touch ${join(work, "policy-file")}`, after: "policy-file is made." })
    .on("paced turn", {
      text: "Pacing one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.",
      chunks: 20,
      overMs: 15_000,
      silenceMs: 5_000,
    })
    .on(
      "rate limited",
      { error: 429, retryAfterS: 1 },
      { error: 529 },
      { error: 503 },
      { text: "Recovered after the errors." },
    )
    .on("after errors", { text: "The next turn works." })
    .on("long turn", {
      text: `LONGSTART ${"word ".repeat(60)}LONGEND`,
      chunks: 60,
      overMs: 120_000,
    })
    .on("after timeout", { text: "Still here after the interrupt." });
}

/**
 * CLIs gc does not yet run through a turn (issue 33 items 3–4, per-CLI knowledge and delivery):
 * skipped with the reason unless GC_TURNS_ALL=1 (to work on them).
 */
const GAPS: Partial<Record<TurnCli, string>> = {};
/** A CLI that does not pass on one provider yet (`provider/cli`), skipped with the reason. */
const GAPS_ON: Partial<Record<string, string>> = {};
/** Steps a CLI does not pass yet, skipped with the reason (annotated on the test). */
const STEP_GAPS: Partial<Record<TurnCli, { steps: readonly ("5c" | "5e")[]; reason: string }>> = {};
/** Whether `step` of `cli` runs; a known gap is annotated on the test instead. */
async function runs(cli: TurnCli, step: "5c" | "5e", ctx: TestContext): Promise<boolean> {
  const gap = STEP_GAPS[cli];
  if (!gap?.steps.includes(step) || process.env.GC_TURNS_ALL === "1") return true;
  await ctx.annotate(`${step} skipped: ${gap.reason}`);
  return false;
}

describe.concurrent.each(["tmux", "subprocess"])("real turns on %s", (provider) => {
  it.for([...TURN_CLIS])(
    "%s: run, tool approval, nudges after a paced turn, API errors, timeout",
    { timeout: 900_000 },
    async (cli, ctx) => {
      if (skipReason) ctx.skip(skipReason);
      // GC_TURNS_ONLY=PROVIDER/CLI[,…] narrows a local run (say which in the skip).
      const only = process.env.GC_TURNS_ONLY?.split(",");
      if (only && !only.includes(`${provider}/${cli}`)) ctx.skip(`GC_TURNS_ONLY=${only.join(",")}`);
      const gap = GAPS[cli] ?? GAPS_ON[`${provider}/${cli}`];
      if (gap && process.env.GC_TURNS_ALL !== "1") ctx.skip(gap);
      const t0 = Date.now();
      const city = makeCity("workspace: { name: '@NAME@' }\n", ctx.onTestFinished);
      ctx.onTestFinished(async () => {
        await city.gc(["stop"], { timeoutMs: 60_000 }).catch(() => undefined);
        killStrays(city.dir);
      });
      const phase = (what: string) => console.log(`${provider}/${cli}: ${what} after ${Date.now() - t0} ms`);
      // Concurrent tests report failures only at the end: say at once which step failed.
      ctx.onTestFailed(({ task }) => {
        console.log(
          `${provider}/${cli}: FAILED after ${Date.now() - t0} ms: ${task.result?.errors?.[0]?.message}`,
        );
      });
      const work = join(city.dir, "work");
      const api = await startModelApi(script(work));
      ctx.onTestFinished(() => api.close());
      const name = cli;
      // Approvals are left to the operator (`ask`) until the policy case below.
      const agents = [{ name, cli, bin: bins[cli]!, home: join(city.dir, "home"), work, url: api.url }];
      city.write(turnCityYaml(provider, agents, "ask"));
      const started = await city.gc(["start"], { timeoutMs: 300_000 });
      expect(started.code, `${started.stdout}\n${started.stderr}`).toBe(0);
      phase("gc start");

      // a. A plain turn: completed, with the model's reply.
      const a = await run(city, name, "Say hello, please.");
      expect(a.status, JSON.stringify(a)).toBe("completed");
      expect(a.output).toContain("Hello from the model double.");
      phase("5a");

      // b. A tool call: the permission prompt is pending with question and options; answered.
      const pendingRun = gcBackground(city, [
        "run",
        name,
        "Please make respond-file now.",
        "--json",
        "--idle-wait",
        "120s",
      ]);
      const asking = await until(
        "the permission prompt as a pending interaction",
        async () => {
          const r = await row(city, name);
          return r?.state === "waiting-for-input" && r.interaction?.options.length ? r : undefined;
        },
        120_000,
      );
      expect(asking.interaction?.question).toBeTruthy();
      expect(asking.interaction?.options.length).toBeGreaterThan(1);
      const answered = await city.gc(["session", "respond", name, "approve"]);
      expect(answered.code, `${answered.stdout}\n${answered.stderr}`).toBe(0);
      const b = await pendingRun;
      const bReport = JSON.parse(b.stdout) as RunReport;
      expect(bReport.status, b.stdout + b.stderr).toBe("completed");
      expect(existsSync(join(work, "respond-file"))).toBe(true);
      expect(bReport.output).toContain("respond-file is made.");
      console.log(`${provider}/${cli}: asked ${JSON.stringify(asking.interaction)}`);
      // …and one answered by the city's approval policy (the controller reloads the file).
      city.write(turnCityYaml(provider, agents, "allow-all"));
      const policy = await run(city, name, "Please make policy-file now.");
      expect(policy.status, JSON.stringify(policy)).toBe("completed");
      expect(existsSync(join(work, "policy-file"))).toBe(true);
      phase("5b");

      // c. Nudges sent while a paced turn streams arrive after its last chunk, once, verbatim.
      if (await runs(cli, "5c", ctx)) {
        // (Started by a nudge: a `gc run` would hold the session's lock, and nudges wait for it.)
        const paced = await city.gc(["nudge", name, "Now a paced turn, please.", "--now"]);
        expect(paced.code, paced.stderr).toBe(0);
        await until(
          "the paced turn streaming",
          () => api.streaming() && carrying(api, "paced turn").length > 0,
          120_000,
        );
        // The silence mid-stream is not idle: each look at `gc status` taken wholly while the
        // double streams the paced reply says the agent is working (sampled from the stream's
        // start, while the nudges below are sent: on a loaded machine they take seconds).
        const pacedOpen = carrying(api, "paced turn").at(-1)!;
        const during: string[] = [];
        const sampling = (async () => {
          while (pacedOpen.endedAt === undefined) {
            const r = await row(city, name);
            if (pacedOpen.endedAt === undefined) during.push(r?.work?.state ?? "-");
          }
        })();
        const idleText = `when-idle nudge ${cli} 'quoted' ünï`;
        const queuedText = `queued nudge ${cli} $HOME \`x\``;
        const whenIdle = gcBackground(city, ["nudge", name, idleText, "--wait", "120s"]);
        const queued = await city.gc(["nudge", name, queuedText, "--queue"]);
        expect(queued.code, queued.stderr).toBe(0);
        await sampling;
        expect(during.length).toBeGreaterThan(0);
        expect(
          during.filter((w) => w !== "working"),
          `work while streaming: ${during.join(" ")}`,
        ).toEqual([]);
        const idle = await whenIdle;
        expect(idle.code, idle.stdout + idle.stderr).toBe(0);
        await until(
          "both nudges at the model",
          () => carrying(api, idleText).length > 0 && carrying(api, queuedText).length > 0,
          120_000,
        );
        await until(
          "the session idle again",
          async () => (await city.gc(["wait", name, "--idle", "--timeout", "5s"])).code === 0,
          120_000,
        );
        // The paced stream ran to its end: nothing typed into the CLI cut it short.
        const pacedRec = carrying(api, "paced turn").at(-1);
        expect(pacedRec?.aborted).toBeFalsy();
        const pacedEnd = pacedRec?.lastChunkAt ?? 0;
        expect(pacedEnd).toBeGreaterThan(0);
        for (const text of [idleText, queuedText]) {
          const got = carrying(api, text);
          expect(got.length, `${text}: ${JSON.stringify(got.map((g) => g.userTexts))}`).toBe(1);
          expect(got[0]!.at).toBeGreaterThanOrEqual(pacedEnd);
          expect(got[0]!.userTexts.some((u) => u.includes(text))).toBe(true);
        }
        // …and gc itself typed them only after it (a CLI that queues what is typed into a
        // streaming turn, like Codex, would hide an early delivery from the model's log).
        const logged = await city.gc(["session", "logs", name, "--events", "--json"]);
        const events = (JSON.parse(logged.stdout) as { events: { type: string; at: number }[] }).events;
        const typed = events.filter((e) => e.type === "nudge.delivered" || e.type === "nudge.sent").slice(-2);
        expect(typed.map((e) => e.type).sort()).toEqual(["nudge.delivered", "nudge.sent"]);
        for (const e of typed) expect(e.at, JSON.stringify(e)).toBeGreaterThanOrEqual(pacedEnd);
        phase("5c");
      }

      // d. 429 (Retry-After), 529 and 503: retried by the CLI, no restart, the next turn works.
      const d = await run(city, name, "This turn gets rate limited.");
      expect(d.status, JSON.stringify(d)).toBe("completed");
      expect(carrying(api, "rate limited").map((r) => r.status)).toEqual(
        expect.arrayContaining([429, 529, 503, 200]),
      );
      expect((await row(city, name))?.restarts).toBe(0);
      const next = await run(city, name, "A turn after errors.");
      expect(next.status).toBe("completed");
      expect(next.output).toContain("The next turn works.");
      phase("5d");

      // e. --timeout on a long turn interrupts it; the agent survives and takes the next turn.
      if (!(await runs(cli, "5e", ctx))) return;
      const e = await run(city, name, "A long turn, please.", ["--timeout", "8s"]);
      expect(e.status, JSON.stringify(e)).toBe("timeout");
      expect(e.code).toBe(4);
      // What it printed before the interrupt (Claude Code shows a reply only once it is complete).
      if (cli !== "claude") expect(e.output).toContain("LONGSTART");
      await until(
        "the long stream dropped by the interrupted CLI",
        () => carrying(api, "long turn").some((r) => r.aborted),
        30_000,
      );
      const survivor = await row(city, name);
      expect(survivor?.running).toBe(true);
      expect(survivor?.restarts).toBe(0);
      const after = await run(city, name, "A turn after timeout.");
      expect(after.status, JSON.stringify(after)).toBe("completed");
      expect(after.output).toContain("Still here after the interrupt.");
      phase("5e");
    },
  );
});
