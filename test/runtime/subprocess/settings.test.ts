/**
 * `session.subprocess`: every documented key (docs/subprocess.md "Settings") is accepted by
 * the city file's schema, a bad value is refused with its path, and the keys reach a real
 * session through `createProvider` — the pty size, the scrollback kept, the readiness wait.
 * (`detach_keys`: attach.test.ts; `log_max_bytes`, `ring_bytes`: holder-protocol.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HolderDir, makeHolderDir } from "../../../conformance/holder-dir.js";
import { createProvider, type SubprocessProvider } from "../../../internal/runtime/subprocess/index.js";
import { issues } from "../../config/helpers.js";

const CITY = (section: string) =>
  `workspace: { name: t }\nsession:\n  provider: subprocess\n  subprocess:\n${section}\nagents:\n  - name: a\n    start_command: cat\n`;

describe("session.subprocess in the city file", () => {
  it("accepts every documented key", () => {
    const all = [
      "    cols: 120",
      "    rows: 40",
      "    scrollback: 2000",
      "    log_max_bytes: 1048576",
      "    ring_bytes: 65536",
      "    ready_timeout_ms: 30000",
      "    dialog_timeout_ms: 5000",
      '    detach_keys: "C-b d"',
    ].join("\n");
    expect(issues(CITY(all))).toEqual([]);
  });

  it("refuses a bad value with its path, and an unknown key", () => {
    expect(issues(CITY("    cols: 0")).join("\n")).toMatch(/session\.subprocess\.cols/);
    expect(issues(CITY('    detach_keys: "C-a"')).join("\n")).toMatch(/session\.subprocess\.detach_keys/);
    expect(issues(CITY("    colums: 80")).join("\n")).toMatch(/colums/);
  });
});

describe("session.subprocess settings reach a real session", () => {
  let dir: HolderDir;
  let provider: SubprocessProvider;

  beforeAll(async () => {
    dir = await makeHolderDir("gc-spset-");
    provider = createProvider({
      city: "settings-city",
      cityDir: dir.root,
      stateDir: dir.stateDir,
      settings: { cols: 91, rows: 27, scrollback: 40, ready_timeout_ms: 300 },
    });
  });
  afterAll(async () => {
    await dir?.teardown([provider]);
  });

  it("cols and rows size the pty; scrollback bounds what peek 0 keeps", async () => {
    const workDir = await dir.workDir();
    await provider.start("size", { command: "seq 1 300; stty size; exec cat", workDir, env: {} });
    await expect.poll(() => provider.peek("size", 0)).toContain("27 91");
    const screen = await provider.peek("size", 0);
    expect(screen).toContain("27 91");
    const lines = screen.split("\n").filter((l) => l.trim() !== "");
    expect(lines.length).toBeLessThanOrEqual(40 + 27);
    expect(lines).not.toContain("1");
  });

  it("ready_timeout_ms ends the wait for a prompt that never comes (the start says so)", async () => {
    const workDir = await dir.workDir();
    const report = await provider.start("unready", {
      command: "exec cat",
      workDir,
      env: {},
      readyPromptPrefix: "never> ",
    });
    expect(report.unconfirmed).toMatch(/never> /);
  });
});
