/**
 * One view of drift (docs/operating.md "gc drift"): beside a running controller, `gc drift`
 * and the dashboard's drift show the controller's resolution of the city (what it acts on),
 * and name the sessions the caller's environment resolves differently, never the values.
 * Without a controller, they resolve in the caller's environment as before.
 */
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { getJson, startDashboard } from "../dashboard/support.js";
import { makeCity } from "../support/city.js";

const A = "val-one-7c1e";
const B = "val-two-9d2f";
const YAML = `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
    env:
      GREETING: "\${DRIFT_VAR}"
  - name: b
    start_command: "exec sleep 100000"
`;

interface Entry {
  session: string;
  drift: string;
  view?: string;
  callerEnvDiffers?: boolean;
}

describe.skipIf(!existsSync("/usr/bin/tmux"))("gc drift: whose view", { timeout: 180_000 }, () => {
  it("beside a controller: the controller's view, and a note naming the sessions this environment resolves differently", async () => {
    const city = makeCity(YAML);
    expect((await city.gc(["start"], { env: { DRIFT_VAR: A } })).code).toBe(0);

    const text = await city.gc(["drift"], { env: { DRIFT_VAR: B } });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("a: in sync");
    expect(text.stdout).toContain("b: in sync");
    expect(text.stdout).not.toContain("core drift");
    const notes = text.stdout.split("\n").filter((l) => l.includes("your environment"));
    expect(notes).toEqual([
      "note: your environment resolves the city differently from the running controller for a; drift shown is the controller's (what it acts on)",
    ]);
    const json = await city.gc(["drift", "--json"], { env: { DRIFT_VAR: B } });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout) as Entry[]).toMatchObject([
      { session: "a", drift: "none", view: "controller", callerEnvDiffers: true },
      { session: "b", drift: "none", view: "controller", callerEnvDiffers: false },
    ]);
    expect(json.stderr).toContain("your environment resolves the city differently");
    for (const out of [text.stdout, text.stderr, json.stdout, json.stderr]) {
      expect(out).not.toContain(A);
      expect(out).not.toContain(B);
    }
    // The controller's own environment: nothing differs, no note.
    const same = await city.gc(["drift"], { env: { DRIFT_VAR: A } });
    expect(same.stdout).toContain("a: in sync");
    expect(same.stdout).not.toContain("your environment");

    // The dashboard (its environment: DRIFT_VAR=b) shows the same view.
    const d = await startDashboard(city, ["--interval", "1h"], { DRIFT_VAR: B });
    const detail = await getJson<{ drift: Entry }>(d, "/api/sessions/a");
    expect(detail.drift).toMatchObject({ drift: "none", view: "controller", callerEnvDiffers: true });
    expect(JSON.stringify(detail)).not.toContain(B);
  });

  it("without a controller: drift is resolved in the caller's environment, as before", async () => {
    const city = makeCity(YAML);
    expect((await city.gc(["start", "--once"], { env: { DRIFT_VAR: A } })).code).toBe(0);

    const text = await city.gc(["drift"], { env: { DRIFT_VAR: B } });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("a: core drift (restart)");
    expect(text.stdout).not.toContain("your environment");
    const json = await city.gc(["drift", "--json"], { env: { DRIFT_VAR: B } });
    expect(JSON.parse(json.stdout) as Entry[]).toMatchObject([
      { session: "a", drift: "core", view: "local", callerEnvDiffers: false },
      { session: "b", drift: "none", view: "local", callerEnvDiffers: false },
    ]);

    const d = await startDashboard(city, ["--interval", "1h"], { DRIFT_VAR: B });
    const detail = await getJson<{ drift: Entry }>(d, "/api/sessions/a");
    expect(detail.drift).toMatchObject({ drift: "core", view: "local", callerEnvDiffers: false });
  });
});
