/**
 * End-to-end: `session.setup_timeout` bounds each hook of a start. A session whose
 * session_setup hangs fails its own start (GC_HOOK_FAILED naming setup_timeout, nothing
 * left running) while the other sessions of the same pass start normally.
 * `session.startup_timeout` bounds a whole start the same way (GC_TIMEOUT). A ready prompt
 * that never appears ends its wait (within the start's deadline) and the start goes on, and
 * says so: in gc start's output and as a `session.ready-unconfirmed` event. A startup dialog
 * gc answers is said and recorded the same way (`session.dialog-answered`).
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";
import { has } from "../support/needs.js";

const hasTmux = has("tmux");

describe.skipIf(!hasTmux)("start deadlines on tmux", { timeout: 120_000 }, () => {
  it("session.setup_timeout: a hung session_setup fails that start after the hook's deadline; the others of the pass start", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
  setup_timeout: 2s
daemon:
  interval: 1h
agents:
  - name: hung
    start_command: "exec sleep 100000"
    session_setup: ["sleep 1000"]
  - name: ok1
    start_command: "exec sleep 100000"
  - name: ok2
    start_command: "exec sleep 100000"
    session_setup: ["true"]
`);
    const r = await city.gc(["start", "--once", "--json"]);
    expect(r.code).toBe(1); // an action failed
    const out = JSON.parse(r.stdout) as {
      summary: { failed: { name: string; action: string; error: string }[] };
    };
    expect(out.summary.failed.map((f) => f.name)).toEqual(["hung"]);
    expect(out.summary.failed[0]?.error).toMatch(
      /session_setup failed: "sleep 1000": did not finish within setup_timeout \(2000 ms\)/,
    );
    const st = JSON.parse((await city.gc(["status", "--json"])).stdout) as {
      sessions: { name: string; running: boolean }[];
    };
    const running = Object.fromEntries(st.sessions.map((s) => [s.name, s.running]));
    expect(running).toEqual({ hung: false, ok1: true, ok2: true });
    // Nothing of the failed start is left on the city's tmux server.
    expect(city.tmux("has-session", "-t", "=hung").code).not.toBe(0);
  });

  it("session.startup_timeout: a start past it fails with GC_TIMEOUT and leaves nothing; the others of the pass start", async () => {
    // setup_timeout is far longer than startup_timeout: only the whole start's deadline can end it.
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
  startup_timeout: 2s
  setup_timeout: 10m
daemon:
  interval: 1h
agents:
  - name: slow
    start_command: "exec sleep 100000"
    session_setup: ["sleep 1000"]
  - name: ok1
    start_command: "exec sleep 100000"
`);
    const r = await city.gc(["start", "--once", "--json"]);
    expect(r.code).toBe(1); // an action failed
    const out = JSON.parse(r.stdout) as {
      summary: { failed: { name: string; action: string; error: string }[] };
    };
    expect(out.summary.failed.map((f) => f.name)).toEqual(["slow"]);
    expect(out.summary.failed[0]?.error).toMatch(/start of "slow".*timed out after 2000 ms/);
    const st = JSON.parse((await city.gc(["status", "--json"])).stdout) as {
      sessions: { name: string; running: boolean }[];
    };
    const running = Object.fromEntries(st.sessions.map((s) => [s.name, s.running]));
    expect(running).toEqual({ slow: false, ok1: true });
    expect(city.tmux("has-session", "-t", "=slow").code).not.toBe(0);
  });

  it("a ready prompt that never appears: the start goes on when its wait runs out, and says so", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
  startup_timeout: 4s
daemon:
  interval: 1h
agents:
  - name: quiet
    start_command: "printf 'loading...'; exec sleep 100000"
    ready_prompt_prefix: "NEVER> "
  - name: prompt
    start_command: "printf 'READY> '; exec sleep 100000"
    ready_prompt_prefix: "READY> "
`);
    const r = await city.gc(["start", "--once"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      / quiet ok \(new session; ready prompt "NEVER> " not seen within \d+ s; went on\)$/m,
    );
    expect(r.stdout).toMatch(/ prompt ok \(new session\)$/m);
    const events = async (name: string) =>
      (
        JSON.parse((await city.gc(["session", "logs", name, "--events", "--json"])).stdout) as {
          events: { type: string; payload: Record<string, unknown> }[];
        }
      ).events.filter((e) => e.type === "session.ready-unconfirmed");
    expect((await events("quiet")).map((e) => e.payload)).toEqual([
      { detail: expect.stringMatching(/^ready prompt "NEVER> " not seen within \d+ s; went on$/) },
    ]);
    expect(await events("prompt")).toEqual([]);
  });

  it("a startup dialog gc answers is said in the start's line and recorded as an event", async () => {
    const menu = fileURLToPath(new URL("../fixtures/menu-agent.cjs", import.meta.url));
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: menu
    start_command: ${JSON.stringify(`exec ${JSON.stringify(process.execPath)} ${JSON.stringify(menu)}`)}
    ready_prompt_prefix: "ready> "
    env:
      MENU_Q: "Do you trust the files in this folder?"
      MENU_OPTS: "Yes, proceed|No, exit"
      MENU_SEL: "1"
      AFTER: "ready> "
`);
    const r = await city.gc(["start", "--once"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/ menu ok \(new session; answered trust-folder: "Yes, proceed"\)$/m);
    const events = JSON.parse((await city.gc(["session", "logs", "menu", "--events", "--json"])).stdout) as {
      events: { type: string; payload: Record<string, unknown> }[];
    };
    expect(events.events.filter((e) => e.type === "session.dialog-answered").map((e) => e.payload)).toEqual([
      { dialog: "trust-folder", chose: "Yes, proceed" },
    ]);
  });
});
