/**
 * Real turns on the acp provider: the ACP adapters of the presets (claude-code-acp, codex-acp,
 * `gemini --acp`) talking to the model-API double, each in its own city with a private HOME
 * seeded like its CLI's (test/agents/model-api/clis.ts):
 *
 * a. `gc run AGENT "…"` completes with the model's reply (the turn's own reply, not a screen);
 * b. a tool call: the permission request is the pending interaction, `gc session respond`
 *    approves it, the tool's file exists, `gc run` completes.
 *
 * Skips (with the reason) only when npm cannot be reached and nothing is cached.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type AgentCliName, installAgentCli, npmUnreachable } from "../../scripts/agent-clis.mjs";
import { GC_BIN, type GcResult, makeCity, type TestCity, until } from "../support/city.js";
import { seedCli, type TurnCli } from "./model-api/clis.js";
import { Script, startModelApi } from "./model-api/index.js";

/** Preset → [the package providing its command, the CLI whose HOME/env it shares]. */
const ADAPTERS = {
  "claude-acp": ["claude-code-acp", "claude"],
  "codex-acp": ["codex-acp", "codex"],
  "gemini-acp": ["gemini", "gemini"],
} as const satisfies Record<string, readonly [AgentCliName, TurnCli]>;
type Preset = keyof typeof ADAPTERS;

const bins: Partial<Record<Preset, string>> = {};
let skipReason: string | undefined;

beforeAll(async () => {
  try {
    for (const [preset, [pkg]] of Object.entries(ADAPTERS) as [Preset, readonly [AgentCliName, TurnCli]][])
      bins[preset] = (await installAgentCli(pkg)).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
  }
}, 900_000);

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

function killStrays(dir: string): void {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone already
    }
  }
}

describe.concurrent("real turns on acp", () => {
  it.for(Object.keys(ADAPTERS) as Preset[])(
    "%s: run, tool approval by gc session respond",
    { timeout: 600_000 },
    async (preset, ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const only = process.env.GC_TURNS_ONLY?.split(",");
      if (only && !only.includes(`acp/${preset}`)) ctx.skip(`GC_TURNS_ONLY=${only.join(",")}`);
      const t0 = Date.now();
      const city = makeCity("workspace: { name: '@NAME@' }\n", ctx.onTestFinished);
      ctx.onTestFinished(async () => {
        await city.gc(["stop"], { timeoutMs: 60_000 }).catch(() => undefined);
        killStrays(city.dir);
      });
      ctx.onTestFailed(({ task }) => {
        console.log(
          `acp/${preset}: FAILED after ${Date.now() - t0} ms: ${task.result?.errors?.[0]?.message}`,
        );
      });
      const work = join(city.dir, "work");
      const api = await startModelApi(
        new Script("Done.")
          .on("Say hello", { text: "Hello over ACP." })
          .on("make acp-file", { shell: `touch ${join(work, "acp-file")}`, after: "acp-file is made." }),
      );
      ctx.onTestFinished(() => api.close());
      const [, cli] = ADAPTERS[preset];
      const home = join(city.dir, "home");
      const env = {
        HOME: home,
        PATH: `${dirname(bins[preset]!)}:${process.env.PATH ?? ""}`,
        ...seedCli({ name: preset, cli, bin: bins[preset]!, home, work, url: api.url }),
      };
      const q = JSON.stringify;
      city.write(`workspace: { name: '@NAME@' }
session: { provider: acp, startup_timeout: 240s, approval: ask }
agents:
  - name: agent
    provider: ${preset}
    work_dir: ${q(work)}
    env: ${q(env)}
`);
      const started = await city.gc(["start"], { timeoutMs: 300_000 });
      expect(started.code, `${started.stdout}\n${started.stderr}`).toBe(0);

      const a = await city.gc(["run", "agent", "Say hello, please.", "--json"], { timeoutMs: 300_000 });
      const aReport = JSON.parse(a.stdout) as { status: string; output: string };
      expect(aReport.status, a.stdout + a.stderr).toBe("completed");
      expect(aReport.output).toContain("Hello over ACP.");
      console.log(`acp/${preset}: 5a after ${Date.now() - t0} ms`);

      const b = gcBackground(city, ["run", "agent", "Please make acp-file now.", "--json"]);
      await until(
        "the permission request as the pending interaction",
        async () => {
          const r = await city.gc(["status", "--json"]);
          const row = (
            JSON.parse(r.stdout) as { sessions: { name: string; interaction?: { options: string[] } }[] }
          ).sessions.find((s) => s.name === "agent");
          return (row?.interaction?.options.length ?? 0) > 0;
        },
        120_000,
      );
      const answered = await city.gc(["session", "respond", "agent", "approve"]);
      expect(answered.code, answered.stdout + answered.stderr).toBe(0);
      const bDone = await b;
      const bReport = JSON.parse(bDone.stdout) as { status: string; output: string };
      expect(bReport.status, bDone.stdout + bDone.stderr).toBe("completed");
      expect(existsSync(join(work, "acp-file"))).toBe(true);
      console.log(`acp/${preset}: 5b after ${Date.now() - t0} ms`);
    },
  );
});
