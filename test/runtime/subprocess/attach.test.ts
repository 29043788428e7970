import type { IPty } from "@lydell/node-pty";
import pty from "@lydell/node-pty";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { attachChildArgs } from "../../support/attach.js";
import { makeCity, type TestCity, until } from "./helpers.js";

interface Terminal {
  readonly term: IPty;
  output(): string;
  exited: Promise<number>;
}

describe("subprocess attach", () => {
  let city: TestCity;
  const terminals: IPty[] = [];

  beforeAll(async () => {
    city = await makeCity();
    await city.provider.start("att", await city.config("PS1='ATTACH> ' exec sh -i"));
  });
  afterEach(() => {
    for (const t of terminals.splice(0)) t.kill("SIGKILL");
  });
  afterAll(async () => {
    await city?.cleanup();
  });

  /** Runs `gc attach` (the shared attach child) in a real pty of `cols`×`rows`, as a user's terminal would. */
  function openTerminal(detachKeys: string, cols = 100, rows = 30): Terminal {
    const term = pty.spawn(
      process.execPath,
      attachChildArgs({
        provider: "subprocess",
        city: city.city,
        cityDir: city.stateDir,
        session: "att",
        settings: { detach_keys: detachKeys },
      }),
      { cols, rows, cwd: city.root, env: { ...process.env, NODE_OPTIONS: "" } },
    );
    terminals.push(term);
    let out = "";
    term.onData((d) => {
      out += d;
    });
    const exited = new Promise<number>((resolve) => term.onExit((e) => resolve(e.exitCode)));
    return { term, output: () => out, exited };
  }

  it("attach: shows the screen, passes keys and resizes through, detaches with Ctrl-\\ and the session lives on", async () => {
    const t = openTerminal("both");
    await until("the session's prompt in the attached terminal", () => t.output().includes("ATTACH>"));
    expect(await city.provider.isAttached("att")).toBe(true);

    t.term.write("stty size\r");
    await until("the pty size", () => t.output().includes("30 100"));
    t.term.resize(120, 40);
    await until("the resize to reach the session", async () => {
      t.term.write("stty size\r");
      await new Promise((r) => setTimeout(r, 100));
      return t.output().includes("40 120");
    });

    t.term.write("\x1c");
    expect(await t.exited).toBe(0);
    expect(t.output()).toContain("GC-ATTACH-RETURNED");
    expect(await city.provider.isAttached("att")).toBe(false);
    expect(await city.provider.isRunning("att")).toBe(true);
    expect(await city.provider.peek("att", 0)).toContain("40 120");
  });

  it("attach: Ctrl-b d detaches too, and Ctrl-b Ctrl-b types one Ctrl-b", async () => {
    const t = openTerminal("C-b d");
    await until("the prompt", () => t.output().includes("ATTACH>"));
    // In the shell, Ctrl-b is a plain character: `printf` shows its octal code.
    t.term.write("printf '%s' \x02\x02 | od -An -c\r");
    await until("the byte dump", () => /002/.test(t.output()));
    expect(t.output()).not.toMatch(/002 +002/);
    // Ctrl-\ is not a detach key in this mode: it reaches the shell (which ignores SIGQUIT).
    t.term.write("\x1c");
    t.term.write("echo still-here\r");
    await until("the echo", () => /\nstill-here\r/.test(t.output()));
    expect(await city.provider.isAttached("att")).toBe(true);
    t.term.write("\x02d");
    expect(await t.exited).toBe(0);
    expect(t.output()).toContain("GC-ATTACH-RETURNED");
    expect(await city.provider.isRunning("att")).toBe(true);
  });
});
