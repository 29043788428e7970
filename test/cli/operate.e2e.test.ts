/**
 * End-to-end: the built `gc` operating real interactive programs (`python3 -i`, a small
 * approval-menu agent) — run (completed, cancelled by SIGINT, timeout, continuing the same
 * session), the per-session lock, exec with persistent cd/export, nudge delivery modes and
 * the queue, wait with observer cursors, session list/kill/restart/reset/logs, and pending
 * interactions with the approval policy. On tmux and on subprocess where the provider can.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { GC_BIN, type GcResult, makeCity, type TestCity, until } from "../support/city.js";
import { has } from "../support/needs.js";

const hasTmux = has("tmux");
const hasPython = spawnSync("python3", ["-c", "pass"]).status === 0;
const APPROVAL_AGENT = fileURLToPath(new URL("./fixtures/approval-agent.py", import.meta.url));

function pyCity(provider: string, extra = ""): string {
  return `workspace:
  name: @NAME@
session:
  provider: ${provider}
${extra}daemon:
  interval: 1h
agents:
  - name: py
    provider: python
`;
}

/** Starts `gc --city DIR ...args` in the background; `done` resolves with its output. */
function spawnGc(city: TestCity, args: string[]): { child: ChildProcess; done: Promise<GcResult> } {
  const child = spawn(process.execPath, [GC_BIN, "--city", city.dir, ...args], {
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<GcResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done };
}

const json = <T = Record<string, unknown>>(r: GcResult): T => {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
};

async function started(city: TestCity): Promise<void> {
  const r = await city.gc(["start", "--once"]);
  if (r.code !== 0) throw new Error(`gc start --once failed: ${r.stdout}\n${r.stderr}`);
}

const peek = async (city: TestCity, name = "py") => (await city.gc(["peek", name, "-n", "0"])).stdout;

const PROVIDERS = [
  { name: "tmux", available: hasTmux },
  { name: "subprocess", available: true },
] as const;

for (const provider of PROVIDERS) {
  describe.skipIf(!provider.available || !hasPython)(
    `operating sessions on ${provider.name}`,
    { timeout: 120_000 },
    () => {
      it("run: completes with the answer; SIGINT cancels a long turn and the REPL lives on", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        const r1 = await city.gc(["run", "py", "print(6*7)", "--json"]);
        expect(r1.code).toBe(0);
        const rep1 = json<{ status: string; output: string; durationMs: number }>(r1);
        expect(rep1.status).toBe("completed");
        expect(rep1.output.split("\n")).toContain("42");
        expect(rep1.durationMs).toBeGreaterThanOrEqual(0);

        const long = spawnGc(city, ["run", "py", "import time; time.sleep(60)", "--json"]);
        await until("the long turn to start", async () => (await peek(city)).includes("time.sleep(60)"));
        long.child.kill("SIGINT");
        const r2 = await long.done;
        expect(r2.code).toBe(130);
        const rep2 = json<{ status: string; output: string }>(r2);
        expect(rep2.status).toBe("cancelled");
        expect(rep2.output).toContain("KeyboardInterrupt");

        // The REPL survived and the next run continues the same session.
        const r3 = await city.gc(["run", "py", "print(1+1)", "--json"]);
        expect(json<{ status: string; output: string }>(r3)).toMatchObject({ status: "completed" });
        expect(json<{ output: string }>(r3).output.split("\n")).toContain("2");
        expect((await city.gc(["run", "py", "x = 41"])).code).toBe(0);
        const r4 = await city.gc(["run", "py", "print(x + 1)", "--json"]);
        expect(json<{ output: string }>(r4).output.split("\n")).toContain("42");
      });

      it("run: a bash agent with no declared prompt: the turn ends at its prompt, even a changed one", async () => {
        const city = makeCity(pyCity(provider.name).replace("provider: python", "provider: bash"));
        await started(city);
        const r1 = json<{ status: string; output: string }>(
          await city.gc(["run", "py", "echo one; sleep 1; echo two", "--json"]),
        );
        expect(r1.status).toBe("completed");
        expect(r1.output.split("\n")).toEqual(expect.arrayContaining(["one", "two"]));
        expect((await city.gc(["run", "py", "cd /tmp; PS1='in-tmp$ '"])).code).toBe(0);
        const r2 = json<{ status: string; output: string }>(
          await city.gc(["run", "py", "sleep 1; echo three", "--json"]),
        );
        expect(r2).toMatchObject({ status: "completed" });
        expect(r2.output.split("\n")).toContain("three");
      });

      it("run: --timeout interrupts the agent and reports timeout with the partial output", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        const r = await city.gc([
          "run",
          "py",
          "print('partial'); import time; time.sleep(60)",
          "--timeout",
          "1s",
          "--json",
        ]);
        expect(r.code).toBe(4);
        const rep = json<{ status: string; output: string }>(r);
        expect(rep.status).toBe("timeout");
        expect(rep.output.split("\n")).toContain("partial");
        expect(json<{ status: string }>(await city.gc(["run", "py", "print(3)", "--json"])).status).toBe(
          "completed",
        );
      });

      it("run: two concurrent runs on one session: exactly one runs, the other is refused", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        const turn = (tag: string) =>
          spawnGc(city, ["run", "py", `import time; time.sleep(60); print('${tag}-done')`, "--json"]);
        const a = turn("A");
        const b = turn("B");
        // The loser is refused at once; the winner cannot finish before its 60 s sleep.
        const first = await Promise.race([a.done.then(() => a), b.done.then(() => b)]);
        const winner = first === a ? b : a;
        const lost = await first.done;
        expect(lost.code).toBe(1);
        const rep = json<{ status: string; reason: string }>(lost);
        expect(rep.status).toBe("error");
        expect(rep.reason).toMatch(/busy: locked by pid \d+ \(gc run\)/);
        expect(rep.reason).toContain(`pid ${winner.child.pid}`);
        const list = json<{ sessions: { name: string; lockedBy: { purpose: string } | null }[] }>(
          await city.gc(["session", "list", "--json"]),
        );
        expect(list.sessions.find((s) => s.name === "py")?.lockedBy?.purpose).toBe("gc run");
        await until("the winner's turn to start", async () =>
          (await peek(city)).includes("time.sleep(60); print("),
        );
        winner.child.kill("SIGINT");
        expect(json<{ status: string }>(await winner.done).status).toBe("cancelled");
        const screen = await peek(city);
        const ran = ["A", "B"].filter((t) => screen.includes(`time.sleep(60); print('${t}-done')`));
        expect(ran).toHaveLength(1);
      });

      it("exec: cd and export persist, the exit code passes through, stdout and stderr stay apart", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        expect((await city.gc(["exec", "py", "--", "cd", "/tmp"])).code).toBe(0);
        expect((await city.gc(["exec", "py", "--", "pwd"])).stdout).toBe("/tmp\n");
        expect((await city.gc(["exec", "py", "--", "export", "X=1"])).code).toBe(0);
        expect((await city.gc(["exec", "py", "--", "sh", "-c", "echo $X"])).stdout).toBe("1\n");
        expect((await city.gc(["exec", "py", "--", "false"])).code).toBe(1);
        // Flags where the usage line puts them, after SESSION: --timeout bounds the command.
        const bounded = await city.gc(["exec", "py", "--timeout", "1s", "--raw", "--", "sleep", "30"]);
        expect(bounded.code, bounded.stderr).toBe(125);
        expect(bounded.stderr).toMatch(/1s|timed out|timeout/);
        const both = await city.gc(["exec", "py", "--", "sh", "-c", "echo out; echo err >&2; exit 7"]);
        expect(both).toEqual({ code: 7, stdout: "out\n", stderr: "err\n" });
        const hostile = "a'b\"c $(touch pwned) `x` ; | &";
        expect((await city.gc(["exec", "py", "--", "printf", "%s", hostile])).stdout).toBe(hostile);
        // A restarted session starts with a fresh shell state.
        expect((await city.gc(["session", "restart", "py"])).code).toBe(0);
        expect((await city.gc(["exec", "py", "--", "pwd"])).stdout).not.toBe("/tmp\n");
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
        expect((await city.gc(["exec", "py", "--", "sh", "-c", "echo ${X-unset}"])).stdout).toBe("unset\n");
      });

      it("nudge: waits for idle and confirms; refuses a busy session; the controller delivers the queue", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        expect((await city.gc(["nudge", "py", "print('n' + '1')"])).stdout).toContain("nudged py");
        await until("the nudge ran", async () => (await peek(city)).includes("\nn1"));
        expect((await city.gc(["nudge", "py", "--now", "import time; time.sleep(60)"])).code).toBe(0);
        const busy = await city.gc(["nudge", "py", "print(2)", "--wait", "500ms"]);
        expect(busy.code).toBe(1);
        expect(busy.stderr).toMatch(/not delivered: session py did not become idle/);
        // Under --json the report is the JSON alone (exit 1 still says it was not delivered).
        const busyJson = await city.gc(["nudge", "py", "print(2)", "--wait", "500ms", "--json"]);
        expect({ code: busyJson.code, stderr: busyJson.stderr }).toEqual({ code: 1, stderr: "" });
        expect(json(busyJson)).toMatchObject({ session: "py", delivered: false });
        expect((await city.gc(["session", "restart", "py"])).code).toBe(0);

        expect((await city.gc(["start"])).code).toBe(0);
        const q = await city.gc(["nudge", "py", "--queue", "print('q' + 'ok')"]);
        expect(q.code).toBe(0);
        expect(q.stdout).toMatch(/queued nudge #\d+ for py/);
        const dead = await city.gc(["nudge", "py", "--queue", "--ttl", "1ms", "print('never')"]);
        expect(dead.code).toBe(0);
        await until("the queued nudge delivered", async () => {
          await city.gc(["reconcile"]);
          return (await peek(city)).includes("\nqok");
        });
        const all = json<{
          nudges: { state: string; attempts: number; deadReason: string | null; text: string }[];
        }>(await city.gc(["nudge", "list", "--all", "--json"]));
        expect(all.nudges.find((n) => n.text.includes("'ok'"))).toMatchObject({
          state: "delivered",
          attempts: 1,
        });
        expect(all.nudges.find((n) => n.text.includes("never"))).toMatchObject({
          state: "dead",
          deadReason: expect.stringMatching(/^expired \(ttl\)/),
        });
        expect((await peek(city)).includes("never")).toBe(false);
        const listing = await city.gc(["nudge", "list"]);
        expect(listing.stdout).toContain("expired (ttl)");
        expect(listing.stdout).not.toContain("'ok'");
      });

      it("wait: output since this observer's last look; --match; still_working and terminated exit codes", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        await city.gc(["wait", "py", "--idle"]); // default observer: catch up
        expect((await city.gc(["run", "py", "print('w' * 3)"])).code).toBe(0);
        const w1 = json<{ status: string; output: string; cursor: number; waitId: number }>(
          await city.gc(["wait", "py", "--idle", "--json"]),
        );
        expect(w1.status).toBe("completed");
        expect(w1.output.split("\n")).toContain("www");
        // Nothing new since: the same observer sees no output; another observer sees all.
        const w2 = json<{ output: string; cursor: number }>(
          await city.gc(["wait", "py", "--idle", "--json"]),
        );
        expect(w2.output).toBe("");
        expect(w2.cursor).toBe(w1.cursor);
        const other = json<{ output: string }>(
          await city.gc(["wait", "py", "--idle", "--observer", "other", "--json"]),
        );
        expect(other.output.split("\n")).toContain("www");

        expect((await city.gc(["nudge", "py", "--now", "import time; time.sleep(60)"])).code).toBe(0);
        const still = await city.gc(["wait", "py", "--idle", "--timeout", "500ms", "--json"]);
        expect(still.code).toBe(4);
        expect(json(still)).toMatchObject({ status: "still_working" });
        const waiter = spawnGc(city, ["wait", "py", "--match", "^m[0-9]+$", "--json"]);
        // A busy session killed under an idle wait has ended for it, never "completed".
        const idleWaiter = spawnGc(city, ["wait", "py", "--idle", "--timeout", "60s", "--json"]);
        await until("the match and idle waits to be recorded", async () => {
          const ws = json<{ waits: { kind: string }[] }>(await city.gc(["wait", "list", "--json"]));
          return ws.waits.some((w) => w.kind === "match") && ws.waits.some((w) => w.kind === "idle");
        });
        await city.gc(["session", "kill", "py"]);
        for (const w of [waiter, idleWaiter]) {
          const term = await w.done;
          expect(term.code, `${term.stdout}\n${term.stderr}`).toBe(5);
          expect(json(term)).toMatchObject({ status: "terminated", reason: "the session ended" });
        }
        // A wait on a session that is already down never saw it end.
        const downWait = await city.gc(["wait", "py", "--idle", "--json"]);
        expect(downWait.code).toBe(5);
        expect(json(downWait)).toMatchObject({ status: "terminated", reason: "the session is not running" });

        const ws = json<{ waits: { kind: string; state: string }[] }>(
          await city.gc(["wait", "list", "--all", "--json"]),
        );
        expect(ws.waits.map((w) => w.state)).not.toContain("pending");
        expect(ws.waits.find((w) => w.state === "expired")).toBeDefined();
        const unknown = await city.gc(["wait", "pyy", "--idle"]);
        expect(unknown.code).toBe(3);
        expect(unknown.stderr).toContain("py");
        for (const cmd of ["wait", "nudge"]) {
          const listed = await city.gc([cmd, "list", "pyy"]);
          expect({ cmd, code: listed.code }).toEqual({ cmd, code: 3 });
          expect(listed.stderr).toContain(`did you mean "py"?`);
        }
      });

      it.skipIf(provider.name !== "subprocess")(
        "wait --state: a session not started yet is waited on until it runs, not ended at once",
        async () => {
          const city = makeCity(pyCity(provider.name));
          const waiter = spawnGc(city, ["wait", "py", "--state", "running", "--timeout", "90s", "--json"]);
          await until("the state wait to be recorded", async () => {
            const ws = json<{ waits: { kind: string }[] }>(await city.gc(["wait", "list", "--json"]));
            return ws.waits.some((w) => w.kind === "state");
          });
          await started(city);
          const r = await waiter.done;
          expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
          expect(json(r)).toMatchObject({ status: "completed", state: "running" });
        },
      );

      it("session: list, kill, reset after gc stop, logs; restart clears the hold", async () => {
        const city = makeCity(pyCity(provider.name));
        await started(city);
        type Row = { name: string; state: string; running: boolean; generation: number; held: string | null };
        const rows = async () =>
          json<{ sessions: Row[] }>(await city.gc(["session", "list", "--json"])).sessions;
        expect((await rows())[0]).toMatchObject({
          name: "py",
          state: "running",
          running: true,
          generation: 1,
        });

        const k = await city.gc(["session", "kill", "py", "--json"]);
        expect(json(k)).toMatchObject({ killed: true, wasRunning: true });
        expect((await rows())[0]).toMatchObject({ state: "stopped", running: false });
        expect((await city.gc(["reconcile"])).code).toBe(0);
        expect((await rows())[0]).toMatchObject({ state: "running", running: true, generation: 2 });

        expect((await city.gc(["stop", "py"])).code).toBe(0);
        expect((await rows())[0]).toMatchObject({ state: "suspended", running: false });
        expect((await rows())[0]?.held).toMatch(/stopped by operator/);
        // gc status says it is held, and what starts it, in the table's notes and as JSON.
        const st = await city.gc(["status"]);
        expect(st.stdout).toMatch(/^ {2}py: suspended — stopped by operator at /m);
        expect(st.stdout).toContain("held: gc session restart py starts it");
        const stJson = json<{ sessions: { held: string | null }[] }>(await city.gc(["status", "--json"]));
        expect(stJson.sessions[0]?.held).toMatch(/stopped by operator/);
        expect((await city.gc(["session", "reset", "py"])).code).toBe(0);
        expect((await rows())[0]).toMatchObject({ state: "running", running: true, held: null });

        expect((await city.gc(["stop", "py"])).code).toBe(0);
        const rs = await city.gc(["session", "restart", "py", "--json"]);
        expect(rs.code).toBe(0);
        expect(json(rs)).toMatchObject({ restarted: true, state: "running" });

        expect((await city.gc(["run", "py", "print('logged')"])).code).toBe(0);
        expect((await city.gc(["session", "logs", "py"])).stdout.split("\n")).toContain("logged");
        // Following ends with Ctrl-C, like every interrupted gc command: 130.
        const follower = spawnGc(city, ["session", "logs", "py", "-f"]);
        let followed = "";
        follower.child.stdout?.on("data", (d: string) => (followed += d));
        await until("the followed log to print", () => followed.includes("logged"));
        follower.child.kill("SIGINT");
        expect((await follower.done).code).toBe(130);
        const ev = json<{ events: { type: string }[] }>(
          await city.gc(["session", "logs", "py", "--events", "--json"]),
        );
        const types = ev.events.map((e) => e.type);
        expect(types).toEqual(expect.arrayContaining(["session.killed", "session.reset", "run.finished"]));
        expect((await city.gc(["session", "bogus"])).code).toBe(2);
        const attach = await city.gc(["attach", "py"]);
        expect(attach.code).toBe(1);
        expect(attach.stderr).toContain("needs a terminal");
        // Failures of these commands are reported like every other: JSON on stderr under --json.
        const notWaiting = await city.gc(["--json", "session", "respond", "py", "approve"]);
        expect({ code: notWaiting.code, stdout: notWaiting.stdout }).toEqual({ code: 1, stdout: "" });
        expect(JSON.parse(notWaiting.stderr)).toMatchObject({ error: { message: expect.any(String) } });
        expect((await city.gc(["stop", "py"])).code).toBe(0);
        const gone = await city.gc(["--json", "session", "logs", "py"]);
        expect(gone.code).toBe(1);
        expect(JSON.parse(gone.stderr)).toMatchObject({
          error: { code: "GC_NOT_RUNNING", message: expect.stringContaining("its output is gone with it") },
        });
      });
    },
  );
}

describe.skipIf(!hasTmux || !hasPython)("pending interactions on tmux", { timeout: 120_000 }, () => {
  const agentCity = (policy: string) => `workspace:
  name: @NAME@
session:
  provider: tmux
${policy}daemon:
  interval: 1h
agents:
  - name: agent
    start_command: ${JSON.stringify(`python3 -u ${APPROVAL_AGENT}`)}
    ready_prompt_prefix: "agent> "
`;

  it("beside a running controller, status shows waiting-for-input from the controller's look at the screen", async () => {
    const city = makeCity(agentCity("  approval: ask\n"));
    expect((await city.gc(["start"])).code).toBe(0);
    type Row = { name: string; state: string; running: boolean; reason: string };
    await until("agent running", async () => {
      const st = json<{ sessions: Row[] }>(await city.gc(["status", "--json"]));
      return st.sessions.find((s) => s.name === "agent")?.running;
    });
    expect((await city.gc(["nudge", "agent", "--now", "edit"])).code).toBe(0);
    const row = await until("waiting-for-input", async () => {
      const st = json<{ controller: { running: boolean }; sessions: Row[] }>(
        await city.gc(["status", "--json"]),
      );
      const r = st.controller.running && st.sessions.find((s) => s.name === "agent");
      return r && r.state === "waiting-for-input" && r;
    });
    expect(row.reason).toContain("Do you want to make this edit to notes.txt?");
    expect((await city.gc(["session", "respond", "agent", "deny"])).code).toBe(0);
    await until("answered: not waiting any more", async () => {
      const st = json<{ sessions: Row[] }>(await city.gc(["status", "--json"]));
      return st.sessions.find((s) => s.name === "agent")?.state === "running";
    });
  });

  it("status shows waiting-for-input with the prompt; gc session respond answers it", async () => {
    const city = makeCity(agentCity("  approval: ask\n"));
    await started(city);
    expect((await city.gc(["nudge", "agent", "--now", "edit"])).code).toBe(0);
    type Row = { name: string; state: string; reason: string };
    const row = await until("waiting-for-input", async () => {
      const st = json<{ sessions: Row[] }>(await city.gc(["status", "--json"]));
      const r = st.sessions.find((s) => s.name === "agent");
      return r?.state === "waiting-for-input" && r;
    });
    expect(row.reason).toContain("Do you want to make this edit to notes.txt?");
    // A nudge would answer the menu: the default mode refuses.
    const n = await city.gc(["nudge", "agent", "hello", "--wait", "500ms"]);
    expect(n.code).toBe(1);
    expect(n.stderr).toContain("waiting for input");
    const r = await city.gc(["session", "respond", "agent", "deny"]);
    expect(r.code).toBe(0);
    await until("the answer", async () => (await peek(city, "agent")).includes("answer: No"));
    const ev = json<{ events: { type: string; payload: Record<string, unknown> }[] }>(
      await city.gc(["session", "logs", "agent", "--events", "--json"]),
    );
    expect(ev.events.find((e) => e.type === "interaction.responded")?.payload).toMatchObject({
      action: "deny",
      by: "operator",
    });
    expect((await city.gc(["session", "respond", "agent", "approve"])).code).toBe(1);
  });

  it("the controller answers by the approval policy (allow-all by default) and records the decision", async () => {
    const city = makeCity(agentCity(""));
    expect((await city.gc(["start"])).code).toBe(0);
    expect((await city.gc(["nudge", "agent", "--now", "edit"])).code).toBe(0);
    await until("the policy approved", async () => {
      await city.gc(["reconcile"]);
      return (await peek(city, "agent")).includes("answer: Yes");
    });
    const ev = json<{ events: { type: string; payload: Record<string, unknown> }[] }>(
      await city.gc(["session", "logs", "agent", "--events", "--json"]),
    );
    expect(ev.events.find((e) => e.type === "interaction.responded")?.payload).toMatchObject({
      action: "approve",
      by: "policy",
      rule: "allow-all",
    });
  });

  it("rules: a matching deny rule answers No", async () => {
    const city = makeCity(
      agentCity(
        '  approval:\n    rules:\n      - { match: "notes\\\\.txt", action: deny }\n    default: approve\n',
      ),
    );
    expect((await city.gc(["start"])).code).toBe(0);
    expect((await city.gc(["nudge", "agent", "--now", "edit"])).code).toBe(0);
    await until("the policy denied", async () => {
      await city.gc(["reconcile"]);
      return (await peek(city, "agent")).includes("answer: No");
    });
  });
});

describe.skipIf(!hasTmux)("gc peek of a session whose program ended", { timeout: 60_000 }, () => {
  it("prints the last screen tmux kept, exits 1 and says the next pass restarts it", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: brief
    start_command: "echo last-words; sleep 1; exit 3"
`);
    expect((await city.gc(["start", "--once"])).code).toBe(0);
    const r = await until("the program to end", async () => {
      const p = await city.gc(["peek", "brief"]);
      return p.code !== 0 && p;
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("last-words");
    expect(r.stderr).toContain(
      'session "brief" is not running (state: running); its last screen is above; its program ended since the last pass',
    );
    const j = await city.gc(["peek", "brief", "--json"]);
    expect(j.code).toBe(1);
    expect(j.stdout).toBe("");
    expect(JSON.parse(j.stderr)).toMatchObject({ error: { code: "GC_NOT_RUNNING" } });
  });
});

describe.skipIf(!hasTmux)(
  "gc run interrupting an agent that puts the prompt back",
  { timeout: 90_000 },
  () => {
    it("clear_input_keys empties the input box after the interrupt: the next nudge is not typed after the old prompt", async () => {
      const agent = fileURLToPath(new URL("../fixtures/input-box-agent.cjs", import.meta.url));
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: box
    start_command: ${JSON.stringify(`exec ${JSON.stringify(process.execPath)} ${JSON.stringify(agent)}`)}
    ready_prompt_prefix: "❯ "
    clear_input_keys: [C-u]
`);
      expect((await city.gc(["start", "--once"])).code).toBe(0);
      const run = await city.gc(["run", "box", "alpha", "--timeout", "3s"]);
      expect(run.code, run.stderr).toBe(4);
      expect(run.stderr).toContain("the agent was interrupted");
      expect((await city.gc(["nudge", "box", "beta"])).code).toBe(0);
      const submitted = () => readFileSync(join(city.dir, "submitted.out"), "utf8");
      await until("the nudge submitted", async () => submitted().split("\n").length > 2);
      expect(submitted()).toBe("alpha\nbeta\n");
    });
  },
);
